"""Stage by stage: each onnxlens stage against the same step inside stock `torch.onnx.export`.

    .venv/bin/python benchmarks/engine_stages.py [--runs 5] [--models mlp,encoder,bert-base] [--clock cpu|wall]
                                                 [--no-write]   (writes ENGINE_STAGES.md)

One process, torch at one thread (as in the worker's children), a warmed-up Pipeline (as the
zygote has it). Per model, alternating: our Pipeline (verification off: stock does not verify),
stock `torch.onnx.export(..., dynamo=True)` + save, and `torch.export.export` alone. Each side
with the garbage collector as it really runs: ours off, as in a worker child (worker/child.py
disables it: the child exits instead), stock's on, as in the user's own Python; both start from
a collected heap (with the collector on, our steps would pay for collections a child never
makes). The stock steps are timed by wrapping the torch functions stock calls (the capture
strategy, the registry build, `_prepare_exported_program_for_export`,
`_exported_program_to_onnx_program`, `ONNXProgram.optimize`, `ONNXProgram.save`); our translate
stage calls the same translation and optimize functions, timed by the same wrappers. Timing
wrappers only: nothing is replaced. Writes (and prints) a markdown table of medians; "ratio" is
ours ÷ stock (at most 1: no slower). Timed in this process's CPU time by default: every step
runs on one thread, so CPU time is what the step costs, and it holds still while other processes
load the machine (elapsed time did not: the same call varied 0.84–1.34× between runs on a quiet
machine).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
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
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))  # run as a script: benchmarks/ is a package of the repository

from benchmarks import run as worker_benchmark  # noqa: E402 - its machine() and load_average()
from benchmarks.commit import measured_commit  # noqa: E402
from benchmarks.stock_stages import Timings, wrap_stock_steps  # noqa: E402

OUTPUT = HERE / "ENGINE_STAGES.md"

MODELS = {
    "mlp": (REPO / "examples/models/mlp.py", "MLP", None),
    "encoder": (REPO / "examples/models/encoder.py", "build_encoder", "dynamic_shapes"),
    "bert-base": (HERE / "models/bert_base.py", "build_model", None),
}

# (row label, our figure, stock's figure); figures are keys of the per-run timings.
ROWS = [
    ("capture (helper frames kept) vs stock's capture", "stage:capture", "capture"),
    ("capture vs torch.export.export alone", "stage:capture", "torch.export"),
    ("decompose (+ type promotion)", "stage:decompose", "decompose"),
    ("translate: FX → ONNX (+ opset conversion)", "translate", "translate"),
    ("optimize", "optimize", "optimize"),
    ("save", "stage:save", "save"),
    ("registry build (ours: built once per process)", None, "registry"),
    ("load: import the user's files, call the factories", "stage:load", None),
    ("scan: ops without a translation", "stage:scan", None),
    ("line data for hover and lens", "lines", None),
    ("check: onnx.checker", "stage:check", None),
    ("total (ours without load: stock gets the model ready-made)", "without_load", "total"),
]


CLOCKS = {
    # CPU seconds of this process: one thread computes (torch at 1 thread, no onnxruntime), so
    # this is what a step costs, and another process on the machine barely changes it.
    "cpu": time.process_time,
    "wall": time.perf_counter,
}


@contextlib.contextmanager
def collector(enabled: bool):
    """The garbage collector on or off for a step, from a collected heap (outside the timing)."""
    gc.collect()
    if not enabled:
        gc.disable()
    try:
        yield
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--models", default="mlp,encoder,bert-base")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: this process's CPU time (default: steady on a busy machine); wall: elapsed time")
    parser.add_argument("--no-write", action="store_true", help=f"print the table instead of writing {OUTPUT.name}")
    options = parser.parse_args()
    commit = measured_commit(OUTPUT)
    load = [worker_benchmark.load_average()]
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)

    import torch

    import onnxlens.exporter.pipeline as pipeline_module
    import onnxlens.exporter.pipeline.output.lines as lines
    from onnxlens.exporter.pipeline import Pipeline
    from onnxlens.exporter.types import TargetSpec

    torch.set_num_threads(1)
    clock = CLOCKS[options.clock]
    timings = Timings(clock)
    pipeline_module.STAGES_RUN = tuple(stage._replace(run=timings.timed(stage.run, f"stage:{stage.name}"))
                                       for stage in pipeline_module.STAGES_RUN)
    wrap_stock_steps(timings)
    timings.wrap(lines, "line_infos", "lines")

    workdir = Path(tempfile.mkdtemp(prefix="onnxlens-bench-"))
    (workdir / "models").mkdir()
    sys.path.insert(0, str(workdir))
    pipeline = Pipeline()
    started = time.perf_counter()
    pipeline.warm_up()
    warm_up_seconds = time.perf_counter() - started

    columns: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    for name in options.models.split(","):
        source, factory, shapes_name = MODELS[name]
        shutil.copy(source, workdir / "models" / source.name)
        module_file = f"models/{source.name}"
        spec = TargetSpec(name=name, root=str(workdir), output=str(workdir / ".onnxlens" / f"{name}.onnx"),
                          report=str(workdir / ".onnxlens" / f"{name}.md"), verify=False,
                          model=f"{module_file}:{factory}", inputs=f"{module_file}:example_inputs",
                          dynamic_shapes=f"{module_file}:{shapes_name}" if shapes_name else None)
        ours: list[dict[str, float]] = []
        stock: list[dict[str, float]] = []
        for run in range(options.runs + 1):  # the first round is a warm-up for this model
            timings.take()
            with collector(enabled=False):  # as in a worker child
                result = pipeline.run(spec)
            assert result.status == "ok", result.findings
            figures = timings.take()
            figures["without_load"] = sum(seconds for label, seconds in figures.items()
                                          if label.startswith("stage:") and label != "stage:load")
            ours.append(figures)

            module = sys.modules[f"models.{source.stem}"]
            model, args = getattr(module, factory)(), module.example_inputs()
            shapes = getattr(module, shapes_name)() if shapes_name else None
            with collector(enabled=True):  # as in the user's own Python
                begin = clock()
                torch.onnx.export(model, args, str(workdir / f"stock-{name}.onnx"), dynamic_shapes=shapes,
                                  dynamo=True, verbose=False)
                figures = timings.take()
                figures["total"] = clock() - begin
            with collector(enabled=True):
                begin = clock()
                torch.export.export(model, args, dynamic_shapes=shapes, strict=False)
                figures["torch.export"] = clock() - begin
            timings.take()
            stock.append(figures)
        ours, stock = ours[1:], stock[1:]

        def median(runs: list[dict[str, float]], key: str | None) -> float | None:
            return statistics.median(run.get(key, 0.0) for run in runs) if key else None

        columns[name] = {label: (median(ours, mine), median(stock, theirs)) for label, mine, theirs in ROWS}

    shutil.rmtree(workdir, ignore_errors=True)
    load.append(worker_benchmark.load_average())
    text = report(columns, options, torch.__version__, warm_up_seconds, commit, load)
    if not options.no_write:
        OUTPUT.write_text(text)
    print(text)


def report(columns: dict, options: argparse.Namespace, torch_version: str, warm_up_seconds: float,
           commit: str, load: list[str]) -> str:
    lines = [
        "# Engine: each stage against the same step inside stock torch.onnx.export",
        "",
        f"`.venv/bin/python benchmarks/engine_stages.py --runs {options.runs}`, {time.strftime('%Y-%m-%d')}, commit "
        f"{commit}, {options.clock} time of the one benchmark process (load average {load[0]} → {load[1]}, start → "
        "end). Verification off on both sides (stock does not verify); one process, alternating; the stock steps "
        "timed by wrapping the torch functions stock calls. The garbage collector as each side really runs: off "
        "for ours (a worker child's), on for stock (the user's Python).",
        "",
        f"Warm exports in one process, medians of {options.runs} runs, torch {torch_version}, 1 thread; warm_up() "
        f"took {warm_up_seconds:.2f} s. Each cell: onnxlens / stock (ratio).",
        "",
        "| step | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for label, _, _ in ROWS:
        cells = []
        for column in columns.values():
            mine, theirs = column[label]
            if mine is not None and theirs is not None:
                cells.append(f"{_s(mine)} / {_s(theirs)} ({mine / theirs:.2f})")
            elif mine is not None:
                cells.append(f"{_s(mine)} / —")
            else:
                cells.append(f"— / {_s(theirs)}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Translation and optimize are the same code on both sides; where their ratios stray from 1, the "
        "collector is the difference (on for stock). Our capture is stock's strategy with our instruments "
        "around it (helper frames kept for the user's lines, ops checked while traced, the traced state). Our "
        "decomposition is the stock one with the tables built once per process (stock builds the "
        "decomposition table inside its step) and torch's CompositeImplicitAutograd override entered from a "
        "state recorded once (exporter/torch_internals/cia_override.py: stock enters it afresh on every call); "
        "in both, the graph modules make their code when first needed, not at every pass "
        "(exporter/torch_internals/deferred_graph_code.py). The registry stock rebuilds on every call we "
        "build once. Our save "
        "after the first keeps the committed data file when the weights it would write are the same bytes "
        "(exporter/pipeline/output/kept_weights.py; here the encoder and BERT-base seed their random init, so "
        "every run but the first: an editor's saves get the same from kept random fills). Through the language "
        "server, per target and with the save → diagnostics times: [REAL_SIZE.md](REAL_SIZE.md).",
        "",
        "## Machine",
        "",
        *worker_benchmark.machine(),
    ]
    return "\n".join(lines) + "\n"


def _s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
