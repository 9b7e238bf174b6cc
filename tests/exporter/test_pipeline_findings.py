"""Each failure kind lands as a finding on the user's own line: real exports of small models."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxlens.exporter.events import FindingsEvent, StageEvent
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

MODELS = '''
import torch
from torch import nn

from pkg.helpers import gate, zeta_then_eig


class Gated(nn.Module):
    """Data-dependent control flow in forward itself."""

    def forward(self, x):
        y = x + 1
        if y.sum() > 0:
            return y * 2
        return y - 1


class TwoProblems(nn.Module):
    """Two data-dependent problems: torch.export stops at the first, draft_export sees both."""

    def forward(self, x):
        total = x.sum()
        scaled = x * 2 if total > 0 else x
        count = x.max().item()
        return scaled.sum() + torch.ones(int(count)).sum()


class GatedInHelper(nn.Module):
    def forward(self, x):
        return gate(x) + 1


class Branches(nn.Module):
    """torch.cond: each branch is a subgraph with an op ONNX lacks."""

    def forward(self, x):
        def positive(v):
            return torch.special.zeta(v.abs() + 2.0, 2.0)

        def negative(v):
            return torch.linalg.eigvals(v).real * v

        return torch.cond(x.sum() > 0, positive, negative, (x,))


class Helpers(nn.Module):
    def forward(self, x):
        return zeta_then_eig(x)


class ReturnsObject(nn.Module):
    """Non-strict capture rejects the output without a line; strict (dynamo) names the return."""

    def forward(self, x):
        return object()


class Settings:
    scale = 2.0


class TakesSettings(nn.Module):
    """torch.export rejects an input of a type it cannot take: the inputs factory built it."""

    def forward(self, x, settings):
        return x * 2


def settings_inputs():
    return (torch.randn(4, 4), Settings())


def build_adaptive_softmax():
    """No line of the user's on the failing chain: torch's own module decides on a tensor's value."""
    return nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4]).eval()


def softmax_inputs():
    # Two targets in each cluster: draft_export runs the module on these values, and a cluster of
    # one row makes `nonzero().squeeze()` a 0-d index that the real index_copy_ refuses.
    return (torch.randn(4, 8), torch.tensor([1, 2, 5, 7]))


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        raise ValueError("no weights file")


class Flattens(nn.Module):
    """Asks for a dynamic row count, but reshape(16) only works with 4 rows."""

    def forward(self, x):
        return x.reshape(16) * 2


def rows_dynamic():
    return ({0: torch.export.Dim("rows", min=1, max=64)},)


def inputs():
    return (torch.randn(4, 4),)


def raising_inputs():
    shape = (4, 4)
    raise RuntimeError(f"cannot build inputs of shape {shape}")
'''

HELPERS = '''
import torch


def gate(x):
    scale = x.mean()
    if scale > 0:
        return x * scale
    return x


def zeta_then_eig(x):
    z = torch.special.zeta(x.abs() + 2.0, 2.0)
    return torch.linalg.eigvals(z).real
'''

SYNTAX_ERROR = '''
import torch


def build():
    return torch.nn.Linear(2, 2
'''

# A third-party library (installed, so not workspace code) whose layer uses an op ONNX lacks.
LIBRARY_LAYER = '''
import torch
from torch import nn


class ZetaLayer(nn.Module):
    def forward(self, x):
        return torch.special.zeta(x.abs() + 2.0, 2.0)
'''

LIBRARY_MODEL = '''
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "env" / "site-packages"))

from fancylib.layers import ZetaLayer  # noqa: E402


def build_library_model():
    return ZetaLayer()
'''

IMPORT_ERROR = '''
import torch

from pkg.helpers import does_not_exist


def build():
    return torch.nn.Linear(2, 2)
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("findings")
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/models.py", MODELS)
    write(root, "pkg/helpers.py", HELPERS)
    write(root, "pkg/syntax.py", SYNTAX_ERROR)
    write(root, "pkg/imports.py", IMPORT_ERROR)
    write(root, "env/site-packages/fancylib/__init__.py", "")
    write(root, "env/site-packages/fancylib/layers.py", LIBRARY_LAYER)
    write(root, "pkg/library_model.py", LIBRARY_MODEL)
    return root


