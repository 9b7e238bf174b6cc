"""write_report(): the markdown export report, for a success and for failures, written atomically."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import onnx_ir as ir
import pytest
import torch

from onnxlens.exporter.report import ReportInputs, write_report
from onnxlens.exporter.types import ExportResult, Finding, Location, Related, TargetSpec
from onnxlens.exporter.verify import verify

pytestmark = pytest.mark.slow  # torch's own report sections (its analysis of the program) on real exports

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"onnxlens_test_examples_{name}",
                                                  EXAMPLES / "models" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def make_spec(root: Path, name: str = "mlp") -> TargetSpec:
    return TargetSpec(name=name, root=str(root), model=f"models/{name}.py:MLP",
                      inputs=f"models/{name}.py:example_inputs",
                      output=str(root / ".onnxlens" / f"{name}.onnx"),
                      report=str(root / ".onnxlens" / "reports" / f"{name}.md"))


@pytest.fixture(scope="module")
def mlp_export():
    """The example MLP: captured, exported (the ONNX program holds the decomposed program)."""
    mlp = load_example("mlp")
    model, args = mlp.MLP().eval(), mlp.example_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        captured = torch.export.export(model, args)
        onnx_program = torch.onnx.export(model, args, dynamo=True, verbose=False)
    return model, args, captured, onnx_program


def test_success_report_has_every_section(tmp_path, mlp_export):
    model, args, captured, onnx_program = mlp_export
    summary, findings = verify(onnx_program.exported_program, onnx_program, args, {})
    assert findings == []
    spec = make_spec(tmp_path)
    result = ExportResult(target="mlp", status="ok", onnx=spec.output, seconds=0.42,
                          stages={"capture": 0.05, "decompose": 0.1, "translate": 0.01,
                                  "verify": summary.seconds},
                          verification=summary, node_count=len(onnx_program.model.graph))

    path = write_report(spec, result, ReportInputs(
        exported_program=captured, decomposed_program=onnx_program.exported_program,
        onnx_program=onnx_program, model=model))

    assert path == spec.report
    text = Path(path).read_text()
    assert text.startswith("# onnxlens export report: `mlp` — ok\n")
    assert "- ONNX file: `.onnxlens/mlp.onnx`" in text  # workspace-relative
    assert "| capture | ok | 0.050 |" in text
    assert "## Findings (0)\n\nNone: no problems found." in text
    assert "- Result: **passed**" in text
    # torch's sections, built with torch's own helpers
    assert "## Exported program" in text and "torch.ops.aten.linear.default" in text
    assert "## Analysis" in text and "All operators in the model have registered ONNX decompositions." in text
    assert "## Decomposition comparison" in text and "Ops exist only in the ExportedProgram" in text
    assert "## ONNX model" in text and "| `Gemm` |" in text
    assert "## Error" not in text
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings.index("## Findings (0)") < headings.index("## Exported program")


def test_failure_report_puts_findings_first_and_omits_missing_torch_sections(tmp_path):
    """An import failure: a real SyntaxError, no program at all."""
    source = tmp_path / "models" / "broken.py"
    source.parent.mkdir()
    source.write_text("import torch\n\n\nclass Net(torch.nn.Module):\n"
                      "    def forward(self, x):\n        return x +* 2\n\n# end\n")
    try:
        compile(source.read_text(), str(source), "exec")
    except SyntaxError as caught:
        error = caught
    else:
        raise AssertionError("the file should not compile")
    spec = make_spec(tmp_path, "broken")
    finding = Finding(code="import", message=f"SyntaxError: {error.msg}", stage="load",
                      location=Location(file=str(source), line=error.lineno, column=error.offset,
                                        end_line=error.lineno, end_column=error.offset + 1),
                      related=[Related(file=str(tmp_path / "pyproject.toml"), line=3,
                                       message="target `broken` is defined here")])
    result = ExportResult(target="broken", status="failed", seconds=0.01, stages={"load": 0.01},
                          findings=[finding])

    path = write_report(spec, result, ReportInputs(error=error))

    text = Path(path).read_text()
    assert text.startswith("# onnxlens export report: `broken` — failed\n")
    assert "(1 error, 0 warnings)" in text
    assert f"### 1. error[import] `models/broken.py:6:{error.offset}`" in text
    assert "> SyntaxError: invalid syntax" in text
    # the excerpt: numbered lines around line 6, line 6 marked and underlined at the column
    assert ">  6 |         return x +* 2" in text or "> 6 |         return x +* 2" in text
    assert "    def forward(self, x):" in text  # context line before
    assert "^" in text.split("return x +* 2", 1)[1].splitlines()[1]
    assert "- `pyproject.toml:3` target `broken` is defined here" in text
    assert "| load | failed | 0.010 |" in text and "| capture | not run |  |" in text
    # torch sections say they are unavailable instead of failing; the traceback is there
    assert "## Exported program\n\nNot available" in text
    assert "## Analysis\n\nNot available" in text
    assert "## Decomposition comparison\n\nNot available" in text
    assert "## Verification\n\nNot run" in text
    assert "## Error\n\n```pytb\n" in text and "SyntaxError" in text
    assert text.index("## Findings (1)") < text.index("## Error")


def test_mismatch_finding_in_report_underlines_the_expression(tmp_path):
    """A real mismatch (one layer's bias corrupted in the ONNX graph of the example encoder)."""
    encoder = load_example("encoder")
    model, args = encoder.build_encoder(), encoder.example_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onnx_program = torch.onnx.export(model, args, dynamo=True, verbose=False)
    bias = onnx_program.model.graph.initializers["layers.4.ff.0.bias"]
    array = bias.const_value.numpy().copy()
    array[:4] += 0.1
    bias.const_value = ir.tensor(array, name=bias.name)
    summary, findings = verify(onnx_program.exported_program, onnx_program, args, {},
                               root=str(EXAMPLES))
    spec = make_spec(EXAMPLES, "encoder")
    spec.report = str(tmp_path / "encoder.md")
    result = ExportResult(target="encoder", status="ok", verification=summary, findings=findings)

    text = Path(write_report(spec, result, ReportInputs(onnx_program=onnx_program))).read_text()

    assert "### 1. warning[mismatch] `models/encoder.py:18:20`" in text
    assert "`layers.4.ff.0` (Linear)" in text
    lines = text.splitlines()
    marked = next(i for i, line in enumerate(lines) if line.startswith("> 18 |"))
    assert lines[marked + 1].endswith("^" * len("self.ff(self.norm2(x))"))
    assert "- Result: **FAILED**" in text
    assert "in module `layers.4.ff.0`" in text
    assert "| `add_811` |" not in text or "differs" in text


def test_write_is_atomic_and_replaces_the_previous_report(tmp_path):
    spec = make_spec(tmp_path)
    report_dir = Path(spec.report).parent
    assert not report_dir.exists()  # parent directories are created
    first = write_report(spec, ExportResult(target="mlp", status="failed"), ReportInputs())
    second = write_report(spec, ExportResult(target="mlp", status="ok"), ReportInputs())
    assert first == second == spec.report
    assert sorted(p.name for p in report_dir.iterdir()) == ["mlp.md"]  # no temp file left
    assert Path(spec.report).read_text().startswith("# onnxlens export report: `mlp` — ok")


def test_text_that_utf8_cannot_encode_is_still_written(tmp_path):
    """A file name decoded with surrogateescape (non-UTF-8 bytes on disk) in a message."""
    spec = make_spec(tmp_path)
    odd = b"models/caf\xe9.py".decode("utf-8", "surrogateescape")
    finding = Finding(code="import", message=f"cannot import {odd}", stage="load")
    path = write_report(spec, ExportResult(target="mlp", status="failed", findings=[finding]),
                        ReportInputs())
    assert "cannot import models/caf" in Path(path).read_text(encoding="utf-8")
    assert sorted(p.name for p in Path(path).parent.iterdir()) == ["mlp.md"]


def test_a_broken_input_costs_one_section_not_the_report(tmp_path):
    spec = make_spec(tmp_path)
    path = write_report(spec, ExportResult(target="mlp", status="ok"),
                        ReportInputs(exported_program=object(), decomposed_program=object()))
    text = Path(path).read_text()
    assert "## Exported program" in text
    assert "_This section could not be built:" in text
    assert "## ONNX model\n\nNot available" in text
