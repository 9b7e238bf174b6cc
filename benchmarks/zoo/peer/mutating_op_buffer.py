"""pytorch/pytorch test/export/test_passes.py, `TestPasses.test_remove_auto_functionalized_pass`
(BSD-3-Clause): a custom op that mutates its second argument in place (`y.add_(1)`), called on a
registered buffer. The test's library namespace `DO_NOT_USE_TEST_ONLY` is kept with a suffix so the
definition cannot collide with another workspace's."""

import torch

lib = torch.library.Library("DO_NOT_USE_TEST_ONLY_PEER", "DEF")
lib.define("custom_mutator(Tensor x, Tensor(a!) y) -> Tensor")


@torch.library.impl(lib, "custom_mutator", "Meta")
def custom_mutator_meta(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.impl(lib, "custom_mutator", "CompositeExplicitAutograd")
def custom_mutator(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y.add_(1)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("state", torch.zeros(1))

    def forward(self, x):
        return torch.ops.DO_NOT_USE_TEST_ONLY_PEER.custom_mutator(x, self.state)


def build_model():
    return M()


def example_inputs():
    return (torch.randn([3, 3]),)
