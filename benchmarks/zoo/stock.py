"""The stock exporter on one zoo target, as a user would run it: `python -m benchmarks.zoo.stock DIR TARGET OUT`.

Reads the target's `model`, `inputs` and `dynamic-shapes` references from DIR's pyproject.toml,
builds the model and calls `torch.onnx.export(model, args, OUT, kwargs=..., dynamic_shapes=...,
dynamo=True)` with every other setting at its default. Prints one JSON line:
`{"outcome": "exports" | "fails", "error": "Type: first line", "seconds": s, "traceback": "...",
"cause": "GuardOnDataDependentSymNode", "step": "capture", "location": "/abs/path.py:86"}` — for a
failure, what the differential comparison (score.py) holds onnxlens to: the class of the
exception torch's summary names (the wrapper's cause), the exporter's step that raised, and the
line torch's own message blames (`location`, see `blamed_location`), if any.

Deliberately independent of onnxlens: this is the baseline onnxlens is scored against.

`python -m benchmarks.zoo.stock --serve DIR` exports many targets of DIR, each in a child forked
from a process that imported torch and the workspace's libraries once (`serve`): the scorer's way,
the same outcome and bytes as a fresh process per target without its imports each time.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import time
import tomllib
import traceback
from pathlib import Path
from typing import Any

RESULT_PREFIX = "zoo-stock-result: "


def resolve(root: Path, reference: str) -> Any:
    """`FILE.py:NAME` relative to root, or `package.module:NAME`."""
    where, name = reference.rsplit(":", 1)
    if where.endswith(".py"):
        # As a user's script would: `from models.x import build` with the root on sys.path (the
        # module's name is in the ONNX metadata, so it must be the one onnxlens gives it).
        where = ".".join(Path(where).with_suffix("").parts)
    return getattr(importlib.import_module(where), name)


def split_inputs(value: Any) -> tuple[tuple, dict]:
    if isinstance(value, dict):
        return (), value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], tuple) and isinstance(value[1], dict):
        return value
    args = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if args and isinstance(args[-1], dict):
        return args[:-1], args[-1]
    return args, {}


# The exporter's steps, as its wrappers number them ("This is step 1/3", "(step 2/3)").
STEPS = {"1": "capture", "2": "decompose", "3": "translate"}
_STEP_RE = re.compile(r"step (\d)/3")
# Where torch's messages blame a line: the frames torch.export lists under "The following call
# raised this error:" (absolute paths, innermost last), the frames of an FX interpreter's
# "Original traceback:", and "Caused by: (path:line in function)" (paths relative to a sys.path
# entry: site-packages for a library, torch's own directory for torch's internals).
_FOLLOWING_RE = re.compile(r"The following call raised this error:\s*\n((?:\s*File .+\n(?:[ \t]+.+\n)?)+)")
_ORIGINAL_RE = re.compile(r"Original traceback:\s*\n((?:\s*File .+\n(?:[ \t]+.+\n)?)+)")
_FRAME_RE = re.compile(r'File "(.+?)", line (\d+)')
_CAUSED_BY_RE = re.compile(r"Caused by: \((\S+?):(\d+) in [^)]*\)")


def chain(error: BaseException) -> list[BaseException]:
    """The error and its causes (explicit first, else the context), outermost first."""
    seen: list[BaseException] = []
    while error is not None and error not in seen and len(seen) < 20:
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def innermost_cause(error: BaseException) -> BaseException:
    """The end of the explicit `raise ... from` chain: what torch's "exception summary" names
    (the exporter's wrappers chain their own errors: ConversionError <- ConversionError <-
    DispatchError)."""
    seen = [error]
    while error.__cause__ is not None and error.__cause__ not in seen:
        error = error.__cause__
        seen.append(error)
    return error


def step_of(error: BaseException) -> str | None:
    """The exporter's step that raised: capture, decompose, translate (its wrappers say), or
    optimize (onnx_ir's PassError)."""
    if type(error).__name__ == "PassError":
        return "optimize"
    match = _STEP_RE.search(str(error))
    return STEPS.get(match.group(1)) if match else None


def _on_sys_path(relative: str) -> str | None:
    for entry in sys.path:
        candidate = os.path.join(entry or ".", relative)
        if os.path.isfile(candidate):
            return os.path.realpath(candidate)
    return None


def blamed_location(error: BaseException) -> str | None:
    """The innermost line torch's messages blame, `path:line` with an absolute path; None when
    they blame none (or only a path that is not a file here, such as torch's own relative ones)."""
    text = "\n".join(str(item) for item in chain(error)) + "\n"
    for section in (_FOLLOWING_RE, _ORIGINAL_RE):
        match = section.search(text)
        if match:
            frames = [(file, line) for file, line in _FRAME_RE.findall(match.group(1)) if os.path.isfile(file)]
            if frames:
                file, line = frames[-1]
                return f"{os.path.realpath(file)}:{line}"
    match = _CAUSED_BY_RE.search(text)
    if match:
        found = _on_sys_path(match.group(1))
        if found:
            return f"{found}:{match.group(2)}"
    return None


def target_config(root: Path, name: str) -> dict:
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["onnxlens"]
    for target in config.get("target", []):
        if target.get("name") == name:
            return target
    raise SystemExit(f"no target {name!r} in {root / 'pyproject.toml'}")


def export_case(root: Path, name: str, out: Path) -> dict:
    """One target exported as a user's script would: build, call torch.onnx.export; the result."""
    target = target_config(root, name)
    start = time.perf_counter()
    try:
        import torch

        model = resolve(root, target["model"])()
        args, kwargs = split_inputs(resolve(root, target["inputs"])())
        dynamic_shapes = resolve(root, target["dynamic-shapes"])() if "dynamic-shapes" in target else None
        torch.onnx.export(model, args, str(out), kwargs=kwargs, dynamic_shapes=dynamic_shapes, dynamo=True)
        result = {"outcome": "exports", "error": None, "traceback": None}
    except Exception as error:  # noqa: BLE001 - the outcome is what is being recorded
        first = next((line for line in str(error).splitlines() if line.strip()), "")
        cause = innermost_cause(error)
        result = {"outcome": "fails", "error": f"{type(error).__name__}: {first}"[:500],
                  "traceback": traceback.format_exc(),
                  "cause": type(cause).__name__, "cause_text": str(cause)[:4000],
                  "step": step_of(error), "location": blamed_location(error)}
    result["seconds"] = round(time.perf_counter() - start, 2)
    return result


def main() -> None:
    root, name, out = Path(sys.argv[1]).resolve(), sys.argv[2], Path(sys.argv[3])
    sys.path.insert(0, str(root))
    result = export_case(root, name, out)
    # The exporter prints its progress on stdout too: the result is the line with this prefix.
    print(RESULT_PREFIX + json.dumps(result), flush=True)


# --- many targets of one workspace, each in a fresh process forked from a warm one -----------

SERVED_PREFIX = "zoo-stock-served: "


def libraries_imported(root: Path) -> list[str]:
    """The top-level modules the workspace's files import that are not the workspace's own."""
    import ast

    own = {path.stem for path in root.glob("*.py")} | {path.name for path in root.iterdir() if path.is_dir()}
    names: set[str] = set()
    for path in root.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(), str(path))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return sorted(name for name in names - own if name not in sys.stdlib_module_names)


