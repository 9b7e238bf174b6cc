"""`onnxlens check` against the stock exporter, both cold as CI runs them, on segment-anything's
ViT-B image encoder at 1024x1024 (benchmarks/models/sam_vit_b.py, random weights). Writes
benchmarks/CHECK_VS_STOCK.md and check_vs_stock.json.

    .venv/bin/python -m benchmarks.check_vs_stock [--runs 3]      (from the repository root)

Each run, one after the other so that the machine's load falls on all three alike:
* `onnxlens check --no-cache` with the defaults (verification on): a fresh process, the worker's
  start and warm-up included, until it exits; nothing saved before it (no `.onnxlens/`), as on a
  fresh CI machine;
* the same with `--no-verify`;
* stock: a fresh python that imports torch, builds the encoder, calls
  `torch.onnx.export(..., dynamo=True)` and saves (benchmarks/inprocess.py cold), until it exits.
Then verification's floor, in one process: torch's own forward of the encoder on the example
and onnxruntime's run of the model the check saved, each at every CPU's threads — the two runs
a comparison of outputs cannot do without. Medians of --runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.commit import measured_commit
from benchmarks.run import load_average, machine

HERE = Path(__file__).resolve().parent
MODEL = HERE / "models" / "sam_vit_b.py"
OUT_MD, OUT_JSON = HERE / "CHECK_VS_STOCK.md", HERE / "check_vs_stock.json"
ONNXLENS = [sys.executable, "-m", "onnxlens.server.cli"]

CONFIG = """\
timeout = 600

[[target]]
name = "sam"
model = "sam_vit_b.py:build"
inputs = "sam_vit_b.py:inputs"
"""

# Verification's floor: torch's forward and onnxruntime's run, nothing else (argv: workspace, runs).
FLOOR = """
import json, os, statistics, sys, time
root, runs = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, root)
import numpy, onnxruntime, torch
import sam_vit_b
torch.set_num_threads(os.cpu_count() or 1)
model, (image,) = sam_vit_b.build(), sam_vit_b.inputs()
options = onnxruntime.SessionOptions()
options.intra_op_num_threads = os.cpu_count() or 1
session = onnxruntime.InferenceSession(os.path.join(root, ".onnxlens", "sam.onnx"), options,
                                       providers=["CPUExecutionProvider"])
feeds = {session.get_inputs()[0].name: image.numpy()}
torch_runs, ort_runs = [], []
for _ in range(runs):
    start = time.perf_counter()
    with torch.no_grad():
        expected = model(image)
    torch_runs.append(time.perf_counter() - start)
    start = time.perf_counter()
    (actual,) = session.run(None, feeds)
    ort_runs.append(time.perf_counter() - start)
