"""Configuration loading and validation (server/config.py) on real config files.

Every mistake must become a `config` finding on the offending line, with the columns of the
offending key or value, so the editor underlines exactly that and `onnxlens check` prints it.
Expected lines are found by searching the config text, not hard-coded.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support.workspace import line_of
from onnxlens.server.config import find_config, load_config

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def write_workspace(root: Path, config: str, name: str = "pyproject.toml") -> Path:
    """A workspace with models/net.py (never imported here) and the given config file."""
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "models" / "net.py").write_text("def build():\n    pass\n\ndef inputs():\n    pass\n")
    path = root / name
    path.write_text(textwrap.dedent(config).lstrip())
    return path


def column_of(path: Path, line: int, needle: str) -> int:
    return path.read_text().splitlines()[line - 1].index(needle) + 1


def only_finding(path: Path):
    workspace = load_config(path)
    assert len(workspace.findings) == 1, [f.message for f in workspace.findings]
    finding = workspace.findings[0]
    assert finding.code == "config" and finding.severity == "error" and finding.stage == "load"
    assert finding.location.file == str(path.resolve())
    return workspace, finding


def assert_spans(finding, path: Path, line: int, text: str) -> None:
    """The finding is on `line` and covers exactly `text` there."""
    column = column_of(path, line, text)
    assert (finding.location.line, finding.location.column) == (line, column)
    assert (finding.location.end_line, finding.location.end_column) == (line, column + len(text))
    assert finding.source_line == path.read_text().splitlines()[line - 1]


VALID_TARGET = '''
    [[tool.onnxlens.target]]
    name = "net"
    model = "models/net.py:build"
    inputs = "models/net.py:inputs"
'''


# --- the happy path ------------------------------------------------------------------------

def test_examples_workspace_loads_three_targets_with_resolved_paths():
    config = find_config(EXAMPLES)
    assert config == EXAMPLES / "pyproject.toml"
    workspace = load_config(config)
    assert workspace.findings == []
    assert [t.name for t in workspace.targets] == ["mlp", "encoder", "spectral"]
    assert workspace.output_dir == EXAMPLES / ".onnxlens"
    mlp, encoder, spectral = workspace.targets
    assert mlp.root == str(EXAMPLES)
    assert mlp.output == str(EXAMPLES / ".onnxlens" / "mlp.onnx")
    assert mlp.report == str(EXAMPLES / ".onnxlens" / "reports" / "mlp.md")
    assert encoder.dynamic_shapes == "models/encoder.py:dynamic_shapes"
    assert spectral.model == "models/spectral.py:SpectralNet" and spectral.dynamic_shapes is None
    assert all(t.verify is True and t.timeout == 120.0 for t in workspace.targets)
    for occurrence, name in enumerate(["mlp", "encoder", "spectral"], start=1):
        assert workspace.target_lines[name] == line_of(config, "[[tool.onnxlens.target]]", occurrence)


def test_onnxlens_toml_top_level_keys_overrides_and_defaults(tmp_path):
    path = write_workspace(tmp_path, '''
        output-dir = "build/onnx"
        verify = false
        timeout = 30
        opset = 18
        memory-limit = 2048

        [[target]]
        model = "models/net.py:Build"
        inputs = "models/net.py:inputs"

        [[target]]
        name = "second"
        model = "models.net:build"
        inputs = "models.net:inputs"
        dynamic-shapes = "models/net.py:build"
        custom-translations = "models/net.py:inputs"
        output = "out/second.onnx"
        verify = true
        timeout = 7.5
        opset = 20
        memory-limit = 512
        input-names = ["x"]
        output-names = ["y", "z"]
    ''', name="onnxlens.toml")
    assert find_config(tmp_path / "models") == path  # searched upward
    workspace = load_config(path)
    assert workspace.findings == []
    first, second = workspace.targets
    # Default name: the callable's name, lowercased.
    assert first.name == "build"
    assert first.output == str(tmp_path / "build" / "onnx" / "build.onnx")
    assert first.report == str(tmp_path / "build" / "onnx" / "reports" / "build.md")
    assert (first.verify, first.timeout, first.opset, first.memory_limit_mb) == (False, 30.0, 18, 2048)
    assert second.output == str(tmp_path / "out" / "second.onnx")
    assert (second.verify, second.timeout, second.opset, second.memory_limit_mb) == (True, 7.5, 20, 512)
    assert second.input_names == ["x"] and second.output_names == ["y", "z"]
    assert second.custom_translations == "models/net.py:inputs"
    assert workspace.target_lines == {"build": line_of(path, "[[target]]", 1),
                                      "second": line_of(path, "[[target]]", 2)}


def test_pyproject_without_onnxlens_table_is_not_a_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_config(tmp_path) is None
    # Named explicitly, it is loaded, and says what is missing.
    workspace, finding = only_finding(tmp_path / "pyproject.toml")
    assert "no [tool.onnxlens] table" in finding.message
    assert workspace.targets == []


# --- each mistake on its line --------------------------------------------------------------

def test_invalid_toml_is_reported_at_the_parser_position(tmp_path):
    path = write_workspace(tmp_path, '''
        [tool.onnxlens]
        verify = true
        timeout = 12 seconds
    ''' + VALID_TARGET)
    workspace, finding = only_finding(path)
    line = line_of(path, "timeout = 12 seconds")
    assert finding.location.line == line
    assert finding.location.column == column_of(path, line, "seconds")  # where tomllib stopped
    assert finding.message.startswith("invalid TOML: ")
    assert "(at line" not in finding.message  # the position is in the location, not the text
    assert workspace.targets == []


def test_invalid_toml_at_end_of_document_lands_on_the_last_line(tmp_path):
    path = write_workspace(tmp_path, '''
        [tool.onnxlens]
        timeout = 10
        [[tool.onnxlens.target]]
        model = "models/net.py:build
    ''')
    _, finding = only_finding(path)
    assert finding.location.line == line_of(path, 'model = "models/net.py:build')


def test_unknown_key_suggests_the_known_one(tmp_path):
    path = write_workspace(tmp_path, '''
        [tool.onnxlens]
        verfy = false
    ''' + VALID_TARGET)
    workspace, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, "verfy"), "verfy")
    assert "unknown key `verfy`" in finding.message and "did you mean `verify`" in finding.message
    assert [t.name for t in workspace.targets] == ["net"]  # a global mistake leaves the target


def test_unknown_key_in_a_target_excludes_only_that_target(tmp_path):
    path = write_workspace(tmp_path, VALID_TARGET + '''
    [[tool.onnxlens.target]]
    name = "broken"
    model = "models/net.py:build"
    inputs = "models/net.py:inputs"
    dynamic_shapes = "models/net.py:build"
    ''')
    workspace, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, "dynamic_shapes"), "dynamic_shapes")
    assert "did you mean `dynamic-shapes`" in finding.message
    assert [t.name for t in workspace.targets] == ["net"]
    # The broken target is still known by name and place (for --target and the editor).
    assert workspace.target_lines["broken"] == line_of(path, "[[tool.onnxlens.target]]", 2)


@pytest.mark.parametrize(("line_text", "value", "expected"), [
    ('timeout = "120"', '"120"', "`timeout` must be a positive number of seconds, not a string"),
    ("timeout = -1", "-1", "`timeout` must be a positive number of seconds, not an integer"),
    ('verify = "yes"  # a comment', '"yes"', "`verify` must be true or false, not a string"),
    ("opset = 20.5", "20.5", "`opset` must be a positive integer"),
    ("memory-limit = true", "true", "`memory-limit` must be a positive integer (megabytes), not a boolean"),
    ('source-paths = "strip"', '"strip"', '`source-paths` must be "absolute" or "relative" or "none", not'),
    ("profile = 1", "1", "`profile` must be true or false, not an integer"),
    ('input-names = "x"', '"x"', "`input-names` must be an array of non-empty strings, not a string"),
    ('extra-decompositions = ["index_reduce"]', '["index_reduce"]',
     '`extra-decompositions`: "index_reduce" is not an op name: write namespace.op or namespace.op.overload'),
    ("model = 3", "3", "`model` must be a reference"),
    ('rtol = "1e-3"', '"1e-3"', "`rtol` must be a number (a tolerance, e.g. 1e-4), not a string"),
    ("atol = -1e-5", "-1e-5", "`atol` must be a finite number >= 0, not -1e-05"),
    ("rtol = nan", "nan", "`rtol` must be a finite number >= 0, not nan"),
    ("atol = inf", "inf", "`atol` must be a finite number >= 0, not inf"),
    ("rtol = true", "true", "`rtol` must be a number (a tolerance, e.g. 1e-4), not a boolean"),
    ("second-shape = 0", "0", "`second-shape` must be true or false, not an integer"),
    ('verify-inputs = "tiny"', '"tiny"', '`verify-inputs` must be "example" or "small", not a string ("tiny")'),
    ('name = "a b"', '"a b"', "`name` may contain only letters"),
])
def test_wrong_type_is_reported_on_the_value(tmp_path, line_text, value, expected):
    key = line_text.split(" ")[0]
    base = {"name": '"net"', "model": '"models/net.py:build"', "inputs": '"models/net.py:inputs"'}
    body = "\n".join(f"{k} = {v}" for k, v in base.items() if k != key)
    path = write_workspace(tmp_path, f"[[tool.onnxlens.target]]\n{body}\n{line_text}\n")
    workspace, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, line_text), value)
    assert finding.message.startswith(expected), finding.message
    assert workspace.targets == []


def test_source_paths_is_a_global_default_and_a_target_setting(tmp_path):
    path = write_workspace(tmp_path, '[tool.onnxlens]\nsource-paths = "relative"\n' + VALID_TARGET + '''
    [[tool.onnxlens.target]]
    name = "stripped"
    model = "models/net.py:build"
    inputs = "models/net.py:inputs"
    source-paths = "none"
    ''')
    workspace = load_config(path)
    assert workspace.findings == []
    assert {t.name: t.source_paths for t in workspace.targets} == {"net": "relative", "stripped": "none"}


def test_profile_is_off_unless_the_config_turns_it_on_globally_or_per_target(tmp_path):
    path = write_workspace(tmp_path, VALID_TARGET + '''
    [[tool.onnxlens.target]]
    name = "profiled"
    model = "models/net.py:build"
    inputs = "models/net.py:inputs"
    profile = true
    ''')
    assert {t.name: t.profile for t in load_config(path).targets} == {"net": False, "profiled": True}
    path.write_text(path.read_text().replace("[[tool.onnxlens.target]]", "[tool.onnxlens]\nprofile = true\n\n"
                                             "[[tool.onnxlens.target]]", 1))
    assert all(t.profile for t in load_config(path).targets)


def test_verification_settings_are_global_defaults_and_target_settings(tmp_path):
    path = write_workspace(tmp_path, '[tool.onnxlens]\nrtol = 1e-2\natol = 0\nverify-inputs = "small"\n' + VALID_TARGET + '''
    [[tool.onnxlens.target]]
    name = "strict"
    model = "models/net.py:build"
    inputs = "models/net.py:inputs"
    rtol = 1e-5
    verify-inputs = "example"
    second-shape = false
    ''')
    workspace = load_config(path)
    assert workspace.findings == []
    settings = {t.name: (t.rtol, t.atol, t.verify_inputs, t.second_shape) for t in workspace.targets}
    assert settings == {"net": (1e-2, 0.0, "small", True), "strict": (1e-5, 0.0, "example", False)}
    assert isinstance(workspace.targets[0].atol, float)  # an integer in TOML is a tolerance too


def test_without_tolerance_settings_each_dtype_has_its_default(tmp_path):
    workspace = load_config(write_workspace(tmp_path, VALID_TARGET))
    (target,) = workspace.targets
    assert (target.rtol, target.atol, target.verify_inputs, target.second_shape) == (None, None, "example", True)


def test_a_bad_global_tolerance_is_reported_and_the_targets_keep_the_defaults(tmp_path):
    path = write_workspace(tmp_path, '[tool.onnxlens]\natol = "small"\n' + VALID_TARGET)
    workspace, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, 'atol = "small"'), '"small"')
    assert [(t.name, t.atol) for t in workspace.targets] == [("net", None)]


def test_extra_decompositions_reach_the_target(tmp_path):
    path = write_workspace(tmp_path, VALID_TARGET + 'extra-decompositions = ["aten.index_reduce.default", "aten.put"]\n')
    workspace = load_config(path)
    assert workspace.findings == []
    assert workspace.targets[0].extra_decompositions == ["aten.index_reduce.default", "aten.put"]


def test_missing_required_keys_are_reported_on_the_target_header(tmp_path):
    path = write_workspace(tmp_path, VALID_TARGET + '''
    [[tool.onnxlens.target]]
    name = "incomplete"
    ''')
    workspace = load_config(path)
    header = line_of(path, "[[tool.onnxlens.target]]", 2)
    assert sorted(f.message.split("`")[1] for f in workspace.findings) == ["inputs", "model"]
    for finding in workspace.findings:
        assert "missing the required key" in finding.message
        assert_spans(finding, path, header, "[[tool.onnxlens.target]]")
    assert [t.name for t in workspace.targets] == ["net"]


@pytest.mark.parametrize(("reference", "expected"), [
    ("models/net.py", 'names no callable (add ":NAME")'),
    ("models/net.py:1build", "is not a Python name"),
    ("models/net-x:build", "is neither a Python file"),
])
def test_bad_reference_syntax_is_reported_on_the_value(tmp_path, reference, expected):
    path = write_workspace(tmp_path, f'''
        [[tool.onnxlens.target]]
        model = "{reference}"
        inputs = "models/net.py:inputs"
    ''')
    workspace, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, "model ="), f'"{reference}"')
    assert expected in finding.message
    assert workspace.targets == []


def test_missing_file_is_reported_with_the_closest_existing_file(tmp_path):
    path = write_workspace(tmp_path, '''
        [[tool.onnxlens.target]]
        model = "models/net.py:build"
        inputs = "models/nte.py:inputs"
    ''')
    workspace, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, "inputs ="), '"models/nte.py:inputs"')
    assert "file models/nte.py does not exist" in finding.message
    assert "did you mean models/net.py?" in finding.message
    assert workspace.targets == []


def test_module_references_are_not_checked_without_an_import(tmp_path):
    # package.module:CALLABLE may be installed anywhere: only the worker's import can tell.
    path = write_workspace(tmp_path, '''
        [[tool.onnxlens.target]]
        model = "somewhere.else:build"
        inputs = "somewhere.else:inputs"
    ''')
    workspace = load_config(path)
    assert workspace.findings == [] and [t.name for t in workspace.targets] == ["build"]


def test_duplicate_name_is_reported_on_the_second_target(tmp_path):
    path = write_workspace(tmp_path, VALID_TARGET + VALID_TARGET.replace("build", "inputs", 1))
    workspace, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, 'name = "net"', 2), '"net"')
    assert "duplicate target name `net`" in finding.message
    assert [(r.line, r.message) for r in finding.related] == [
        (line_of(path, 'name = "net"', 1), "`net` is first defined here")]
    assert [t.model for t in workspace.targets] == ["models/net.py:build"]


def test_duplicate_derived_name_is_reported_on_the_model(tmp_path):
    path = write_workspace(tmp_path, '''
        [[tool.onnxlens.target]]
        model = "models/net.py:build"
        inputs = "models/net.py:inputs"

        [[tool.onnxlens.target]]
        model = "models.net:build"
        inputs = "models/net.py:inputs"
    ''')
    _, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, 'model = "models.net:build"'), '"models.net:build"')
    assert "duplicate target name `build`" in finding.message


def test_no_targets_is_reported_on_the_onnxlens_table(tmp_path):
    path = write_workspace(tmp_path, '''
        [project]
        name = "x"

        [tool.onnxlens]
        timeout = 10
    ''')
    workspace, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, "[tool.onnxlens]"), "[tool.onnxlens]")
    assert finding.message.startswith("no targets")
    assert workspace.targets == []


def test_single_bracket_target_table_is_explained(tmp_path):
    path = write_workspace(tmp_path, VALID_TARGET.replace("[[tool.onnxlens.target]]", "[tool.onnxlens.target]"))
    _, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, "[tool.onnxlens.target]"), "[tool.onnxlens.target]")
    assert "array of tables" in finding.message and "two brackets" in finding.message


def test_misspelled_target_table_is_reported_on_its_header(tmp_path):
    path = write_workspace(tmp_path, "[tool.onnxlens]\n" + VALID_TARGET.replace(".target]]", ".targets]]"))
    workspace = load_config(path)
    unknown = [f for f in workspace.findings if "unknown key" in f.message]
    assert len(unknown) == 1 and "did you mean `target`" in unknown[0].message
    assert unknown[0].location.line == line_of(path, "[[tool.onnxlens.targets]]")
    assert any(f.message.startswith("no targets") for f in workspace.findings)


def test_lines_inside_multiline_values_are_not_taken_for_keys(tmp_path):
    # `timeout = ` inside the multi-line string and the array must not be found as keys: the
    # wrong-type finding belongs on the real `timeout` line below them.
    path = write_workspace(tmp_path, '''
        [[tool.onnxlens.target]]
        name = """net
        timeout = 1"""
        model = "models/net.py:build"
        inputs = "models/net.py:inputs"
        input-names = [
            "timeout = 2",  # a comment with [ brackets
        ]
        timeout = "soon"
    ''')
    workspace = load_config(path)
    name, timeout = workspace.findings  # the name has a newline: not a file name
    assert name.message.startswith("`name` may contain only") and name.location.line == line_of(path, "name =")
    assert timeout.message.startswith("`timeout` must be")
    assert_spans(timeout, path, line_of(path, 'timeout = "soon"'), '"soon"')


def test_unreadable_config_is_a_finding_not_an_exception(tmp_path):
    path = tmp_path / "onnxlens.toml"
    path.write_bytes(b"timeout = 10\n\xff\xfe\n")
    _, finding = only_finding(path)
    assert finding.location.line == 1
    assert "cannot read the config file" in finding.message


def test_two_targets_writing_one_onnx_file_is_reported_on_the_second_output(tmp_path):
    path = write_workspace(tmp_path, VALID_TARGET + '''
    output = "shared.onnx"

    [[tool.onnxlens.target]]
    name = "copy"
    model = "models/net.py:build"
    inputs = "models/net.py:inputs"
    output = "./shared.onnx"
    ''')
    workspace, finding = only_finding(path)
    assert_spans(finding, path, line_of(path, 'output = "./shared.onnx"'), '"./shared.onnx"')
    assert "writes the same file as target `net`" in finding.message
    assert [t.name for t in workspace.targets] == ["net"]


def test_a_target_whose_output_is_another_targets_graph_only_file_is_reported(tmp_path):
    # Target `net` writes .onnxlens/net.graph.onnx when its model is weights-free (on the meta
    # device): a target named `net.graph` would write its real model to the same file.
    path = write_workspace(tmp_path, VALID_TARGET + '''

    [[tool.onnxlens.target]]
    name = "net.graph"
    model = "models/net.py:build"
    inputs = "models/net.py:inputs"
    ''')
    workspace, finding = only_finding(path)
    assert finding.location.line == line_of(path, 'name = "net.graph"') - 1  # its [[target]] header
    assert "writes the same file as target `net`" in finding.message and "net.graph.onnx" in finding.message
    assert [t.name for t in workspace.targets] == ["net"]


def test_a_source_file_path_finds_the_config_above_it(tmp_path):
    path = write_workspace(tmp_path, VALID_TARGET)
    assert find_config(tmp_path / "models" / "net.py") == path
    assert find_config(path) == path


def test_settings_in_the_wrong_place_are_explained(tmp_path):
    path = write_workspace(tmp_path, '''
        [tool.onnxlens]
        verify = false

        [[target]]
        model = "models/net.py:build"
        inputs = "models/net.py:inputs"
        output-dir = "out"
    ''', name="onnxlens.toml")
    workspace = load_config(path)
    tool, output_dir = workspace.findings
    assert tool.location.line == line_of(path, "[tool.onnxlens]")
    assert "at the top level, without [tool.onnxlens]" in tool.message
    assert_spans(output_dir, path, line_of(path, "output-dir"), "output-dir")
    assert "`output-dir` is a global setting" in output_dir.message