def run(workspace: Path, model: str, inputs: str = "pkg/models.py:inputs", name: str | None = None):
    spec = spec_for(workspace, name or model.rpartition(":")[2], model, inputs)
    return shared_pipeline().run(spec)


def only(result, code: str):
    assert result.status == "failed"
    assert [f.code for f in result.findings] == [code], result.findings
    return result.findings[0]


def test_data_dependent_if_is_reported_on_the_if_line(workspace):
    result = run(workspace, "pkg/models.py:Gated")
    models = workspace / "pkg" / "models.py"
    finding = only(result, "torch-export")
    assert finding.stage == "capture"
    assert (finding.location.file, finding.location.line) == (str(models), line_of(models, "if y.sum() > 0:"))
    assert finding.source_line.strip() == "if y.sum() > 0:"
    # Both capture strategies were tried and both explanations kept.
    assert "non-strict" in finding.message and "strict" in finding.message.split("non-strict", 1)[1]
    assert "data-dependent" in finding.message.lower()
    assert finding.docs_url


def test_draft_export_reports_every_data_dependent_problem_at_once(workspace):
    result = run(workspace, "pkg/models.py:TwoProblems")
    models = workspace / "pkg" / "models.py"
    assert result.status == "failed"
    assert [f.code for f in result.findings] == ["torch-export", "torch-export"]
    assert [f.location.line for f in result.findings] == [
        line_of(models, "scaled = x * 2 if total > 0 else x"), line_of(models, "torch.ones(int(count))")]
    assert "draft_export" in result.findings[1].message


def test_data_dependent_branch_in_a_helper_lands_on_the_helper_with_forward_related(workspace):
    result = run(workspace, "pkg/models.py:GatedInHelper")
    helpers = workspace / "pkg" / "helpers.py"
    models = workspace / "pkg" / "models.py"
    finding = only(result, "torch-export")
    assert (finding.location.file, finding.location.line) == (str(helpers), line_of(helpers, "if scale > 0:"))
    assert (str(models), line_of(models, "return gate(x) + 1")) in [(r.file, r.line) for r in finding.related]


def test_unsupported_ops_inside_torch_cond_branches_are_all_found(workspace):
    result = run(workspace, "pkg/models.py:Branches")
    models = workspace / "pkg" / "models.py"
    assert result.status == "failed"
    lines = {f.location.line: f for f in result.findings}
    assert [f.code for f in result.findings] == ["unsupported-op", "unsupported-op"]
    zeta_line = line_of(models, "torch.special.zeta(v.abs()")
    erfcx_line = line_of(models, "torch.linalg.eigvals(v).real")
    assert set(lines) == {zeta_line, erfcx_line}
    assert "zeta" in lines[zeta_line].message
    assert "linalg_eig" in lines[erfcx_line].message


def test_two_ops_in_one_helper_give_two_findings_on_the_helpers_lines(workspace):
    result = run(workspace, "pkg/models.py:Helpers")
    helpers = workspace / "pkg" / "helpers.py"
    located = sorted((f.location.file, f.location.line) for f in result.findings)
    assert located == [(str(helpers), line_of(helpers, "torch.special.zeta(")),
                       (str(helpers), line_of(helpers, "torch.linalg.eigvals(z)"))]


def test_error_located_by_one_strategy_only_gives_one_finding_on_that_line(workspace):
    """Non-strict capture rejects the returned object without a line. Strict capture names the
    `return` line on torch 2.12-2.13 (its finding is kept, with dynamo's graph-break page); from
    2.14 dynamo traces `object()` and fails without a line, and the unflattenable-output finding
    (outputs.py) finds the `return` statement. Either way: one finding, on that line, naming
    both strategies."""
    from onnxlens.exporter.pipeline.untranslatable import outputs

    result = run(workspace, "pkg/models.py:ReturnsObject")
    models = workspace / "pkg" / "models.py"
    finding = only(result, "torch-export")
    assert (finding.location.file, finding.location.line) == (str(models), line_of(models, "return object()"))
    assert "non-strict" in finding.message and "strict" in finding.message
    if "cannot flatten the model's output" in finding.message:
        assert finding.docs_url == outputs.DOCS_URL and "a object," not in finding.message
    else:
        assert "graph-break-site" in finding.docs_url


