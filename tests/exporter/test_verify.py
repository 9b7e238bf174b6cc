"""verify(): onnxruntime vs torch, and the first diverging intermediate on the user's line.

The mismatches here are real, not mocked: onnxruntime really computes something different from
torch, in one of two ways a user meets in practice:
* a deliberately wrong custom translation (GELU as x * sigmoid(1.702 x), the "quick GELU"
  approximation someone might register for speed) passed to torch.onnx.export;
* a corrupted weight in the saved ONNX graph (the bias of ONE layer of a ModuleList changed
  after export, as a broken weight conversion would), so the lines of all layers are identical
  and only the module path tells which layer is wrong.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path

import onnx_ir as ir
import pytest
import torch
from onnxscript import opset18 as op
from torch import nn

from onnxlens.exporter.verify import verify
from onnxlens.exporter.verify.tolerance import Tolerance
from onnxlens.exporter.locations import Workspace, from_stack_trace, locate_node, normalize_module_path
from onnxlens.exporter.types import Location

HERE = Path(__file__).resolve()
ROOT = str(HERE.parent)


def line_of(marker: str) -> int:
    """1-based line of this file that carries `# <marker>`."""
    for number, text in enumerate(HERE.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(f"marker {marker!r} not found")


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.ff(self.norm(x))  # block-ff


class Deep(nn.Module):
    """Four identical blocks: every layer's ops come from the same source line."""

    def __init__(self, dim: int = 32, depth: int = 4) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block(dim) for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)  # deep-loop
        return x


def quick_gelu(x, approximate: str = "none"):
    """A wrong translation of aten.gelu: the sigmoid approximation, off by up to ~0.02."""
    return op.Mul(x, op.Sigmoid(op.Mul(x, op.Constant(value_float=1.702))))


def deep_inputs() -> tuple[torch.Tensor]:
    torch.manual_seed(1)
    return (torch.randn(2, 8, 32),)


def export(model: nn.Module, args: tuple, **options):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.onnx.export(model, args, dynamo=True, verbose=False, **options)


@pytest.fixture(scope="module")
def deep_model() -> Deep:
    torch.manual_seed(0)
    return Deep().eval()


@pytest.fixture(scope="module")
def deep_program(deep_model):
    """One export of Deep shared by the tests; `corrupted_bias` restores what it changes."""
    return export(deep_model, deep_inputs())


@pytest.fixture(scope="module")
def quick_gelu_program(deep_model):
    return export(deep_model, deep_inputs(),
                  custom_translation_table={torch.ops.aten.gelu.default: quick_gelu})


@contextlib.contextmanager
def corrupted_bias(onnx_program, name: str, delta: float = 0.05):
    """Change a few entries of one bias initializer of the exported ONNX graph (restored after)."""
    initializers = onnx_program.model.graph.initializers
    assert name in initializers, sorted(initializers)
    original = initializers[name].const_value
    array = original.numpy().copy()
    array[:4] += delta
    initializers[name].const_value = ir.tensor(array, name=name)
    try:
        yield onnx_program
    finally:
        initializers[name].const_value = original


def test_correct_model_passes_with_small_diffs(deep_program):
    args, program = deep_inputs(), deep_program
    summary, findings = verify(program.exported_program, program, args, {}, root=ROOT)
    assert summary.passed is True
    assert findings == []
    assert summary.compared == 1
    assert 0.0 <= summary.max_abs_diff < 1e-4  # float32 rounding, not zero and not large
    assert summary.outputs[0].shape == [2, 8, 32]
    assert summary.first_mismatch is None