def serve(root: Path) -> None:
    """`python -m benchmarks.zoo.stock --serve DIR`: exports DIR's targets, one per request line
    `TARGET<TAB>OUT<TAB>RESULT_FILE` on stdin, each in a child forked from this process, which
    has imported torch, its ONNX exporter and the libraries the workspace imports but exported
    nothing: a child starts as a user's script does after its imports (torch.fx's counters at 0),
    without paying for them again. A line `SERVED_PREFIX TARGET` on stdout says a result file
    is written. Libraries are left to each child when importing them starts a thread (a fork
    would copy it stopped, holding whatever lock it held). The parent computes nothing, so no
    OpenMP pool is forked."""
    import os
    import threading

    sys.path.insert(0, str(root))
    import torch  # noqa: F401
    import torch.onnx  # noqa: F401

    for name in libraries_imported(root):
        if threading.active_count() > 1:
            break
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the child imports it again and meets the error itself
            pass
    for line in sys.stdin:
        name, out, result_file = line.rstrip("\n").split("\t")
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                result = export_case(root, name, Path(out))
                Path(result_file).write_text(json.dumps(result))
            except BaseException:  # noqa: BLE001 - the parent reports a child that wrote nothing
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        os.waitpid(pid, 0)
        print(SERVED_PREFIX + name, flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(Path(sys.argv[2]).resolve())
    else:
        main()