def test_failure_without_a_user_line_is_shown_at_the_model_definition(workspace):
    result = run(workspace, "pkg/models.py:build_adaptive_softmax", inputs="pkg/models.py:softmax_inputs")
    models = workspace / "pkg" / "models.py"
    assert result.status == "failed" and {f.code for f in result.findings} == {"torch-export"}
    # Stock's failure, then the data-dependent line behind it (test_past_first_failure.py): each on
    # the model's definition.
    for finding in result.findings:
        assert (finding.location.file, finding.location.line) == (str(models), line_of(models, "def build_adaptive_softmax"))
        assert "model's definition" in finding.message
        # torch's module is the model's code here: its line is related.
        assert Path(finding.related[0].file).name == "adaptive.py", finding.related
    assert result.model_location.line == result.findings[0].location.line


def test_an_input_of_a_type_torch_export_cannot_take_is_on_the_inputs_factory(workspace):
    result = run(workspace, "pkg/models.py:TakesSettings", inputs="pkg/models.py:settings_inputs")
    models = workspace / "pkg" / "models.py"
    finding = only(result, "setup")
    line = line_of(models, "return (torch.randn(4, 4), Settings())")
    assert (finding.location.file, finding.location.line) == (str(models), line)
    assert finding.location.column == models.read_text().splitlines()[line - 1].index("Settings()") + 1
    assert "`settings` is a pkg.models.Settings" in finding.message


def test_dynamic_dimension_that_came_out_static_is_a_warning_on_the_line_that_fixed_it(workspace):
    spec = spec_for(workspace, "flattens", "pkg/models.py:Flattens", "pkg/models.py:inputs",
                    dynamic_shapes="pkg/models.py:rows_dynamic")
    events = []
    result = shared_pipeline().run(spec, events.append)
    models = workspace / "pkg" / "models.py"
    # Exported (as the public API does, specialized), but not silently.
    assert result.status == "ok"
    assert [(f.code, f.severity) for f in result.findings] == [("torch-export", "warning")]
    finding = result.findings[0]
    # On the line that fixed the size, the factory related (docs/diagnostics.md).
    assert finding.location.line == line_of(models, "return x.reshape(16) * 2")
    assert "`x` dim 0 (`rows`) is declared dynamic, but this line fixes it to 4" in finding.message
    assert line_of(models, "def rows_dynamic") in [r.line for r in finding.related]
    # Sent when capture ended, ahead of the result (docs/lsp.md): shown while the rest runs.
    reported = [e for e in events if isinstance(e, FindingsEvent)]
    # then translation settles the errors (none).
    assert reported == [FindingsEvent("capture", (finding,)), FindingsEvent("translate", (), settled=True)]
    assert events.index(reported[0]) < events.index(StageEvent("decompose", "begin"))


def test_op_inside_a_library_model_is_shown_at_the_factory_with_the_library_line_related(workspace):
    result = run(workspace, "pkg/library_model.py:build_library_model")
    factory = workspace / "pkg" / "library_model.py"
    layers = workspace / "env" / "site-packages" / "fancylib" / "layers.py"
    finding = only(result, "unsupported-op")
    assert (finding.location.file, finding.location.line) == (str(factory), line_of(factory, "def build_library_model"))
    assert [(r.file, r.line) for r in finding.related] == [(str(layers), line_of(layers, "torch.special.zeta("))]
    # Library files are not the workspace's: the closure does not list them.
    assert str(layers) not in result.closure


def test_syntax_error_is_an_import_finding_at_the_syntax_error(workspace):
    result = run(workspace, "pkg/syntax.py:build", name="syntax")
    syntax = workspace / "pkg" / "syntax.py"
    finding = only(result, "import")
    assert finding.location.file == str(syntax)
    assert finding.location.line == line_of(syntax, "torch.nn.Linear(2, 2")
    assert finding.location.column > 1
    assert str(syntax) in result.closure


