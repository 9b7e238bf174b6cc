"""A workspace's configuration: [tool.onnxlens] in pyproject.toml, or onnxlens.toml (same keys,
top level), read into a `Config`.

`load_config` never raises for bad content: every mistake becomes a `config` Finding on the
offending line (and the columns of the offending key or value) of the config file, so the editor
underlines it and `onnxlens check` prints it like any other problem. A target with a mistake is
left out of `Config.targets`; the other targets stay exportable.

Outputs stay in the workspace: an `output-dir` or a target's `output` that lies outside the
config's directory once `..` and symlinks are resolved is a mistake on its line, unless the
global `allow-output-outside-workspace = true` says it is meant (a shared models directory). An
output directory outside leaves every target out (each would write its report there). File
references outside the workspace are mistakes too (references.Reference.outside).

Keys (docs/configuration.md), global and per target where marked:
    output-dir (global), allow-output-outside-workspace (global), verify*, timeout*, opset*,
    memory-limit* (MB; an onnxlens extension), source-paths*, profile* (onnxruntime's profiler
    on the verification run: what each line costs),
    target: name, model, inputs, dynamic-shapes, output, input-names, output-names,
            custom-translations, extra-decompositions;
    verification, global and per target: rtol*, atol*, verify-inputs*, second-shape*;
    gate (the table [tool.onnxlens.gate], `onnxlens check --baseline`): node-count-percent,
            initializer-size-percent, verification-error-factor.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from onnxlens.exporter import references
from onnxlens.exporter.types import SOURCE_PATH_MODES, VERIFY_INPUTS, Finding, Location, Related, TargetSpec
from onnxlens.server.toml_locations import Span, TableSite, scan_tables

CONFIG_NAMES = ("onnxlens.toml", "pyproject.toml")
DEFAULT_OUTPUT_DIR = ".onnxlens"
DEFAULT_TIMEOUT = 120.0


@dataclass
class Config:
    """A config file as read: its targets, where each is declared, and its `config` findings."""

    config_file: Path  # the file the configuration came from
    root: Path  # its directory: references and output-dir are relative to it
    output_dir: Path
    targets: list[TargetSpec] = field(default_factory=list)  # the valid targets, in config order
    # name -> 1-based line of its [[target]] header, for EVERY declared target (with or without
    # config mistakes): findings without a source line can be put there.
    target_lines: dict[str, int] = field(default_factory=dict)
    # name -> reference key ("model", "inputs", ...) -> where its value is written, for the valid
    # targets: a finding about a reference no line of code can be blamed for goes there.
    reference_values: dict[str, dict[str, Location]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)  # `config` findings
    gate: dict[str, float] = field(default_factory=dict)  # the valid keys of [tool.onnxlens.gate]

    def place_in_config(self, target: str | None, finding: Finding) -> Location:
        """Where a finding without a source location is shown in the config: on the value of the
        reference it is about (`Finding.reference`), else on its target's [[target]] header line
        (the first line for a config finding)."""
        written = self.reference_values.get(target or "", {}).get(finding.reference or "")
        return written or Location(str(self.config_file), self.target_lines.get(target or "", 1))


def find_config(start: Path) -> Path | None:
    """The config file for `start` (a file or directory), searching upward; None if there is none.

    A pyproject.toml counts only if it has a [tool.onnxlens] table. A .toml file is taken as the
    config itself; any other file (say models/mlp.py) starts the search in its directory.
    """
    start = start.resolve()
    if start.is_file():
        if start.suffix == ".toml":
            return start
        start = start.parent
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file() and _has_onnxlens_table(candidate):
                return candidate
    return None


def _has_onnxlens_table(path: Path) -> bool:
    if path.name != "pyproject.toml":
        return True
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    try:
        return "onnxlens" in tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        # A broken file that is meant for us must be found, so its error can be shown.
        return "[tool.onnxlens" in text


def load_config(config_file: Path) -> Config:
    """Read and validate a config file. Never raises for bad content: mistakes become findings."""
    config_file = config_file.resolve()
    root = config_file.parent
    config = Config(config_file=config_file, root=root, output_dir=root / DEFAULT_OUTPUT_DIR)
    _Loader(config).load()
    return config


# --- value checks: each returns an error message, or None when the value is fine -------------

def _toml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"


def _shown(value: Any) -> str:
    text = f'"{value}"' if isinstance(value, str) else repr(value).replace("True", "true").replace("False", "false")
    return text if len(text) <= 60 else text[:57] + "..."


def _wrong(key: str, expected: str, value: Any) -> str:
    return f"`{key}` must be {expected}, not {_toml_type(value)} ({_shown(value)})"


def _check_string(key: str, value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return _wrong(key, "a non-empty string", value)
    return None


def _check_bool(key: str, value: Any) -> str | None:
    return None if isinstance(value, bool) else _wrong(key, "true or false", value)


def _check_choice(*choices: str) -> Callable[[str, Any], str | None]:
    def check(key: str, value: Any) -> str | None:
        return None if value in choices else _wrong(key, " or ".join(f'"{c}"' for c in choices), value)
    return check


def _check_seconds(key: str, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return _wrong(key, "a positive number of seconds", value)
    return None


def _check_positive_int(what: str) -> Callable[[str, Any], str | None]:
    def check(key: str, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            return _wrong(key, what, value)
        return None
    return check


def _check_at_least(minimum: float, what: str) -> Callable[[str, Any], str | None]:
    def check(key: str, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            return _wrong(key, what, value)
        return None
    return check


def _check_tolerance(key: str, value: Any) -> str | None:
    """A tolerance: a finite number >= 0 (an integer is a number too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _wrong(key, "a number (a tolerance, e.g. 1e-4)", value)
    if not 0 <= value < float("inf"):
        return f"`{key}` must be a finite number >= 0, not {_shown(value)}"
    return None


def _check_names(key: str, value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        return _wrong(key, "an array of non-empty strings", value)
    return None


_OP_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


def _check_op_names(key: str, value: Any) -> str | None:
    """Syntax only (whether torch has the op and a decomposition of it, the export says)."""
    wrong = _check_names(key, value)
    if wrong:
        return wrong
    bad = [name for name in value if not _OP_NAME.match(name)]
    if bad:
        return (f"`{key}`: {_shown(bad[0])} is not an op name: write namespace.op or namespace.op.overload, "
                'e.g. "aten.index_reduce.default"')
    return None


_TARGET_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def _check_target_name(key: str, value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return _wrong(key, "a non-empty string", value)
    if not _TARGET_NAME.match(value) or value in (".", ".."):
        # The name becomes file names (<output-dir>/<name>.onnx, reports/<name>.md).
        return f"`{key}` may contain only letters, digits, '.', '_' and '-' (it names files), not {_shown(value)}"
    return None


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_reference(key: str, value: Any) -> str | None:
    """Syntax only: FILE.py:CALLABLE or package.module:CALLABLE (the file is checked later)."""
    if not isinstance(value, str):
        return _wrong(key, 'a reference "FILE.py:CALLABLE" or "package.module:CALLABLE"', value)
    where, colon, attr = value.rpartition(":")
    if not colon:
        return f'`{key}` must be "FILE.py:CALLABLE" or "package.module:CALLABLE": {_shown(value)} names no callable (add ":NAME")'
    if not _IDENTIFIER.match(attr):
        return f"`{key}`: {_shown(attr)} after ':' is not a Python name"
    if not where.endswith(".py") and not references.MODULE_PATH.match(where):
        return (f"`{key}`: {_shown(where)} is neither a Python file (FILE.py) nor a dotted module "
                f"name (package.module)")
    return None


# Checks of the keys allowed in the global table and in a [[target]] table.
_SHARED_CHECKS: dict[str, Callable[[str, Any], str | None]] = {
    "verify": _check_bool,
    "timeout": _check_seconds,
    "opset": _check_positive_int("a positive integer (an ONNX opset version)"),
    "memory-limit": _check_positive_int("a positive integer (megabytes)"),
    "source-paths": _check_choice(*SOURCE_PATH_MODES),
    "profile": _check_bool,
    "rtol": _check_tolerance,
    "atol": _check_tolerance,
    "verify-inputs": _check_choice(*VERIFY_INPUTS),
    "second-shape": _check_bool,
}
GLOBAL_CHECKS = {"output-dir": _check_string, "allow-output-outside-workspace": _check_bool, **_SHARED_CHECKS}
TARGET_CHECKS = {
    "name": _check_target_name,
    "model": _check_reference,
    "inputs": _check_reference,
    "dynamic-shapes": _check_reference,
    "custom-translations": _check_reference,
    "output": _check_string,
    "input-names": _check_names,
    "output-names": _check_names,
    "extra-decompositions": _check_op_names,
    **_SHARED_CHECKS,
}
# The regression gate's thresholds (server/check/gate.py has their defaults and meaning).
GATE_CHECKS = {
    "node-count-percent": _check_at_least(0, "a number of percent, 0 or more"),
    "initializer-size-percent": _check_at_least(0, "a number of percent, 0 or more"),
    "verification-error-factor": _check_at_least(1, "a factor, 1 or more"),
}
REFERENCE_KEYS = ("model", "inputs", "dynamic-shapes", "custom-translations")
REQUIRED_TARGET_KEYS = ("model", "inputs")


class _Loader:
    """One validation pass over one config file, filling a Config."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.path = config.config_file
        self.lines: list[str] = []
        self.is_pyproject = self.path.name == "pyproject.toml"
        self.prefix: tuple[str, ...] = ("tool", "onnxlens") if self.is_pyproject else ()
        self.tables: list[TableSite] = []
        self.main_site = TableSite(path=(), is_array=False, header=None)  # [tool.onnxlens]
        self.target_sites: list[TableSite] = []  # each [[tool.onnxlens.target]] header, in order
        self.defaults: dict[str, Any] = {}  # the valid global settings
        self.output_dir_outside = False  # output-dir is outside the workspace, not allowed: no target exports

    # -- findings --------------------------------------------------------------------------

    def error(self, message: str, span: Span | None, related: list[Related] | None = None) -> None:
        span = span or Span(1, 1, 1 + len(self._line(1)))
        self.config.findings.append(Finding(
            code="config",
            message=message,
            stage="load",
            location=Location(str(self.path), span.line, span.column, span.line, span.end_column),
            related=related or [],
            source_line=self._line(span.line),
        ))

    def _line(self, number: int) -> str:
        return self.lines[number - 1] if 0 < number <= len(self.lines) else ""

    def _whole_line(self, number: int) -> Span:
        text = self._line(number)
        indent = len(text) - len(text.lstrip())
        return Span(number, indent + 1, max(len(text.rstrip()), indent + 1) + 1)

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            self.error(f"cannot read the config file: {error}", Span(1, 1, 1))
            return
        self.lines = text.splitlines()
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            self.error(f"invalid TOML: {_strip_position(str(error))}", self._decode_error_span(str(error)))
            return
        self.tables = scan_tables(text)
        self.main_site = next((t for t in self.tables if t.path == self.prefix and not t.is_array), self.tables[0])
        self.target_sites = [t for t in self.tables if t.path == (*self.prefix, "target")]

        table: Any = data
        for part in self.prefix:
            table = table.get(part) if isinstance(table, dict) else None
        if table is None:
            self.error("this pyproject.toml has no [tool.onnxlens] table", None)
            return
        if not isinstance(table, dict):
            self.error("`tool.onnxlens` must be a table ([tool.onnxlens])", self._key_span(self.main_site, "onnxlens"))
            return
        self.load_global(table)
        self.load_targets(table.get("target"))

    def _decode_error_span(self, message: str) -> Span:
        match = re.search(r"\(at line (\d+), column (\d+)\)", message)
        if match:
            line, column = int(match.group(1)), int(match.group(2))
            end = max(len(self._line(line).rstrip()) + 1, column + 1)
            return Span(line, column, end)
        # "(at end of document)": the last line that has anything on it.
        last = max((i for i, text in enumerate(self.lines, 1) if text.strip()), default=1)
        return self._whole_line(last)

    def _key_span(self, site: TableSite, key: str) -> Span | None:
        found = site.keys.get(key)
        if found:
            return found.key
        # Not a `key = value` line: a sub-table header ([tool.onnxlens.KEY] or [[...KEY]])
        # after the table's own header.
        start = site.header.line if site.header else 0
        for table in self.tables:
            if table.header and table.header.line > start and table.path[:len(site.path) + 1] == (*site.path, key):
                return table.header
        return site.header

    def _value_span(self, site: TableSite, key: str) -> Span | None:
        found = site.keys.get(key)
        return found.value if found else site.header

    def check_keys(self, table: dict[str, Any], site: TableSite, checks: dict[str, Callable],
                   extra_known: tuple[str, ...], where: str) -> dict[str, Any]:
        """Report unknown and mistyped keys; return the keys that passed."""
        good = {}
        known = (*checks, *extra_known)
        for key, value in table.items():
            if key in extra_known:
                continue
            if key not in checks:
                self.error(f"unknown key `{key}` in {where}{self._unknown_key_hint(key, known)}",
                           self._key_span(site, key))
                continue
            problem = checks[key](key, value)
            if problem:
                self.error(problem, self._value_span(site, key))
                continue
            good[key] = value
        return good

    def _unknown_key_hint(self, key: str, known: tuple[str, ...]) -> str:
        if key == "tool" and not self.is_pyproject:
            return "; in onnxlens.toml the settings are at the top level, without [tool.onnxlens]"
        if key == "output-dir" and "output-dir" not in known:
            return "; `output-dir` is a global setting: move it above the first target"
        hint = difflib.get_close_matches(key, known, n=1)
        return f"; did you mean `{hint[0]}`?" if hint else f" (known keys: {', '.join(sorted(known))})"

    def load_global(self, table: dict[str, Any]) -> None:
        where = "[tool.onnxlens]" if self.is_pyproject else "onnxlens.toml"
        self.defaults = self.check_keys(table, self.main_site, GLOBAL_CHECKS, ("target", "gate"), where)
        root = self.config.root
        self.config.output_dir = (root / self.defaults.get("output-dir", DEFAULT_OUTPUT_DIR)).resolve()
        problem = self._outside_problem("output-dir", self.defaults.get("output-dir", DEFAULT_OUTPUT_DIR),
                                        self.config.output_dir)
        if problem:
            self.output_dir_outside = True
            self.error(problem + "; no target is exported",
                       self._value_span(self.main_site, "output-dir") if "output-dir" in self.defaults
                       else self.main_site.header)
        if "gate" in table:
            self.load_gate(table["gate"])

    def load_gate(self, table: Any) -> None:
        header = "[tool.onnxlens.gate]" if self.is_pyproject else "[gate]"
        site = next((t for t in self.tables if t.path == (*self.prefix, "gate") and not t.is_array), None)
        if not isinstance(table, dict):
            self.error(f"`gate` must be a table ({header})", self._key_span(self.main_site, "gate"))
            return
        if site is None:  # an inline table: its keys are on the `gate = {...}` line
            site = TableSite(path=(), is_array=False, header=self._key_span(self.main_site, "gate"))
        self.config.gate = self.check_keys(table, site, GATE_CHECKS, (), header)

    def _outside_problem(self, key: str, value: str, resolved: Path) -> str | None:
        """The mistake of an output path outside the workspace, unless that is allowed."""
        root = self.config.root
        if resolved.is_relative_to(root) or self.defaults.get("allow-output-outside-workspace"):
            return None
        return (f"`{key}` = {_shown(value)} is outside the workspace {root} (it resolves to {resolved}): onnxlens "
                "writes only inside the workspace unless `allow-output-outside-workspace = true` is set "
                "in the global settings")

    def load_targets(self, entries: Any) -> None:
        header = "[[tool.onnxlens.target]]" if self.is_pyproject else "[[target]]"
        if entries is None:
            anchor = self.main_site.header if self.main_site.header else None
            self.error(f"no targets: add a {header} table with `model` and `inputs`", anchor)
            return
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            span = self.target_sites[0].header if self.target_sites else self._value_span(self.main_site, "target")
            self.error(f"`target` must be an array of tables: write each target as {header} (two brackets)", span)
            return
        if not entries:
            self.error(f"no targets: add a {header} table with `model` and `inputs`", self._value_span(self.main_site, "target"))
            return
        seen: dict[str, Span] = {}
        # .onnx path -> the target that writes it: its output, and the graph-only .onnx it writes
        # instead for a weights-free model (`<name>.graph.onnx`: target `a.graph`'s output is
        # target `a`'s graph-only file)
        outputs: dict[str, str] = {}
        for index, entry in enumerate(entries):
            # Each [[target]] header is one array entry, in order; an inline array of tables has
            # no headers: its lines are then the `target` key's.
            if len(self.target_sites) == len(entries):
                site = self.target_sites[index]
            else:
                site = TableSite(path=(), is_array=True, header=self._key_span(self.main_site, "target"))
            spec = self.load_target(entry, site, header, seen)
            if spec is None or self.output_dir_outside:
                continue
            shared = next((path for path in (spec.output, spec.graph_output) if path in outputs), None)
            if shared is not None:
                # Two targets overwriting one file would make either result a lie.
                self.error(f"target `{spec.name}` writes the same file as target `{outputs[shared]}`: "
                           f"{shared} (set a different `output`)", self._value_span(site, "output"))
                continue
            outputs[spec.output] = outputs[spec.graph_output] = spec.name
            self.config.targets.append(spec)

    def load_target(self, entry: dict[str, Any], site: TableSite, header: str,
                    seen: dict[str, Span]) -> TargetSpec | None:
        errors_before = len(self.config.findings)
        values = self.check_keys(entry, site, TARGET_CHECKS, (), f"{header}")
        for key in REQUIRED_TARGET_KEYS:
            if key not in entry:
                self.error(f"target is missing the required key `{key}` "
                           f'({key} = "FILE.py:CALLABLE" or "package.module:CALLABLE")', site.header)
        for key in REFERENCE_KEYS:
            if key in values:
                self.check_reference_file(key, values[key], site)

        name = values.get("name")
        if name is None and "name" not in entry and "model" in values:
            name = values["model"].rpartition(":")[2].lower()
        if name is not None:
            name_span = self._value_span(site, "name") if "name" in entry else self._value_span(site, "model")
            if name in seen:
                first = seen[name]
                self.error(f"duplicate target name `{name}` (target names must be unique; set `name` to tell them apart)",
                           name_span, [Related(str(self.path), first.line, f"`{name}` is first defined here")])
                return None
            seen[name] = name_span
            if site.header is not None:
                self.config.target_lines[name] = site.header.line
        if len(self.config.findings) > errors_before or name is None:
            return None
        self.config.reference_values[name] = {
            key: Location(str(self.path), span.line, span.column, span.line, span.end_column)
            for key in REFERENCE_KEYS if key in values and (span := self._value_span(site, key)) is not None}
        spec = self.make_spec(name, values)
        if "output" in values:
            problem = self._outside_problem("output", values["output"], Path(spec.output))
            if problem:
                self.error(problem, self._value_span(site, "output"))
                return None
        return spec

    def check_reference_file(self, key: str, reference: str, site: TableSite) -> None:
        where = reference.rpartition(":")[0]
        if not where.endswith(".py"):
            return  # a module name: only an import can tell (the worker reports it)
        parsed = references.parse(reference)
        if parsed is not None and parsed.outside(self.config.root) is not None:
            self.error(parsed.outside_message(f"`{key}`", self.config.root), self._value_span(site, key))
            return
        path = self.config.root / where
        if path.is_file():
            return
        message = f"`{key}`: file {where} does not exist (relative to {self.config.root})"
        if path.parent.is_dir():
            candidates = [str(p.relative_to(self.config.root)) for p in path.parent.glob("*.py")]
            hint = difflib.get_close_matches(where, candidates, n=1)
            if hint:
                message += f"; did you mean {hint[0]}?"
        self.error(message, self._value_span(site, key))

    def make_spec(self, name: str, values: dict[str, Any]) -> TargetSpec:
        def setting(key: str, default: Any) -> Any:
            return values.get(key, self.defaults.get(key, default))

        def tolerance(key: str) -> float | None:
            value = setting(key, None)
            return None if value is None else float(value)

        root = self.config.root
        output_dir = self.config.output_dir
        output = (root / values["output"]).resolve() if "output" in values else output_dir / f"{name}.onnx"
        return TargetSpec(
            name=name,
            root=str(root),
            model=values["model"],
            inputs=values["inputs"],
            output=str(output),
            report=str(output_dir / "reports" / f"{name}.md"),
            dynamic_shapes=values.get("dynamic-shapes"),
            custom_translations=values.get("custom-translations"),
            verify=setting("verify", True),
            rtol=tolerance("rtol"),
            atol=tolerance("atol"),
            verify_inputs=setting("verify-inputs", "example"),
            second_shape=setting("second-shape", True),
            timeout=float(setting("timeout", DEFAULT_TIMEOUT)),
            opset=setting("opset", None),
            input_names=values.get("input-names"),
            output_names=values.get("output-names"),
            memory_limit_mb=setting("memory-limit", None),
            source_paths=setting("source-paths", "absolute"),
            extra_decompositions=values.get("extra-decompositions"),
            profile=setting("profile", False),
        )


def _strip_position(message: str) -> str:
    return re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)$", "", message)
