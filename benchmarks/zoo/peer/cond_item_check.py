"""pytorch/pytorch test/export/test_passes.py,
`TestPasses.test_runtime_assert_inline_constraints_for_cond` (BSD-3-Clause; an expectedFailure there
for the runtime assertion it checks, not for the export): each torch.cond branch takes `.item()` of
its operand and bounds it with torch._check."""

import torch
from functorch.experimental.control_flow import cond


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred, x, y):
        def true_fn(x, y):
            b = x.item()
            torch._check(b >= 2)
            torch._check(b <= 5)
            return x - b

        def false_fn(x, y):
            c = y.item()
            torch._check(c >= 2)
            torch._check(c <= 5)
            return y - c

        ret = cond(pred, true_fn, false_fn, [x, y])
        return ret


def build_model():
    return M()


def example_inputs():
    return (torch.tensor(True), torch.tensor([2]), torch.tensor([5]))
