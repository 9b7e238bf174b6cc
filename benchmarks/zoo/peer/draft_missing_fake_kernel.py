"""pytorch/pytorch test/export/test_draft_export.py, `TestDraftExport.test_missing_meta_kernel_impl`
(BSD-3-Clause): an operator defined with a CPU kernel and no fake (meta) kernel, called twice. The
test's `_scoped_library("mylib", ...)` is a module-level library here (namespace suffixed so it
cannot collide with another workspace's)."""

import torch

lib = torch.library.Library("mylib_peer", "FRAGMENT")
torch.library.define(
    "mylib_peer::foo",
    "(Tensor a, Tensor b) -> Tensor",
    tags=torch.Tag.pt2_compliant_tag,
    lib=lib,
)


@torch.library.impl("mylib_peer::foo", "cpu", lib=lib)
def foo_impl(a, b):
    return a + b


class M(torch.nn.Module):
    def forward(self, a, b):
        res = torch.ops.mylib_peer.foo(a, b)
        res = torch.ops.mylib_peer.foo(res, b)
        return res


def build_model():
    return M()


def example_inputs():
    return (torch.ones(3, 3), torch.ones(3, 3))