assert numpy.allclose(actual, expected.numpy(), rtol=1e-3, atol=1e-4)
print(json.dumps({"torch": statistics.median(torch_runs), "onnxruntime": statistics.median(ort_runs)}))
"""


def timed(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - start, done


def check_once(root: Path, *, verify: bool) -> dict:
    # As on a fresh CI machine: nothing saved before (a save can otherwise keep the weights file).
    shutil.rmtree(root / ".onnxlens", ignore_errors=True)
    seconds, done = timed([*ONNXLENS, "check", "--no-cache", "--format", "json", *([] if verify else ["--no-verify"])],
                          root)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (target,) = json.loads(done.stdout)["targets"]
    assert target["status"] == "ok", target
    assert bool(target.get("verification")) == verify, target.get("verification")  # the run is the one named
    return {"seconds": seconds, "stages": target["stages"]}


def stock_once(root: Path) -> dict:
    model = {"name": "sam", "model": "sam_vit_b.py:build", "inputs": "sam_vit_b.py:inputs"}
    seconds, done = timed([sys.executable, str(HERE / "inprocess.py"), "cold", str(root), json.dumps(model),
                           str(root / "stock.onnx")], root)
    outcome = json.loads(done.stdout.strip().splitlines()[-1])["outcome"]
    assert outcome == "saved", done.stderr[-2000:]
    return {"seconds": seconds}


def measure(runs: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix="onnxlens-check-vs-stock-"))
    try:
        shutil.copy(MODEL, root / MODEL.name)
        (root / "onnxlens.toml").write_text(CONFIG)
        verified, unverified, stock = [], [], []
        for run in range(runs):
            verified.append(check_once(root, verify=True))
            unverified.append(check_once(root, verify=False))
            stock.append(stock_once(root))
            print(f"run {run + 1}: check {verified[-1]['seconds']:.1f} s, --no-verify {unverified[-1]['seconds']:.1f} s, "
                  f"stock {stock[-1]['seconds']:.1f} s", file=sys.stderr, flush=True)
        floor = subprocess.run([sys.executable, "-c", FLOOR, str(root), str(runs)], capture_output=True, text=True,
                               timeout=1800)
        assert floor.returncode == 0, floor.stderr[-2000:]
        return {"check": verified, "check_no_verify": unverified, "stock": stock,
                "floor": json.loads(floor.stdout.strip().splitlines()[-1])}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def median(values) -> float:
    return statistics.median(list(values))


def render(data: dict) -> str:
    stock = median(r["seconds"] for r in data["stock"])
    lines = [
        "# `onnxlens check` against the stock exporter, cold",
        "",
        f"`.venv/bin/python -m benchmarks.check_vs_stock --runs {data['runs']}`, {data['date']}, commit {data['commit']}. "
        f"Load average {data['load_before']} → {data['load_after']} (start → end).",
        "",
        "segment-anything's ViT-B image encoder at 1024x1024 (`sam_model_registry[\"vit_b\"]()`, random weights), "
        "one target. Each run: a fresh process until it exits — `onnxlens check --no-cache` (the worker's start "
        "and warm-up included; no `.onnxlens/` before it, as on a fresh CI machine), and stock: python imports torch, builds the encoder, "
        "`torch.onnx.export(..., dynamo=True)`, saves. Medians of the runs; the ratio is stock ÷ onnxlens.",
        "",
        "| run | wall time | range | vs stock |",
        "|---|---:|---|---:|",
    ]
    for key, label in (("check", "`onnxlens check` (defaults: verification on)"),
                       ("check_no_verify", "`onnxlens check --no-verify`"), ("stock", "stock, cold")):
        seconds = [r["seconds"] for r in data[key]]
        lines.append(f"| {label} | {median(seconds):.1f} s | {min(seconds):.1f}–{max(seconds):.1f} s | "
                     f"{stock / median(seconds):.2f}× |")
    lines += ["", "The check's stages (its JSON's `stages`, medians):", "",
              "| stage | with verification | `--no-verify` |", "|---|---:|---:|"]
    for stage in data["check"][0]["stages"]:
        with_, without = (median(r["stages"].get(stage, 0.0) for r in data[key]) for key in ("check", "check_no_verify"))
        lines.append(f"| {stage} | {with_:.2f} s | {without:.2f} s |")
    floor = data["floor"]
    lines += [
        "",
        f"Verification's floor, in one process at {data['threads']} threads: torch's own forward of the encoder on the "
        f"example {floor['torch']:.1f} s, onnxruntime's run of the saved model {floor['onnxruntime']:.1f} s — "
        f"{floor['torch'] + floor['onnxruntime']:.1f} s that no comparison of outputs can skip, against stock's "
        f"{stock:.1f} s for its whole export.",
        "",
        "## Machine",
        "",
        *data["machine"],
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    load_before = load_average()
    data = measure(options.runs)
    data.update(runs=options.runs, date=time.strftime("%Y-%m-%d"), commit=measured_commit(OUT_MD, OUT_JSON),
                load_before=load_before, load_after=load_average(),
                threads=os.cpu_count() or 1, machine=machine())
    OUT_JSON.write_text(json.dumps(data, indent=1) + "\n")
    OUT_MD.write_text(render(data))
    print(OUT_MD.read_text())


if __name__ == "__main__":
    main()