def test_import_error_is_reported_at_the_importing_line_and_closure_kept(workspace):
    result = run(workspace, "pkg/imports.py:build", name="imports")
    imports = workspace / "pkg" / "imports.py"
    finding = only(result, "import")
    assert (finding.location.file, finding.location.line) == (str(imports), line_of(imports, "does_not_exist"))
    assert "does_not_exist" in finding.message
    # The closure so far: the package and the helper module it imported, plus the failing file.
    assert {str(imports), str(workspace / "pkg" / "helpers.py")} <= set(result.closure)


def test_model_factory_raising_is_a_setup_finding_at_the_raise(workspace):
    result = run(workspace, "pkg/models.py:Broken")
    models = workspace / "pkg" / "models.py"
    finding = only(result, "setup")
    assert (finding.location.file, finding.location.line) == (str(models), line_of(models, 'raise ValueError("no weights'))
    assert "no weights file" in finding.message


def test_inputs_factory_raising_is_a_setup_finding_at_the_raise(workspace):
    result = run(workspace, "pkg/models.py:Gated", inputs="pkg/models.py:raising_inputs")
    models = workspace / "pkg" / "models.py"
    finding = only(result, "setup")
    assert finding.location.line == line_of(models, "raise RuntimeError(f\"cannot build inputs")
    assert "inputs factory" in finding.message


def test_missing_attribute_in_a_reference_is_an_import_finding(workspace):
    result = run(workspace, "pkg/models.py:Gatd")
    finding = only(result, "import")
    assert finding.message == "the model reference 'pkg/models.py:Gatd': pkg/models.py has no `Gatd`; did you mean `Gated`?"
    # No line of code to blame: the server shows it on the config's `model` value.
    assert (finding.location, finding.reference) == (None, "model")


def test_missing_attribute_without_a_close_name_lists_the_modules_own_callables(workspace):
    finding = only(run(workspace, "pkg/helpers.py:Nope"), "import")
    assert finding.message.startswith("the model reference 'pkg/helpers.py:Nope': pkg/helpers.py has no `Nope` (it defines `")
    assert "`gate`" in finding.message and "`zeta_then_eig`" in finding.message and "`torch`" not in finding.message


def test_torch_check_suggestions_become_insert_fixes_above_the_line(tmp_path):
    # torch 2.13 seldom suggests checks for real models (most guards became size-oblivious), so
    # the message comes from torch's own suggestion code on a real data-dependent error object.
    import sympy
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, _suggest_torch_checks

    from onnxlens.exporter.pipeline.failures.capture_failures import check_fixes
    from onnxlens.exporter.types import Location

    u0 = sympy.Symbol("u0", integer=True)
    error = GuardOnDataDependentSymNode(u0 > 2, "Could not guard on data-dependent expression u0 > 2")
    _suggest_torch_checks(error, {"u0": ["n"]})
    path = write(tmp_path, "m.py", """
        def f(x, n):
            if n > 2:
                return x
    """)
    fixes = check_fixes(error, Location(file=str(path), line=2, column=5), "    if n > 2:")
    assert [f.new_text for f in fixes] == ["    torch._check(n > 2)\n", "    torch._check(n <= 2)\n"]
    assert all((f.line, f.column, f.end_line, f.end_column) == (2, 1, 2, 1) for f in fixes)
    assert fixes[0].title == "Insert torch._check(n > 2)"


def test_columns_count_characters_not_utf8_bytes(tmp_path):
    # CPython's traceback columns are UTF-8 byte offsets; editors count characters.
    write(tmp_path, "model.py", '''
        import torch

        def build():
            größe = 4; raise ValueError(f"no weights for {größe}")

        def inputs():
            return (torch.randn(2, 4),)
        ''')
    result = shared_pipeline().run(spec_for(tmp_path, "m", "model.py:build", "model.py:inputs"))
    finding = next(f for f in result.findings if f.code == "setup")
    text = (tmp_path / "model.py").read_text().splitlines()[finding.location.line - 1]
    start, end = finding.location.column - 1, finding.location.end_column - 1
    assert text[start:end] == 'raise ValueError(f"no weights for {größe}")'
