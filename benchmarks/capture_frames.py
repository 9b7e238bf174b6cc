"""The cost of keeping helper frames during capture: onnxlens's capture against plain torch.export.

    .venv/bin/python benchmarks/capture_frames.py [--runs 15]

Non-strict `torch.export` of a 2-layer transformers BERT (benchmarks/models/bert.py) and of
kornia's perspective rectifier (benchmarks/zoo/kornia/perspective.py), alternating, in one warm
process: plain, and inside `stacks.helper_frames_kept` as the capture stage runs it (every frame
that is not torch's own kept: the user's and the libraries' helpers). Prints median CPU times,
the ratios of medians and of minima (the least disturbed runs on a shared machine), and how many
frames the traces hold. Run it with an older onnxlens on PYTHONPATH to
compare versions: `helper_frames_kept` took a list of workspace files then.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import logging
import statistics
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = {"bert (transformers)": REPO / "benchmarks" / "models" / "bert.py",
          "perspective (kornia)": REPO / "benchmarks" / "zoo" / "kornia" / "perspective.py"}


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)

    import torch

    from onnxlens.exporter.locations import Workspace
    from onnxlens.exporter.pipeline.tracing import stacks

    torch.set_num_threads(1)  # as in the zygote's children
    print("| model | plain torch.export (CPU) | with helper frames (CPU) | ratio of medians | ratio of minima "
          "| frames per node (plain → kept) |")
    print("|---|---|---|---|---|---|")
    for name, path in MODELS.items():
        module = _load(path)
        model, args = module.build_model(), module.example_inputs()
        workspace = Workspace(str(path.parent))
        takes_files = "files" in inspect.signature(stacks.helper_frames_kept).parameters  # older onnxlens

        def plain():
            return torch.export.export(model, args, strict=False)

        def kept():
            argument = [str(path)] if takes_files else workspace
            with stacks.helper_frames_kept(argument):
                return torch.export.export(model, args, strict=False)

        plain(), kept()  # warm: lazy imports, first-call costs
        times = {"plain": [], "kept": []}
        for _ in range(options.runs):
            for label, run in (("plain", plain), ("kept", kept)):
                # CPU time of this process (torch runs on one thread here): on a machine shared
                # with other jobs, wall-clock time measures the neighbours as much as us.
                started = time.process_time()
                run()
                times[label].append(time.process_time() - started)
        frames = [_frames_per_node(run()) for run in (plain, kept)]
        a, b = statistics.median(times["plain"]), statistics.median(times["kept"])
        low = min(times["kept"]) / min(times["plain"])  # the least disturbed runs, on a shared machine
        print(f"| {name} | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {b / a:.3f} | {low:.3f} "
              f"| {frames[0]:.1f} → {frames[1]:.1f} |")


def _frames_per_node(program) -> float:
    counts = [(node.meta.get("stack_trace") or "").count('File "') for node in program.graph.nodes
              if node.op == "call_function"]
    return sum(counts) / max(len(counts), 1)


if __name__ == "__main__":
    main()