@pytest.mark.parametrize("layer", [1, 3])
def test_corrupted_layer_is_found_by_module_path_on_the_shared_line(deep_program, layer):
    args, program = deep_inputs(), deep_program
    with corrupted_bias(program, f"layers.{layer}.ff.0.bias"):
        summary, findings = verify(program.exported_program, program, args, {}, root=ROOT)

    assert summary.passed is False
    assert summary.max_abs_diff > 1e-3
    assert summary.first_mismatch.module == f"layers.{layer}.ff.0"
    assert summary.first_mismatch.target == "aten.linear.default"
    (finding,) = findings
    assert (finding.code, finding.severity, finding.stage) == ("mismatch", "warning", "verify")
    assert finding.location.file == str(HERE)
    assert finding.location.line == line_of("block-ff")
    # The columns cover the call that leads to the module: `self.ff(self.norm(x))`.
    text = HERE.read_text().splitlines()[finding.location.line - 1]
    assert text[finding.location.column - 1:finding.location.end_column - 1] == "self.ff(self.norm(x))"
    assert f"`layers.{layer}.ff.0`" in finding.message
    assert "aten.linear.default" in finding.message
    # The changed bias is read by that Linear's own ONNX node: alone, on torch's inputs, it is off.
    assert summary.first_mismatch.verdict.kind == "op", summary.first_mismatch.verdict
    assert "this op's translation differs from torch" in finding.message
    assert finding.source_line.strip() == "return x + self.ff(self.norm(x))  # block-ff"
    # The rest of the chain: the loop in Deep.forward; torch's own frames (Linear.forward in
    # torch/nn/modules/linear.py) are left out.
    assert [(r.file, r.line) for r in finding.related] == [(str(HERE), line_of("deep-loop"))]
    assert finding.related[0].message == "called from Deep.forward(): x = layer(x)  # deep-loop"


def test_wrong_custom_translation_is_found_at_the_first_gelu(quick_gelu_program):
    args, program = deep_inputs(), quick_gelu_program

    summary, findings = verify(program.exported_program, program, args, {}, root=ROOT)

    assert summary.passed is False
    first = summary.first_mismatch
    assert (first.target, first.module) == ("aten.gelu.default", "layers.0.ff.1")
    assert first.onnx_op == "Mul"  # the last op of quick_gelu, not ONNX's Gelu
    assert 1e-3 < first.max_abs_diff < 0.1
    (finding,) = findings
    assert finding.location.line == line_of("block-ff")
    assert "`layers.0.ff.1` (GELU)" in finding.message
    # Run alone on torch's own inputs (the first Linear's output, computed alike), quick_gelu's
    # nodes still differ from torch's GELU, far past float rounding: the op (verdict.py).
    verdict = first.verdict
    assert verdict.kind == "op" and verdict.onnx_nodes[-1] == "Mul", verdict
    assert verdict.alone_max_abs_diff == pytest.approx(first.max_abs_diff, rel=0.5)
    assert verdict.onnx_float64_diff > 100 * verdict.torch_float64_diff
    assert verdict.inputs_max_abs_diff < 1e-4 < verdict.alone_max_abs_diff
    assert "this op's translation differs from torch" in finding.message


def test_tolerance_decides(quick_gelu_program):
    """The same real difference passes with a tolerance above it and fails below it."""
    args, program = deep_inputs(), quick_gelu_program
    strict, _ = verify(program.exported_program, program, args, {}, tolerance=Tolerance(rtol=0, atol=1e-4))
    loose, findings = verify(program.exported_program, program, args, {}, tolerance=Tolerance(rtol=0, atol=1.0))
    assert strict.passed is False
    assert loose.passed is True and findings == []
    assert loose.max_abs_diff == pytest.approx(strict.max_abs_diff)


def test_without_root_the_innermost_non_library_frame_is_primary(deep_program):
    args, program = deep_inputs(), deep_program
    with corrupted_bias(program, "layers.2.ff.0.bias"):
        _, (finding,) = verify(program.exported_program, program, args, {})
    assert finding.location.file == str(HERE)  # not torch/nn/modules/linear.py
    assert finding.location.line == line_of("block-ff")


def test_root_elsewhere_puts_the_mismatch_at_the_fallback_with_the_chain_related(deep_program, tmp_path):
    """No frame in the workspace: the warning stays in the workspace (at the model's definition,
    `fallback`) as an error would; the code that computed the value (here this file, outside
    that workspace) is related, torch's linear.py is not (docs/diagnostics.md)."""
    args, program = deep_inputs(), deep_program
    model = Location(file=str(tmp_path / "model.py"), line=3, column=5, end_line=3, end_column=10)
    with corrupted_bias(program, "layers.0.ff.0.bias"):
        _, (finding,) = verify(program.exported_program, program, args, {}, root=str(tmp_path), fallback=model)
    assert (finding.location.file, finding.location.line) == (model.file, 3)
    assert "shown at the model's definition" in finding.message
    assert (str(HERE), line_of("block-ff")) in [(r.file, r.line) for r in finding.related]
    assert not any("torch" + os.sep in r.file for r in finding.related)


