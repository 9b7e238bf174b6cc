"""pytorch/pytorch test/export/test_draft_export.py, `TestDraftExport.test_dedup_data_dependent_failure`
(BSD-3-Clause): the same data-dependent branch reached twice in a loop; draft export reports it once."""

import torch


class M(torch.nn.Module):
    def forward(self, x, y, z):
        res = 0
        for v in [x, y]:
            b = v.item()
            if b > 10:
                res += v * b
            else:
                res += v + b

        return z * res


def build_model():
    return M()


def example_inputs():
    return (torch.tensor(5), torch.tensor(3), torch.tensor(2))
