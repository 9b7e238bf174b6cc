"""Findings -> LSP diagnostics (the one conversion module), the per-file diagnostic store, and
editor settings parsing. Plain data in, lsprotocol objects out: no server process needed."""

from __future__ import annotations

from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from onnxlens.exporter.types import Finding, Location, Related
from onnxlens.server.lsp.capabilities import ClientFeatures
from onnxlens.server.lsp.diagnostics import DiagnosticStore, Entry, to_diagnostic
from onnxlens.server.lsp.settings import Settings, parse_settings

LINES = {("/w/m.py", 20): "        eig = torch.linalg.eigvals(h).real\n", ("/w/s.py", 4): "    return f(x)"}


def line_text(path: str, line: int) -> str | None:
    return LINES.get((path, line))


ALL = ClientFeatures(related_information=True, code_description=True)


def test_one_based_columns_become_zero_based_characters_with_exclusive_end():
    finding = Finding(code="unsupported-op", message="m", stage="scan",
                      location=Location(file="/w/m.py", line=20, column=15, end_line=20, end_column=38))
    d = to_diagnostic(finding, line_text, ALL)
    assert (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == (19, 14, 19, 37)
    assert LINES[("/w/m.py", 20)][14:37] == "torch.linalg.eigvals(h)"
    assert d.source == "onnxlens" and d.code == "unsupported-op"
    assert d.severity == lsp.DiagnosticSeverity.Error


def test_no_end_column_covers_the_rest_of_the_line_text_without_indentation():
    finding = Finding(code="torch-export", message="m", stage="capture", location=Location(file="/w/m.py", line=20))
    d = to_diagnostic(finding, line_text, ALL)
    text = LINES[("/w/m.py", 20)]
    assert (d.range.start.character, d.range.end.character) == (8, len(text.rstrip()))
    assert d.range.start.line == d.range.end.line == 19


def test_unknown_line_text_covers_the_whole_line():
    finding = Finding(code="crash", message="m", stage="load", location=Location(file="/w/gone.py", line=3))
    d = to_diagnostic(finding, line_text, ALL)
    assert (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == (2, 0, 3, 0)


def test_mismatch_is_a_warning_and_related_frames_and_docs_link_are_kept():
    finding = Finding(code="mismatch", message="m", stage="verify", docs_url="https://example.org/x",
                      location=Location(file="/w/m.py", line=20, column=9),
                      related=[Related(file="/w/s.py", line=4, message="called from here")])
    d = to_diagnostic(finding, line_text, ALL)
    assert d.severity == lsp.DiagnosticSeverity.Warning
    assert d.code_description.href == "https://example.org/x"
    [related] = d.related_information
    assert related.message == "called from here"
    assert related.location.uri == "file:///w/s.py" and related.location.range.start.line == 3
    assert related.location.range.start.character == 4  # where the text of the line starts


def test_what_a_client_did_not_announce_is_left_out():
    finding = Finding(code="mismatch", message="m", stage="verify", docs_url="https://example.org/x",
                      location=Location(file="/w/m.py", line=20),
                      related=[Related(file="/w/s.py", line=4, message="called from here")])
    neovim_07 = ClientFeatures.of(client_capabilities("neovim@v0.7.0"))
    vscode = ClientFeatures.of(client_capabilities("visual-studio-code"))
    assert (neovim_07.related_information, neovim_07.code_description) == (True, False)
    assert (vscode.related_information, vscode.code_description) == (True, True)
    d = to_diagnostic(finding, line_text, neovim_07)
    assert d.code_description is None and d.related_information


def test_a_finding_without_location_has_no_diagnostic_of_its_own():
    assert to_diagnostic(Finding(code="crash", message="m", stage="load"), line_text, ALL) is None


def _entry(owner: str, file: str) -> Entry:
    finding = Finding(code="unsupported-op", message=owner, stage="scan", location=Location(file=file, line=1))
    return Entry(to_diagnostic(finding, line_text, ALL), finding, ("cfg", owner))


def test_store_publishes_the_union_per_file_and_reports_files_to_clear():
    store = DiagnosticStore()
    assert store.replace(("cfg", "a"), [_entry("a", "/w/h.py"), _entry("a", "/w/m.py")]) == {"/w/h.py", "/w/m.py"}
    assert store.replace(("cfg", "b"), [_entry("b", "/w/h.py")]) == {"/w/h.py"}
    assert sorted(d.message for d in store.diagnostics("/w/h.py")) == ["a", "b"]
    # Target a is fixed: both its files must be republished; h.py keeps b's diagnostic.
    assert store.replace(("cfg", "a"), []) == {"/w/h.py", "/w/m.py"}
    assert [d.message for d in store.diagnostics("/w/h.py")] == ["b"]
    assert store.diagnostics("/w/m.py") == []


def test_settings_from_either_shape_and_bad_values_keep_the_previous_value():
    settings, problems = parse_settings({"onnxlens": {"exportOnSave": False, "jobs": 2, "logLevel": "DEBUG"}})
    assert problems == []
    assert (settings.export_on_save, settings.jobs, settings.log_level) == (False, 2, "debug")
    settings, problems = parse_settings({"debounceMs": -5, "verify": "yes", "colour": "red"}, settings)
    assert settings.debounce_ms == Settings().debounce_ms and settings.verify is None
    assert len(problems) == 3 and any("colour" in p for p in problems)
    assert parse_settings(None) == (Settings(), [])
    assert parse_settings(["x"])[1]


def test_the_profile_setting_overrides_the_configs_and_the_cost_lens_threshold_is_a_percentage():
    from onnxlens.exporter.types import TargetSpec

    spec = TargetSpec(name="t", root="/w", model="m.py:M", inputs="m.py:i", output="/w/t.onnx", report="/w/t.md",
                      verify=False, profile=True)
    assert Settings().applied_to(spec) == spec  # null: as the config says
    settings, problems = parse_settings({"profile": False, "costLensThreshold": 12.5})
    assert problems == [] and settings.cost_lens_threshold == 12.5
    assert (settings.applied_to(spec).profile, settings.applied_to(spec).verify) == (False, False)
    both, _ = parse_settings({"verify": True, "profile": True})
    assert (both.applied_to(spec).verify, both.applied_to(spec).profile) == (True, True)
    kept, problems = parse_settings({"costLensThreshold": 101, "profile": "on"}, settings)
    assert (kept.cost_lens_threshold, kept.profile) == (12.5, False) and len(problems) == 2


def test_a_suggested_fix_becomes_a_quick_fix_with_a_workspace_edit():
    # Unit level: the example models produce no suggested edit; capture_failures.py suggests
    # torch._check insertions for data-dependent guards, which this converts.
    from onnxlens.exporter.types import SuggestedEdit
    from onnxlens.server.lsp.features.code_actions import finding_edit_action

    suggested = SuggestedEdit(title="Insert torch._check(u0 >= 0)", file="/w/m.py", line=20, column=1, end_line=20,
                              end_column=1, new_text="        torch._check(u0 >= 0)\n")
    diagnostic = _entry("a", "/w/m.py").diagnostic
    action = finding_edit_action(suggested, diagnostic)
    assert action.kind == lsp.CodeActionKind.QuickFix and action.diagnostics == [diagnostic]
    [edit] = action.edit.changes["file:///w/m.py"]
    assert edit.new_text == "        torch._check(u0 >= 0)\n"
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.line, edit.range.end.character) == (
        19, 0, 19, 0)  # an insertion before the line


def test_columns_count_in_the_clients_units_on_lines_with_non_ascii_text():
    text = '    s = "héllo😀"; y = torch.special.zeta(a, b)'
    column = text.index("torch") + 1  # code points, 1-based
    finding = Finding(code="unsupported-op", message="m", stage="scan", location=Location(
        file="/w/u.py", line=1, column=column, end_line=1, end_column=column + len("torch.special.zeta(a, b)")))
    LINES[("/w/u.py", 1)] = text
    utf16 = to_diagnostic(finding, line_text, ALL).range
    # The emoji is 2 UTF-16 code units, é is 1: one unit more than code points from there on.
    assert (utf16.start.character, utf16.end.character) == (column, column + 24)
    utf8 = to_diagnostic(finding, line_text, ClientFeatures(encoding="utf-8")).range
    assert utf8.start.character == len(text[:column - 1].encode("utf-8"))
    utf32 = to_diagnostic(finding, line_text, ClientFeatures(encoding="utf-32")).range
    assert utf32.start.character == column - 1
