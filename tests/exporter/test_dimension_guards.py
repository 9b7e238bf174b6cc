"""Sizes declared dynamic that a guard in the code constrains, on the guard's line: a range the code narrows (`if x.shape[0] <= 6:`, an `assert`, a library's size check), a
size tied to another declared as its own dimension, an int input the code specializes. torch
says which dimension and what value, never where: capture records every size fact with its
stack (`internals.shape_facts_recorded`), and the finding goes on the line that made it — a
warning when the export went on (the stock exporter applied torch's suggested fix, or narrowed a
hint's range), torch's refusal moved there when it did not — the dynamic-shapes factory related.

Real code: kornia's LoFTR position encoding checks the input size against its table
(kornia/feature/loftr/utils/position_encoding.py, `if x.size(2) > self.pe.size(2) or x.size(3) >
self.pe.size(3):`, found by reading it), which bounds a dynamic height and width; no workspace
line is on that chain, so the finding is at the model's definition with that library line
related. The others are transcribed from torch's own suites, each named in its test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

LOFTR = '''
    import torch
    from torch.export import Dim
    from kornia.feature.loftr.utils.position_encoding import PositionEncodingSine


    def build():
        return PositionEncodingSine(8, max_shape=(32, 32)).eval()


    def inputs():
        return (torch.randn(1, 8, 16, 24),)


    def named():
        return {"x": {2: Dim("height"), 3: Dim("width")}}


    def hinted():
        return {"x": {2: Dim.AUTO(min=4, max=64), 3: None}}


    def disjoint():
        return {"x": {2: Dim.DYNAMIC(min=40, max=64), 3: None}}
'''


def _loftr(root: Path, shapes: str):
    write(root, "loftr.py", LOFTR)
    return shared_pipeline().run(spec_for(root, "loftr", "loftr.py:build", "loftr.py:inputs",
                                          dynamic_shapes=f"loftr.py:{shapes}"))


def _library_check() -> tuple[Path, int]:
    import kornia.feature.loftr.utils.position_encoding as encoding

    library = Path(encoding.__file__).resolve()
    return library, line_of(library, "if x.size(2) > self.pe.size(2) or x.size(3) > self.pe.size(3):")


def _related(finding) -> set[tuple[Path, int]]:
    return {(Path(r.file).resolve(), r.line) for r in finding.related}


def _innermost(finding) -> tuple[Path, int]:
    return Path(finding.related[0].file).resolve(), finding.related[0].line


@pytest.mark.slow  # a library model (kornia's LoFTR position encoding)
def test_a_library_size_check_bounding_named_dims_is_a_warning_with_the_library_line(tmp_path):
    """Named Dims claim every size; the table's size check holds only up to 32: torch refuses,
    the stock exporter captures again with torch's suggested fix (`max=32`) and exports."""
    result = _loftr(tmp_path, "named")
    assert result.status == "ok"
    findings = [f for f in result.findings if f.code == "torch-export"]
    assert sorted(f.message.split(" is declared")[0] for f in findings) == ["`x` dim 2 (`height`)",
                                                                             "`x` dim 3 (`width`)"]
    library, check = _library_check()
    source = tmp_path / "loftr.py"
    for finding in findings:
        assert finding.severity == "warning"
        assert "library code holds only for sizes ≤ 32" in finding.message
        assert "Dim('height', max=32)" in finding.message or "Dim('width', max=32)" in finding.message
        assert finding.location.line == line_of(source, "def build")
        assert _innermost(finding) == (library, check)
        assert (source.resolve(), line_of(source, "def named")) in _related(finding)


@pytest.mark.slow  # a library model (kornia's LoFTR position encoding)
def test_a_hint_range_the_library_narrows_is_a_warning_with_the_library_line(tmp_path):
    """Dim.AUTO(min=4, max=64): torch narrows a hint's range silently, to [4, 32]."""
    result = _loftr(tmp_path, "hinted")
    assert result.status == "ok"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.severity == "warning"
    assert finding.message.startswith("`x` dim 2 is declared dynamic (sizes in [4, 64]), but library code holds "
                                      "only for sizes ≤ 32: torch.export narrowed it to [4, 32]")
    assert _innermost(finding) == _library_check()


@pytest.mark.slow  # a library model (kornia's LoFTR position encoding)
def test_a_hint_range_the_library_contradicts_entirely_is_the_error_with_the_library_line(tmp_path):
    """Dim.DYNAMIC(min=40, max=64) against sizes ≤ 32: torch refuses ("conflicting with the
    inferred min/max range") and names the dimension only."""
    result = _loftr(tmp_path, "disjoint")
    assert result.status == "failed"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.severity == "error"
    assert finding.message.startswith("`x` dim 2 is declared dynamic (sizes in [40, 64]), but library code holds "
                                      "only for sizes ≤ 32, so torch.export refused the declaration")
    assert "conflicting with the inferred min/max range" in finding.message  # torch's own words kept
    assert finding.location.line == line_of(tmp_path / "loftr.py", "def build")
    assert _innermost(finding) == _library_check()


