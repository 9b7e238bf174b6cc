"""Per-stage timings of warm onnxlens exports against stock `torch.onnx.export` in the same process.

    .venv/bin/python benchmarks/engine_stages.py [--runs 5]

Exports the examples' MLP and encoder (dynamic batch) with a warmed-up Pipeline (as the zygote
has it: one tiny export done) and with the public API, alternating, and prints medians as a
markdown table. Verification is off on both sides (stock does not verify by default). The stock
call gets its model and inputs ready-made; our `load` stage imports the user's files fresh and
calls the factories, so the comparable figure is "total without load".
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

TARGETS = {
    "mlp": dict(model="models/mlp.py:MLP", inputs="models/mlp.py:example_inputs", dynamic_shapes=None),
    "encoder": dict(model="models/encoder.py:build_encoder", inputs="models/encoder.py:example_inputs",
                    dynamic_shapes="models/encoder.py:dynamic_shapes"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)

    import torch

    from onnxlens.exporter.pipeline import Pipeline
    from onnxlens.exporter.types import STAGES, TargetSpec

    torch.set_num_threads(1)  # as in the zygote's children
    workdir = Path(tempfile.mkdtemp(prefix="onnxlens-bench-"))
    root = workdir / "examples"
    shutil.copytree(REPO / "examples", root, ignore=shutil.ignore_patterns(".onnxlens", "__pycache__"))
    pipeline = Pipeline()
    started = time.perf_counter()
    pipeline.warm_up()
    warm_up_seconds = time.perf_counter() - started

    columns = {}
    for name, target in TARGETS.items():
        spec = TargetSpec(name=name, root=str(root), output=str(root / ".onnxlens" / f"{name}.onnx"),
                          report=str(root / ".onnxlens" / f"{name}.md"), verify=False,
                          model=target["model"], inputs=target["inputs"], dynamic_shapes=target["dynamic_shapes"])
        ours: list[dict[str, float]] = []
        stock: list[float] = []
        for _ in range(options.runs + 1):  # the first round of each is a warm-up for this model
            result = pipeline.run(spec)
            assert result.status == "ok", result.findings
            ours.append(dict(result.stages, total=result.seconds,
                             without_load=result.seconds - result.stages.get("load", 0.0)))
            module = sys.modules[target["model"].split(":")[0][:-3].replace("/", ".")]
            model = getattr(module, target["model"].rpartition(":")[2])()
            args = getattr(module, "example_inputs")()
            shapes = module.dynamic_shapes() if target["dynamic_shapes"] else None
            begin = time.perf_counter()
            torch.onnx.export(model, args, str(workdir / f"stock-{name}.onnx"), dynamo=True,
                              dynamic_shapes=shapes, verbose=False)
            stock.append(time.perf_counter() - begin)
        ours, stock = ours[1:], stock[1:]
        column = {stage: statistics.median(run[stage] for run in ours) for stage in (*STAGES, "total", "without_load")}
        column["stock"] = statistics.median(stock)
        columns[name] = column

    print(f"Warm exports, medians of {options.runs} runs, one process, torch {torch.__version__}, "
          f"1 thread; warm_up() took {warm_up_seconds:.2f} s.\n")
    print("| stage | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for stage in STAGES:
        print(f"| {stage} | " + " | ".join(f"{c[stage]:.3f} s" for c in columns.values()) + " |")
    print("| **onnxlens total** | " + " | ".join(f"**{c['total']:.3f} s**" for c in columns.values()) + " |")
    print("| onnxlens total without load | " + " | ".join(f"{c['without_load']:.3f} s" for c in columns.values()) + " |")
    print("| **stock torch.onnx.export (+ save)** | " + " | ".join(f"**{c['stock']:.3f} s**" for c in columns.values()) + " |")
    print("| speed-up (stock / without load) | " + " | ".join(f"{c['stock'] / c['without_load']:.1f}x" for c in columns.values()) + " |")
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
