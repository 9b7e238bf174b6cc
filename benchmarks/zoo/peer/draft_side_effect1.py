"""pytorch/pytorch test/export/test_draft_export.py, `TestDraftExport.test_side_effect1`
(BSD-3-Clause): two branches on `.item()` of a buffer, the buffer mutated in between; draft export
reports both data-dependent guards."""

import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("a", torch.tensor(2))

    def forward(self, b):
        a_item = self.a.item()
        if a_item == 2:
            res = a_item * b
        else:
            res = (a_item + 1) * b

        self.a.add_(1)
        a_item = self.a.item()

        if a_item == 3:
            res = a_item * res
        else:
            res = (a_item + 1) * res
        return res


def build_model():
    return M()


def example_inputs():
    return (torch.ones(3, 3),)