class Odd(nn.Module):
    """An int argument (baked into the graph: no ONNX input), a keyword tensor, and int, bool,
    0-d, empty and nested outputs."""

    def forward(self, x, n: int, *, z):
        return (x * n + z, x.argmax(-1), (x > 0).all(), [x.sum()], x[:, :0])


def test_odd_inputs_and_outputs_are_compared_without_error():
    args, kwargs = (torch.randn(3, 4), 3), {"z": torch.ones(4)}
    program = export(Odd(), args, kwargs=kwargs)
    summary, findings = verify(program.exported_program, program, args, kwargs)
    assert summary.error is None, summary
    assert summary.passed is True and findings == []
    dtypes = [o.dtype for o in summary.outputs]
    assert dtypes == ["float32", "int64", "bool", "float32", "float32"]
    assert summary.outputs[4].note == "empty"
    assert summary.compared == 5


class Counter(nn.Module):
    """Mutates a buffer: the exported graph returns the new buffer before the user output,
    the ONNX graph returns the user output only."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(3))

    def forward(self, x):
        self.calls.add_(1)
        return x + self.calls, None


def test_buffer_mutations_and_none_outputs_are_not_paired_with_user_outputs():
    args = (torch.randn(3),)
    program = export(Counter(), args)
    summary, findings = verify(program.exported_program, program, args, {})
    assert summary.passed is True and findings == []
    assert [o.name for o in summary.outputs] == [v.name for v in program.model.graph.outputs]
    assert summary.compared == 1 and summary.max_abs_diff < 1e-6


def test_inputs_that_do_not_fit_give_a_summary_and_a_finding_not_a_traceback(deep_program):
    args, program = deep_inputs(), deep_program
    summary, findings = verify(program.exported_program, program, (args[0], args[0]), {})
    assert summary.passed is False
    assert "example inputs do not match" in summary.error and summary.error_source == "inputs"
    (finding,) = findings
    assert (finding.code, finding.severity) == ("verification", "warning")
    assert finding.message.startswith("verification could not run: the example inputs do not match")
    assert finding.location is None  # the pipeline shows it at the model's definition


def test_nothing_to_verify():
    summary, findings = verify(None, None, (), {})
    assert summary.passed is False and "nothing to verify" in summary.error
    assert findings == []


class Reshaper(nn.Module):
    def forward(self, x):
        y = x.view(4, 6)  # reshape-line
        return y.relu()


def test_onnxruntime_failure_is_a_finding_at_the_failing_node():
    """Post-edit the Reshape's target shape so onnxruntime refuses to run it."""
    args = (torch.randn(2, 12),)
    program = export(Reshaper(), args)
    (reshape,) = [n for n in program.model.graph if n.op_type == "Reshape"]
    shape = reshape.inputs[1]
    shape.const_value = ir.tensor(torch.tensor([5, 5], dtype=torch.int64).numpy(), name=shape.name)
    if shape.is_initializer():
        program.model.graph.initializers[shape.name].const_value = shape.const_value
    summary, findings = verify(program.exported_program, program, args, {}, root=ROOT)
    assert summary.passed is False
    assert "onnxruntime could not run the model" in summary.error and summary.error_source == "onnxruntime"
    (finding,) = findings
    assert finding.code == "verification" and "Reshape" in finding.message
    assert finding.location is not None and finding.location.line == line_of("reshape-line")


def test_stack_trace_parsing_of_strict_capture(deep_model):
    """Strict capture adds dynamo frames and ^^^ lines; the frames and code lines survive."""
    program = torch.export.export(deep_model, deep_inputs(), strict=True)
    node = next(n for n in program.graph.nodes if n.op == "call_function" and n.meta.get("stack_trace"))
    frames = from_stack_trace(node.meta["stack_trace"])
    assert any(f.file == str(HERE) and f.line == line_of("block-ff") for f in frames)
    assert all(not (f.code or "").startswith("^") for f in frames)


@pytest.mark.parametrize("raw, expected", [
    ("layers.2.ff.0", "layers.2.ff.0"),
    ("L['self'].layers[2].ff[0]", "layers.2.ff.0"),
    ("getattr(L['self'].layers, '2').ff", "layers.2.ff"),
    ("L['self']", ""),
])
def test_module_paths_are_normalised(raw, expected):
    assert normalize_module_path(raw) == expected


def squash(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x) * 2  # helper-line


class UsesHelper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return squash(self.proj(x))  # helper-call


