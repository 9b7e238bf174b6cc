"""pytorch/pytorch test/export/test_draft_export.py, `TestDraftExport.test_offsets` (BSD-3-Clause):
a branch on `.item()` that raises; draft export reports the data-dependent guard."""

import torch


class M(torch.nn.Module):
    def forward(self, x):
        a = x.item()
        if a == 0:
            raise RuntimeError("bad")
        return x * a


def build_model():
    return M()


def example_inputs():
    return (torch.tensor(3),)
