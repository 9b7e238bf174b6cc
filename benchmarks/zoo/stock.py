"""The stock exporter on one zoo target, as a user would run it: `python -m benchmarks.zoo.stock DIR TARGET OUT`.

Reads the target's `model`, `inputs` and `dynamic-shapes` references from DIR's pyproject.toml,
builds the model and calls `torch.onnx.export(model, args, OUT, kwargs=..., dynamic_shapes=...,
dynamo=True)` with every other setting at its default. Prints one JSON line:
`{"outcome": "exports" | "fails", "error": "Type: first line", "seconds": s, "traceback": "..."}`.

Deliberately independent of onnxlens: this is the baseline onnxlens is scored against.
"""

from __future__ import annotations

import importlib
import json
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


def target_config(root: Path, name: str) -> dict:
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["onnxlens"]
    for target in config.get("target", []):
        if target.get("name") == name:
            return target
    raise SystemExit(f"no target {name!r} in {root / 'pyproject.toml'}")


def main() -> None:
    root, name, out = Path(sys.argv[1]).resolve(), sys.argv[2], Path(sys.argv[3])
    sys.path.insert(0, str(root))
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
        result = {"outcome": "fails", "error": f"{type(error).__name__}: {first}"[:500],
                  "traceback": traceback.format_exc()}
    result["seconds"] = round(time.perf_counter() - start, 2)
    # The exporter prints its progress on stdout too: the result is the line with this prefix.
    print(RESULT_PREFIX + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