UPSTREAM = '''
    import torch
    from torch import nn


    class DynamicShapeAssert(nn.Module):
        def forward(self, x):
            # assertion with error message
            assert x.shape[0] > 2, f"{x.shape[0]} is greater than 2"
            # assertion without error message
            assert x.shape[0] > 1
            return x


    def assert_inputs():
        return (torch.randn(3, 2),)


    def assert_shapes():
        return {"x": {0: torch.export.Dim("dim0_x")}}


    class SuggestedFixes(nn.Module):
        def forward(self, x, c):
            if x.shape[0] <= 6:
                return x + 1, c + 2
            else:
                return x - 1, c - 2


    def fixes_inputs():
        return (torch.ones(5), torch.ones(4))


    def fixes_shapes():
        dim = torch.export.Dim("dim", min=3)
        return ({0: dim}, None)


    class DerivedDim(nn.Module):
        def forward(self, x, y):
            return x + y[1:]


    def derived_inputs():
        return (torch.randn(5), torch.randn(6))


    def derived_shapes():
        dimx = torch.export.Dim("dimx", min=3, max=6)
        dimy = torch.export.Dim("dimy", min=4, max=7)  # doesn't work
        return {"x": {0: dimx}, "y": {0: dimy}}
'''


def _upstream(root: Path, model: str, inputs: str, shapes: str):
    path = write(root, "upstream.py", UPSTREAM)
    return path, shared_pipeline().run(spec_for(root, model.lower(), f"upstream.py:{model}", f"upstream.py:{inputs}",
                                                dynamic_shapes=f"upstream.py:{shapes}"))


def test_an_assert_raising_the_lower_bound_is_a_warning_on_the_assert(tmp_path):
    """ExportDB's `dynamic_shape_assert` (torch/_export/db/examples/dynamic_shape_assert.py, run
    by test/export/test_db.py), with its dimension named: `assert x.shape[0] > 2` needs ≥ 3."""
    path, result = _upstream(tmp_path, "DynamicShapeAssert", "assert_inputs", "assert_shapes")
    assert result.status == "ok"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.severity == "warning"
    assert finding.location.line == line_of(path, "assert x.shape[0] > 2")
    assert finding.message.startswith("`x` dim 0 (`dim0_x`) is declared dynamic, but this line holds only for "
                                      "sizes ≥ 3: torch.export narrowed it to [3, ∞)")
    assert line_of(path, "def assert_shapes") in [r.line for r in finding.related]


def test_a_branch_on_the_size_capping_the_range_is_a_warning_on_the_branch(tmp_path):
    """test/export/test_export.py, test_non_strict_dynamic_shapes_suggested_fixes: torch's
    suggested fix is `dim = Dim('dim', min=3, max=6)`; the stock exporter applies it."""
    path, result = _upstream(tmp_path, "SuggestedFixes", "fixes_inputs", "fixes_shapes")
    assert result.status == "ok"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.location.line == line_of(path, "if x.shape[0] <= 6:")
    assert "holds only for sizes ≤ 6: torch.export narrowed it to [3, 6]" in finding.message
    assert "`dim = Dim('dim', min=3, max=6)`" in finding.message


def test_a_size_tied_to_another_named_dim_is_a_warning_on_the_line_that_ties_them(tmp_path):
    """test/export/test_export.py, test_derived_dim_basic: `x + y[1:]` makes `dimy` = `dimx` + 1,
    which torch suggests and the stock exporter applies."""
    path, result = _upstream(tmp_path, "DerivedDim", "derived_inputs", "derived_shapes")
    assert result.status == "ok"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.location.line == line_of(path, "return x + y[1:]")
    assert finding.message.startswith("`y` dim 0 (`dimy`) is declared dynamic, but this line ties it to `x` dim 0 "
                                      "(`dimx`): `y` dim 0 = `x` dim 0 + 1")
    assert "`dimy = dimx + 1`" in finding.message


def test_an_int_input_the_code_specializes_is_a_warning_on_the_comparison(tmp_path):
    """An int input declared dynamic (Dim.DYNAMIC) and compared with a number: non-strict capture
    refuses, strict capture fixes the int silently and exports. Written here: no library model
    or torch test has such an int input."""
    path = write(tmp_path, "scalar.py", '''
        import torch
        from torch import nn


        class Scale(nn.Module):
            def forward(self, x, n):
                if n == 4:
                    return x * 2
                return x * n


        def inputs():
            return (torch.randn(3, 4), 4)


        def shapes():
            return {"x": None, "n": torch.export.Dim.DYNAMIC}
    ''')
    result = shared_pipeline().run(spec_for(tmp_path, "scale", "scalar.py:Scale", "scalar.py:inputs",
                                            dynamic_shapes="scalar.py:shapes"))
    assert result.status == "ok"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.location.line == line_of(path, "if n == 4:")
    assert finding.message.startswith("`n` is declared dynamic, but this line fixes it to 4")
