"""The problems behind the first one: where torch.export stops at the first
failure, torch.export.draft_export carries on, and each further problem it reports is a finding
of its own, on its line, marked as found past the first failure — also when it shares the
user's line with the first and only the library line differs.

Real code: kornia's rotation check (`rotation_matrix_to_quaternion(R, check_rotation=True)` ->
kornia/geometry/conversions.py `_check_is_rotation`, found by reading it) branches on the data
twice: `if not bool((ortho_err <= tol).all()):` and `if bool((torch.linalg.det(work) <= 0).any()):`.
torch stops at the first; patch it, and stock fails on the second.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (kornia)


def test_a_second_data_dependent_line_in_a_library_function_is_its_own_finding(tmp_path):
    source = write(tmp_path, "pose.py", '''
        import torch
        from torch import nn
        from kornia.geometry.conversions import rotation_matrix_to_quaternion


        class Pose(nn.Module):
            def forward(self, rotation):
                return rotation_matrix_to_quaternion(rotation, check_rotation=True)


        def inputs():
            angle = torch.tensor([0.3, 1.1])
            c, s = torch.cos(angle), torch.sin(angle)
            z, o = torch.zeros(2), torch.ones(2)
            rows = [torch.stack([c, -s, z], -1), torch.stack([s, c, z], -1), torch.stack([z, z, o], -1)]
            return (torch.stack(rows, -2),)
    ''')
    result = shared_pipeline().run(spec_for(tmp_path, "pose", "pose.py:Pose", "pose.py:inputs"))
    assert result.status == "failed"
    import kornia.geometry.conversions as conversions
    library = Path(conversions.__file__).resolve()
    first = line_of(library, "if not bool((ortho_err <= tol).all()):")
    second = line_of(library, "if bool((torch.linalg.det(work) <= 0).any()):")
    findings = [f for f in result.findings if f.code == "torch-export"]
    assert len(findings) == 2
    call = line_of(source, "return rotation_matrix_to_quaternion(rotation, check_rotation=True)")
    assert [f.location.line for f in findings] == [call, call]  # the innermost line of the workspace
    innermost = [(Path(f.related[0].file).resolve(), f.related[0].line) for f in findings]
    assert innermost == [(library, first), (library, second)]  # the innermost library line of each
    assert "found past the first failure" not in findings[0].message
    assert findings[1].message.startswith("found past the first failure by torch.export.draft_export: "
                                          "data-dependent expression")


def test_a_second_op_without_a_fake_kernel_is_its_own_finding(tmp_path):
    """test/export/test_draft_export.py: the ops of test_missing_meta_kernel_custom_op (a custom
    op) and test_missing_meta_kernel_impl (a torch.library op with only a CPU kernel) in one
    forward. torch stops at the first op it cannot run on fake tensors."""
    source = write(tmp_path, "ops.py", '''
        import torch
        from torch import nn

        lib = torch.library.Library("onnxlens_past_first", "FRAGMENT")
        lib.define("foo(Tensor a, Tensor b) -> Tensor", tags=torch.Tag.pt2_compliant_tag)


        @torch.library.impl("onnxlens_past_first::foo", "cpu", lib=lib)
        def foo_impl(a, b):
            return a + b


        @torch.library.custom_op("onnxlens_past_first::foo2", mutates_args={})
        def foo2_impl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return a + b


        class M(nn.Module):
            def forward(self, a, b):
                res = torch.ops.onnxlens_past_first.foo2(a, b)
                res = torch.ops.onnxlens_past_first.foo(res, b)
                return res


        def inputs():
            return (torch.ones(3, 3), torch.ones(3, 3))
    ''')
    result = shared_pipeline().run(spec_for(tmp_path, "ops", "ops.py:M", "ops.py:inputs"))
    assert result.status == "failed"
    findings = [f for f in result.findings if f.code == "torch-export"]
    assert [f.location.line for f in findings] == [line_of(source, "foo2(a, b)"), line_of(source, "foo(res, b)")]
    assert findings[1].message == ("found past the first failure by torch.export.draft_export: "
                                   "missing fake kernel: onnxlens_past_first.foo.default")


def test_every_call_of_an_op_without_a_fake_kernel_is_a_finding(tmp_path):
    """test/export/test_draft_export.py::test_missing_meta_kernel_impl: one op without a fake
    kernel, called twice. draft_export reports the op once; each of its calls in the program is
    a line the user must change (fix the first call, stock fails on the second)."""
    source = write(tmp_path, "twice.py", '''
        import torch
        from torch import nn

        lib = torch.library.Library("onnxlens_twice", "FRAGMENT")
        torch.library.define("onnxlens_twice::foo", "(Tensor a, Tensor b) -> Tensor",
                             tags=torch.Tag.pt2_compliant_tag, lib=lib)


        @torch.library.impl("onnxlens_twice::foo", "cpu", lib=lib)
        def foo_impl(a, b):
            return a + b


        class M(nn.Module):
            def forward(self, a, b):
                res = torch.ops.onnxlens_twice.foo(a, b)
                res = torch.ops.onnxlens_twice.foo(res, b)
                return res


        def inputs():
            return (torch.ones(3, 3), torch.ones(3, 3))
    ''')
    result = shared_pipeline().run(spec_for(tmp_path, "twice", "twice.py:M", "twice.py:inputs"))
    assert result.status == "failed"
    findings = [f for f in result.findings if f.code == "torch-export"]
    assert [f.location.line for f in findings] == [line_of(source, "foo(a, b)"), line_of(source, "foo(res, b)")]
    assert findings[1].message.startswith("found past the first failure by torch.export.draft_export: "
                                          "missing fake kernel: onnxlens_twice.foo.default")


def test_a_line_behind_the_first_in_torchs_own_module_is_found(tmp_path):
    """torch's nn.AdaptiveLogSoftmaxWithLoss is the model (its code is torch's: shown as the
    model's code, files.py `model_code`). Stock stops at `if row_indices.numel() == 0:`; with
    that line changed to `if False:` in a copy of torch/nn/modules/adaptive.py (line numbers kept),
    stock torch.export, non-strict and strict, stops at `if used_rows != batch_size:` (Ne(u0 + u1,
    4)). draft_export's own report names a problem by its innermost frames outside torch's
    directory, which torch's module is in: only the run's own stacks see that line."""
    write(tmp_path, "softmax.py", '''
        import torch
        from torch import nn


        def build():
            return nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4]).eval()


        def inputs():
            return (torch.randn(4, 8), torch.tensor([1, 2, 5, 7]))  # two targets in each cluster
    ''')
    result = shared_pipeline().run(spec_for(tmp_path, "softmax", "softmax.py:build", "softmax.py:inputs"))
    import torch.nn.modules.adaptive as adaptive
    module = Path(adaptive.__file__).resolve()
    findings = [f for f in result.findings if f.code == "torch-export"]
    innermost = [(Path(f.related[0].file).resolve(), f.related[0].line) for f in findings]
    assert innermost == [(module, line_of(module, "if row_indices.numel() == 0:")),
                         (module, line_of(module, "if used_rows != batch_size:"))]
    assert findings[1].message.startswith("found past the first failure by torch.export.draft_export: ")