def test_a_helper_function_frame_is_the_primary_location():
    """Strict capture records helper frames: the finding lands in the helper, the caller is related."""
    program = torch.export.export(UsesHelper(), (torch.randn(2, 8),), strict=True)
    tanh = next(n for n in program.graph.nodes if n.op == "call_function" and "tanh" in str(n.target))
    place = locate_node(tanh.meta, Workspace(ROOT))
    assert (place.location.file, place.location.line) == (str(HERE), line_of("helper-line"))
    assert place.related[0].line == line_of("helper-call")
    assert place.related[0].message.startswith("called from UsesHelper.forward()")
    assert place.module_path == ""


def test_the_weights_reach_onnxruntime_from_memory_not_through_the_proto(deep_program, deep_model):
    """The session's proto declares the weights without their data (no serializing of hundreds
    of MB, no protobuf size limit); onnxruntime gets them as OrtValues, and a corrupted one is
    still found: the values it runs with are the model's own."""
    import onnx

    from onnxlens.exporter.verify import runtime

    program = deep_program
    sessions = runtime.Sessions(program.model)
    session = sessions.session()
    external = [t for t in sessions._proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert external and not any(t.raw_data or t.float_data for t in external)  # declared, no data
    assert len(sessions._weights[0]) == len(external)
    feeds = runtime.ort_feeds(program.model, list(deep_inputs()))
    with torch.no_grad():
        torch.testing.assert_close(runtime.run(session, feeds)[0], deep_model(*deep_inputs()), rtol=1e-4, atol=1e-5)
    with corrupted_bias(program, "layers.2.ff.0.bias"):
        summary, (finding,) = verify(program.exported_program, program, deep_inputs(), {}, root=ROOT)
    assert summary.first_mismatch.module == "layers.2.ff.0"
    assert finding.location.line == line_of("block-ff")


def test_pipeline_reports_the_mismatch_of_a_workspace_custom_translation(tmp_path):
    """End to end: a workspace whose custom-translations table has a wrong GELU; the real
    pipeline exports (a warning does not fail the export), verifies, and the finding and the
    report point at the user's translation, the model's line related. (The package is not called `models`: the shared in-process
    pipeline would keep it in sys.modules and shadow the examples' `models` of later tests.)"""
    from tests.exporter.engine_support import shared_pipeline, spec_for, write

    model_file = write(tmp_path, "mismatch_models/net.py", """
        import torch
        from torch import nn


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.up = nn.Linear(16, 32)
                self.act = nn.GELU()

            def forward(self, x):
                return self.act(self.up(x))  # act-line


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block(), nn.Linear(32, 16)])

            def forward(self, x):
                return self.blocks[1](self.blocks[0](x))


        def example_inputs():
            torch.manual_seed(0)
            return (torch.randn(4, 16),)
        """)
    write(tmp_path, "mismatch_models/translations.py", """
        import torch
        from onnxscript import opset18 as op


        def quick_gelu(x, approximate: str = "none"):
            return op.Mul(x, op.Sigmoid(op.Mul(x, op.Constant(value_float=1.702))))


        TABLE = {torch.ops.aten.gelu.default: quick_gelu}
        """)
    spec = spec_for(tmp_path, "net", "mismatch_models/net.py:Net",
                    "mismatch_models/net.py:example_inputs", verify=True,
                    custom_translations="mismatch_models/translations.py:TABLE")

    result = shared_pipeline().run(spec)

    assert result.status == "ok", [f.message for f in result.findings]
    assert result.verification.passed is False
    (finding,) = [f for f in result.findings if f.code == "mismatch"]
    # The wrong code is the translation: the finding is on its def line, the GELU's
    # line in the model related.
    translations = tmp_path / "mismatch_models" / "translations.py"
    assert Path(finding.location.file).resolve() == translations.resolve()
    def_line = next(n for n, t in enumerate(translations.read_text().splitlines(), 1) if "def quick_gelu" in t)
    assert finding.location.line == def_line
    line = next(n for n, t in enumerate(model_file.read_text().splitlines(), 1) if "# act-line" in t)
    assert (model_file.resolve(), line) in [(Path(r.file).resolve(), r.line) for r in finding.related]
    assert "your ONNX translation of aten.gelu.default (`quick_gelu`)" in finding.message
    assert "`blocks.0.act` (GELU)" in finding.message
    report = Path(result.report).read_text()
    assert f"warning[mismatch] `mismatch_models/translations.py:{def_line}:" in report
