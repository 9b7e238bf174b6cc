"""Translation stubs: the start of an ONNX translation an `unsupported-op` finding
carries for each op, its parameters from the op's schema.

The stubs are checked the way a user uses them: the body filled in, the function registered as
the target's custom translation, the model exported. A stub whose parameters did not follow
the schema (an attribute taken for an input, a keyword-only argument missing) fails to bind
there. The ops are torch's own, called as users call them, chosen for their schemas: two
tensors (hypot, which decomposes to prims.hypot), an int attribute before the tensor (polygamma), bools and a keyword-only
optional string with three outputs (svdvals -> _linalg_svd), a Scalar (chebyshev_polynomial_t).
"""

from __future__ import annotations

import textwrap

import pytest

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # each stub filled in and exported again

MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x, y):
        return {call}


def inputs():
    torch.manual_seed(0)
    return (torch.randn(3, 4), torch.randn(3, 4))
'''

CASES = {
    # name: (the call in forward, the op, the body that replaces the stub's raise)
    "hypot": ("torch.hypot(x, y)", "prims.hypot.default",
              "return op.Sqrt(op.Add(op.Mul(self, self), op.Mul(other, other)))"),
    "polygamma": ("torch.polygamma(1, x.abs() + 1)", "aten.polygamma.default", "return op.Identity(self)"),
    "svdvals": ("torch.linalg.svdvals(x)", "aten._linalg_svd.default",
                "return A, op.ReduceL2(A, op.Constant(value_ints=[-1]), keepdims=0), A"),
    "chebyshev": ("torch.special.chebyshev_polynomial_t(x, 3)", "aten.special_chebyshev_polynomial_t.n_scalar",
                  "return op.Identity(x)"),
}


def _export(root, name, translations=None, verify=False):
    spec = spec_for(root, name, f"{name}.py:Net", f"{name}.py:inputs", verify=verify,
                    custom_translations=f"{translations}:translations" if translations else None)
    return shared_pipeline().run(spec)


def _filled(stub, body: str) -> str:
    """The stub as a user finishes it: the raise replaced by a body, in a module with the table."""
    source = stub.source.replace(f'raise NotImplementedError("write the ONNX translation of {stub.op}")', body)
    imports = "from collections.abc import Sequence\n" if stub.needs_sequence else ""
    return (f"{imports}import torch\nfrom onnxscript import opset{stub.opset} as op\n\n\n{source}\n\n"
            f"translations = {{{stub.key}: {stub.function}}}\n")


@pytest.mark.parametrize("name", list(CASES))
def test_a_filled_in_stub_binds_to_the_ops_arguments_and_exports(tmp_path, name):
    call, op, body = CASES[name]
    write(tmp_path, f"{name}.py", MODEL.format(call=call))
    failed = _export(tmp_path, name)
    finding = next(f for f in failed.findings if f.code == "unsupported-op")
    assert finding.location.line == line_of(tmp_path / f"{name}.py", call)
    [stub] = [s for s in finding.translation_stubs if s.op == op]
    assert stub.key == f"torch.ops.{op}" and stub.opset == 20
    compile(stub.source, "stub", "exec")  # valid Python as written

    (tmp_path / "translations.py").write_text(_filled(stub, body))
    result = _export(tmp_path, name, "translations.py")
    assert result.status == "ok", [(f.code, f.message) for f in result.findings]


def test_the_stubs_signature_follows_the_schema(tmp_path):
    write(tmp_path, "svdvals.py", MODEL.format(call=CASES["svdvals"][0]))
    [stub] = _export(tmp_path, "svdvals").findings[0].translation_stubs
    # aten::_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None)
    assert stub.source.startswith(
        "def aten__linalg_svd(A, full_matrices: bool = False, compute_uv: bool = True, *, driver=None):")
    assert "3 outputs (U, S, Vh)" in stub.source


def test_an_unfinished_stub_fails_on_its_raise_line(tmp_path):
    call, op, _ = CASES["hypot"]
    write(tmp_path, "hypot.py", MODEL.format(call=call))
    [stub] = _export(tmp_path, "hypot").findings[0].translation_stubs
    module = tmp_path / "translations.py"
    module.write_text(_filled(stub, f'raise NotImplementedError("write the ONNX translation of {op}")'))
    result = _export(tmp_path, "hypot", "translations.py")
    [finding] = result.findings
    assert finding.code == "translation" and finding.location.line == line_of(tmp_path / "hypot.py", call)
    assert (str(module), line_of(module, "raise NotImplementedError")) in [(r.file, r.line) for r in finding.related]


def test_a_wrong_translation_is_a_mismatch_in_the_translation(tmp_path):
    call, op, _ = CASES["hypot"]
    model = write(tmp_path, "hypot.py", MODEL.format(call=call))
    [stub] = _export(tmp_path, "hypot").findings[0].translation_stubs
    module = tmp_path / "translations.py"
    module.write_text(_filled(stub, "return op.Add(self, other)"))  # not the hypotenuse
    result = _export(tmp_path, "hypot", "translations.py", verify=True)
    assert result.status == "ok"
    [finding] = result.findings
    assert finding.code == "mismatch"
    assert (finding.location.file, finding.location.line) == (str(module), line_of(module, "def prims_hypot("))
    assert "your ONNX translation of prims.hypot.default (`prims_hypot`)" in finding.message
    assert (str(model), line_of(model, call)) in [(r.file, r.line) for r in finding.related]

    module.write_text(_filled(stub, CASES["hypot"][2]))  # right: verification passes
    result = _export(tmp_path, "hypot", "translations.py", verify=True)
    assert result.findings == [] and result.verification.passed
