"""pytorch/pytorch test/export/test_export.py, `TestExport.test_cond_branches_return_constant_int`
(BSD-3-Clause): both torch.cond branches return a Python int (the test expects torch.export to
succeed)."""

import torch


class M(torch.nn.Module):
    def forward(self, x):
        idx = torch.cond(x.sum() > 3, lambda: 0, lambda: 1, tuple())
        return x[idx]


def build_model():
    return M()


def example_inputs():
    return (torch.randn(3, 3),)
