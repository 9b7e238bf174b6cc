"""In-process measurements (one Python process, torch imported once), printed as JSON.

    python benchmarks/inprocess.py cold WORKSPACE MODEL_JSON OUT.onnx
        a fresh process's whole export: prints wall-clock time.time() once the .onnx is saved
        (the caller took the time before starting the process)
    python benchmarks/inprocess.py warm WORKSPACE MODELS_JSON RUNS
        per model: warm stock torch.onnx.export(dynamo=True), torch.export alone, and the
        onnxlens Pipeline in-process (warm, cached tables), with and without verification

    python benchmarks/inprocess.py stock WORKSPACE MODEL_JSON
        warm stock only, as a user re-running an export in a live process: the model built once,
        one untimed export, then one timed export + save (or until it raises) per line read from
        stdin; prints a JSON line per export: its time, its steps' times (stock_stages.py),
        outcome and the process's peak RSS; the ready line says how long building the model took

MODEL_JSON: {"name", "model", "inputs", "dynamic_shapes"} with FILE.py:CALLABLE references, and
optionally "optimize": false (the stock call's `optimize`; meta-device models need it off).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time


def _load(root: str, reference: str):
    import importlib.util
    import os

    path, _, name = reference.rpartition(":")
    module_name = os.path.splitext(path)[0].replace("/", ".")
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, os.path.join(root, path))
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return getattr(sys.modules[module_name], name)


def _target(root: str, model: dict):
    module = _load(root, model["model"])()
    args = _load(root, model["inputs"])()
    shapes = _load(root, model["dynamic_shapes"])() if model.get("dynamic_shapes") else None
    return module, args, shapes


def _stock_export(module, args, shapes, path: str, optimize: bool = True) -> None:
    import torch

    program = torch.onnx.export(module, args, dynamic_shapes=shapes, dynamo=True, verbose=False, optimize=optimize)
    program.save(path)


def _outcome(action) -> str:
    """"saved", or how the stock call raised (a model with a problem: the time until it raises
    is what the user waits for)."""
    try:
        action()
    except Exception as error:  # noqa: BLE001 - the outcome is the measurement
        return f"raised {type(error).__name__}"
    return "saved"


def cold(root: str, model: dict, out: str) -> None:
    # What a user's script does: import torch, build the model, export, save.
    import torch  # noqa: F401

    sys.path.insert(0, root)
    module, args, shapes = _target(root, model)
    outcome = _outcome(lambda: _stock_export(module, args, shapes, out, model.get("optimize", True)))
    print(json.dumps({"saved_at": time.time(), "outcome": outcome}))


def stock(root: str, model: dict) -> None:
    """Served: one timed export + save per line read from stdin, its JSON printed at once (the
    caller interleaves these with onnxlens's saves, so both see the machine in the same state)."""
    import resource

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks.stock_stages import Timings, wrap_stock_steps

    timings = Timings(time.perf_counter)
    wrap_stock_steps(timings)
    sys.path.insert(0, root)
    built = time.perf_counter()
    module, args, shapes = _target(root, model)
    built = time.perf_counter() - built
    with tempfile.TemporaryDirectory(prefix="onnxlens-bench-") as scratch:  # removed when stdin ends
        path = os.path.join(scratch, f"{model['name']}-stock.onnx")

        def export() -> str:
            return _outcome(lambda: _stock_export(module, args, shapes, path, model.get("optimize", True)))

        export()  # the first export in a process pays its lazy initialisation
        print(json.dumps({"ready": True, "build_seconds": built}), flush=True)
        for _ in sys.stdin:
            timings.take()
            start = time.perf_counter()
            outcome = export()
            print(json.dumps({"seconds": time.perf_counter() - start, "outcome": outcome, "stages": timings.take(),
                              "max_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}), flush=True)


def _median_of(runs: int, action) -> dict[str, float]:
    """Median wall-clock and CPU seconds (this process, all its threads) of `runs` calls."""
    walls, cpus = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        action()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus)}


def warm(root: str, models: list[dict], runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="onnxlens-bench-") as out_dir:
        print(json.dumps(_warm(root, models, runs, out_dir)))


def _warm(root: str, models: list[dict], runs: int, out_dir: str) -> dict:
    import torch

    from onnxlens.exporter.pipeline import Pipeline
    from onnxlens.exporter.types import TargetSpec

    sys.path.insert(0, root)
    pipeline = Pipeline()
    pipeline.warm_up()
    results = {}
    for model in models:
        module, args, shapes = _target(root, model)
        path = os.path.join(out_dir, f"{model['name']}-stock.onnx")
        _stock_export(module, args, shapes, path)  # the first export in the process pays extra
        row = {"warm_stock": _median_of(runs, lambda: _stock_export(module, args, shapes, path))}
        row["torch_export"] = _median_of(
            runs, lambda: torch.export.export(module, args, dynamic_shapes=shapes, strict=False))
        for verify in (True, False):
            spec = TargetSpec(
                name=model["name"], root=root, model=model["model"], inputs=model["inputs"],
                dynamic_shapes=model.get("dynamic_shapes"), verify=verify,
                output=os.path.join(out_dir, f"{model['name']}.onnx"),
                report=os.path.join(out_dir, "reports", f"{model['name']}.md"),
            )
            first = pipeline.run(spec)
            assert first.status == "ok", first.findings
            key = "pipeline_verify" if verify else "pipeline_no_verify"
            row[key] = _median_of(runs, lambda: pipeline.run(spec))
        results[model["name"]] = row
    return results


if __name__ == "__main__":
    if sys.argv[1] == "cold":
        cold(sys.argv[2], json.loads(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "stock":
        stock(sys.argv[2], json.loads(sys.argv[3]))
    else:
        warm(sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]))
