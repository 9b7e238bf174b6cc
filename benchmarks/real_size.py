"""Saves at real size, through the language server, against the stock exporter in the same run.

    .venv/bin/python -m benchmarks.real_size [--runs 5] [--cold-runs 3] [--only NAME,...]
                                              (from the repository root; writes REAL_SIZE.md)

What a new user sees: a real `python -m onnxlens.server` with default settings (debounce 200 ms,
verification as the config default: on), driven by the tests' recording client (pytest-lsp's
client on pygls), on a workspace holding six targets:

* mlp, encoder: the examples' MLP and 6-layer encoder (dynamic batch);
* bert-base: transformers' BertModel from the default config (12 layers, 110 M parameters);
* llama-7b-meta: a 32-layer, hidden-4096 transformers Llama built on the meta device;
* deep-blocks: 32 identical blocks (d=1024) on meta whose helper calls torch.linalg.qr, which
  has no ONNX translation (benchmarks/models/deep_blocks.py, the line marked RESPONSIBLE);
* nanogpt-124m: nanoGPT's GPT-2 124M (karpathy/nanoGPT's model.py, not on PyPI: written into the
  workspace at run time from a checkout, `--nanogpt`), dynamic batch and sequence, with its MLP
  calling torch.special.zeta (no ONNX translation) on the line marked RESPONSIBLE.

Per target and run, the model file gets a new comment and is saved (didSave). Timed on the
client's clock from the save:
* first finding: the first publishDiagnostics for the model file that holds a diagnostic on the
  responsible line (targets with an error); a clean model has none (an empty publish shows the
  user nothing): its figure is *done*;
* done: the `onnxlens/exportStatus` notification that the export finished (the model saved and
  its findings shown; verification may still run: the status says `verifying`);
* verified: the status after verification ended (the export's last word).

Stock, in subprocesses of this run (benchmarks/inprocess.py), the same model and inputs, run by
run right after each onnxlens save (the machine's slow moments hit both sides of a run alike):
* warm: `torch.onnx.export(..., dynamo=True)` + save again in a live process that exported once
  (the model built once), until saved or raised;
* cold (the first --cold-runs runs): a fresh `python` that imports torch, builds the model and
  exports (start -> saved or raised).
The meta-device Llama is compared with stock `optimize=False` (stock's default fails on meta
weights: constant folding reads data).

Stages: per target, the median time of each pipeline stage (the server's `onnxlens/stats`), next
to the same step inside the warm stock export (stock_stages.py's wrappers, elapsed time).

Memory: the worker zygote's RSS, and per target the export child's peak RSS and USS (sampled every
20 ms in a run of its own), next to the stock warm process's peak RSS. Medians of --runs runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil
from lsprotocol import types as lsp

from benchmarks import run as worker_benchmark  # its machine() description and load_average()
from benchmarks.commit import measured_commit
from onnxlens.exporter.wire.protocol import SPARE_NAMES
from tests.support.lsp import EXPORT_STATUS, Client, uri

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
INPROCESS = HERE / "inprocess.py"
EXPORT_WAIT = 900.0  # a 7B graph on a loaded 2-core machine
# A checkout of karpathy/nanoGPT (its model.py is written into the benchmark workspace).
NANOGPT = Path("/work/.mirror/karpathy+nanoGPT/repo")


@dataclass(frozen=True)
class Target:
    name: str
    source: Path
    factory: str
    dynamic_shapes: str | None = None
    stock_optimize: bool = True  # the stock call compared with
    responsible: str | None = None  # the text of the line the first finding must be on
    note: str = ""
    prepare: Callable[[Path], None] | None = None  # writes what else the target needs into the workspace

    @property
    def file(self) -> str:
        return f"models/{self.source.name}"

    def model_json(self) -> str:
        module = self.file
        return json.dumps({"name": self.name, "model": f"{module}:{self.factory}", "inputs": f"{module}:example_inputs",
                           "dynamic_shapes": f"{module}:{self.dynamic_shapes}" if self.dynamic_shapes else None,
                           "optimize": self.stock_optimize})


TARGETS = [
    Target("mlp", REPO / "examples/models/mlp.py", "MLP", note="3 Linear layers"),
    Target("encoder", REPO / "examples/models/encoder.py", "build_encoder", "dynamic_shapes",
           note="6 blocks d=256, dynamic batch"),
    Target("bert-base", HERE / "models/bert_base.py", "build_model", note="transformers, 110 M parameters"),
    Target("llama-7b-meta", HERE / "models/llama_7b_meta.py", "build_model", stock_optimize=False,
           note="transformers Llama, 32 layers, 6.7 B parameters on meta; stock with optimize=False"),
    Target("deep-blocks", HERE / "models/deep_blocks.py", "build_model",
           responsible="q, _ = torch.linalg.qr(weight)", note="32 blocks d=1024 on meta, unsupported op in a helper"),
    Target("nanogpt-124m", HERE / "models/nanogpt_124m.py", "build_model", "dynamic_shapes",
           responsible="torch.special.zeta(x, 2.0)", prepare=lambda root: write_nanogpt(root, NANOGPT),
           note="karpathy/nanoGPT's GPT-2 124M (GPTConfig defaults), dynamic batch and sequence, its MLP calling "
                "torch.special.zeta (no ONNX translation)"),
]

# The line of nanoGPT's MLP.forward that the benchmark changes, and what it becomes.
NANOGPT_LINE = "        x = self.gelu(x)\n"
NANOGPT_ERROR = "        x = self.gelu(x) + torch.special.zeta(x, 2.0)  # RESPONSIBLE: no ONNX translation\n"


def write_nanogpt(root: Path, checkout: Path) -> None:
    """nanoGPT's model.py from `checkout` (a clone of karpathy/nanoGPT) into the workspace, its
    MLP calling an op without an ONNX translation."""
    source = checkout / "model.py"
    if source.exists():
        text = source.read_text()
    else:  # a bare mirror: the file at HEAD
        text = subprocess.run(["git", "-C", str(checkout), "show", "HEAD:model.py"], capture_output=True,
                              text=True, check=True).stdout
    if text.count(NANOGPT_LINE) != 1:
        raise SystemExit(f"{checkout}: model.py has no single line {NANOGPT_LINE.strip()!r} to change")
    (root / "models" / "nanogpt_model.py").write_text(text.replace(NANOGPT_LINE, NANOGPT_ERROR))


def workspace(targets: list[Target]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="onnxlens-real-size-"))
    (root / "models").mkdir()
    lines = ['[tool.onnxlens]', 'output-dir = ".onnxlens"', "timeout = 1800", ""]
    for target in targets:
        shutil.copy(target.source, root / target.file)
        if target.prepare is not None:
            target.prepare(root)
        lines += ["[[tool.onnxlens.target]]", f'name = "{target.name}"', f'model = "{target.file}:{target.factory}"',
                  f'inputs = "{target.file}:example_inputs"']
        if target.dynamic_shapes:
            lines.append(f'dynamic-shapes = "{target.file}:{target.dynamic_shapes}"')
        lines.append("")
    (root / "pyproject.toml").write_text("\n".join(lines))
    return root


def responsible_file(root: Path, target: Target) -> Path:
    """The workspace file holding the target's responsible line."""
    return next(path for path in sorted((root / "models").glob("*.py")) if target.responsible in path.read_text())


def line_of(path: Path, text: str) -> int:
    """1-based line holding `text` (found in the file, not remembered)."""
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# -- stock ----------------------------------------------------------------------------------------

class WarmStock:
    """A live process exporting `target` with stock torch.onnx.export once per `run()` (the model
    built and exported once first): a user re-running an export in a warm process."""

    def __init__(self, root: Path, target: Target) -> None:
        self.process = subprocess.Popen([sys.executable, str(INPROCESS), "stock", str(root), target.model_json()],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.build_seconds = self._read()["build_seconds"]  # ready: built and exported once

    def _read(self) -> dict:
        for line in self.process.stdout:
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"the stock process ended (exit status {self.process.wait()})")

    def run(self) -> dict:
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def stock_cold_once(root: Path, target: Target, run: int) -> dict:
    """A fresh python process from start to the .onnx saved (or the export raised)."""
    start = time.time()
    done = subprocess.run([sys.executable, str(INPROCESS), "cold", str(root), target.model_json(),
                           str(root / f"cold-{target.name}-{run}.onnx")],
                          capture_output=True, text=True, check=True)
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return {"seconds": data["saved_at"] - start, "outcome": data["outcome"]}


# -- onnxlens through the language server ---------------------------------------------------------

def _finished(client: Client, name: str, since: float, *, verified: bool = False) -> float | None:
    """Arrival time of the first finished-export status of `name` after `since` (`verified`:
    the first that is not `verifying`: the export's last word)."""
    for event in client.events:
        if (event.method == EXPORT_STATUS and event.time >= since and event.params.target == name
                and event.params.state in ("ok", "failed") and not (verified and event.params.verifying)):
            return event.time
    return None


def _first_finding(client: Client, path: Path, since: float, line: int) -> float | None:
    """Arrival time of the first diagnostics published for `path` after `since` that hold one
    on `line` (1-based; 0-based on the wire)."""
    file_uri = uri(path)
    for event in client.events:
        if event.method != lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS or event.time < since or event.params.uri != file_uri:
            continue
        if any(d.range.start.line == line - 1 for d in event.params.diagnostics):
            return event.time
    return None


async def _save_and_time(client: Client, root: Path, target: Target, run: int) -> dict:
    path = root / target.file
    found_in = responsible_file(root, target) if target.responsible else None
    line = line_of(found_in, target.responsible) if found_in else None
    path.write_text(path.read_text() + f"\n# benchmark edit {run}\n")
    saved = time.monotonic()  # the clock the client stamps arrivals with
    client.save(path)
    verified = await client.wait_for(lambda: _finished(client, target.name, saved, verified=True),
                                     f"{target.name} exported", EXPORT_WAIT)
    done = _finished(client, target.name, saved)
    first = _first_finding(client, found_in, saved, line) if found_in else None
    if found_in and first is None:
        raise AssertionError(f"{target.name}: no finding on {found_in.name}:{line} by the end of the export")
    last = (await client.stats())["last"][target.name]
    await asyncio.sleep(0.5)  # the watchdog echo of the write passes (it exports nothing)
    return {"first": first - saved if first is not None else None, "done": done - saved,
            "verified": verified - saved, "stages": last["stages"], "status": last["status"]}


async def _peak_child_memory(client: Client, root: Path, target: Target, zygote: psutil.Process) -> dict:
    """Peak RSS and USS of the export child during one save, sampled every 20 ms (the spare
    forked ahead of the next job, named so, is not the export's)."""
    path = root / target.file
    path.write_text(path.read_text() + "\n# benchmark edit (memory)\n")
    saved = time.monotonic()
    client.save(path)
    peak_rss = peak_uss = 0
    while _finished(client, target.name, saved, verified=True) is None:
        for child in zygote.children():
            try:
                if child.name() in SPARE_NAMES:
                    continue
                info = child.memory_full_info()
                peak_rss, peak_uss = max(peak_rss, info.rss), max(peak_uss, info.uss)
            except psutil.Error:
                pass
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.5)
    return {"child_peak_rss": peak_rss, "child_peak_uss": peak_uss}


async def through_lsp(root: Path, targets: list[Target], runs: int, cold_runs: int) -> dict:
    """Per target and run, interleaved: a save through the language server, a warm stock export,
    and (the first `cold_runs` runs) a cold stock process: the three see the machine alike."""
    client = await Client.launch(root, editor=None, experimental={"onnxlens": {"exportStatus": True}})
    results: dict = {}
    try:
        for target in targets:  # the workspace's first exports (worker warm-up, imports): not timed
            await client.exports_finished(target.name, 1, timeout=EXPORT_WAIT)
        stats = await client.stats()
        zygote = psutil.Process(stats["worker_pid"])
        results["zygote_rss_start"] = zygote.memory_info().rss
        for target in targets:
            await _save_and_time(client, root, target, -1)  # this target's imports preloaded by the zygote
            stock = WarmStock(root, target)
            try:
                timed, warm, cold = [], [], []
                for run in range(runs):
                    timed.append(await _save_and_time(client, root, target, run))
                    warm.append(stock.run())
                    if run < cold_runs:
                        cold.append(stock_cold_once(root, target, run))
            finally:
                stock.close()
            row = _row(timed, warm, cold)
            row["stock_build"] = stock.build_seconds
            row.update(await _peak_child_memory(client, root, target, zygote))
            results[target.name] = row
            print(f"{target.name}: first finding {_s(row['first'])}, done {_s(row['done'])}, verified "
                  f"{_s(row['verified'])}, warm stock {_s(row['warm'])}, cold stock {_s(row['cold'])}, "
                  f"child peak RSS {row['child_peak_rss'] / 2**20:.0f} MB", flush=True)
        results["zygote_rss_end"] = psutil.Process(stats["worker_pid"]).memory_info().rss
        results["worker_pid"] = stats["worker_pid"]
    finally:
        await client.close()
    return results


def _row(timed: list[dict], warm: list[dict], cold: list[dict]) -> dict:
    """Medians, and the ratios as medians of each run's own ratio (stock ÷ onnxlens, run by run:
    a slow moment of the machine slows both sides of one run)."""
    median = statistics.median
    found = all(t["first"] is not None for t in timed)
    return {
        "first": median(t["first"] for t in timed) if found else None, "done": median(t["done"] for t in timed),
        "verified": median(t["verified"] for t in timed),
        "warm": median(w["seconds"] for w in warm), "cold": median(c["seconds"] for c in cold),
        "first_vs_warm": median(w["seconds"] / t["first"] for t, w in zip(timed, warm)) if found else None,
        "first_vs_cold": median(c["seconds"] / t["first"] for t, c in zip(timed, cold)) if found else None,
        "done_vs_warm": median(w["seconds"] / t["done"] for t, w in zip(timed, warm)),
        "verified_vs_warm": median(w["seconds"] / t["verified"] for t, w in zip(timed, warm)),
        "stages": {stage: median(t["stages"].get(stage, 0.0) for t in timed)
                   for stage in dict.fromkeys(stage for t in timed for stage in t["stages"])},
        "stock_stages": {step: median(w["stages"].get(step, 0.0) for w in warm)
                         for step in dict.fromkeys(step for w in warm for step in w["stages"])},
        "stock_outcome": " / ".join(sorted({w["outcome"] for w in warm} | {c["outcome"] for c in cold})),
        "stock_max_rss": max(w["max_rss"] for w in warm),
        "runs": {"onnxlens": timed, "warm_stock": warm, "cold_stock": cold},
    }


# -- the table ------------------------------------------------------------------------------------

def _s(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _mb(size: float) -> str:
    return f"{size / 2**20:,.0f} MB"


def _x(ratio: float | None) -> str:
    """Two decimals: the issue's goals are ratios (≥ 1.5×, ≥ 1.2×), and 1.46× is not 1.5×."""
    return "—" if ratio is None else f"{ratio:.2f}×"


# Our stages against stock's steps (stock_stages.py): (row, our stage, stock's step).
STAGE_ROWS = [
    ("load: import, build the model (stock: built once, before)", "load", None),
    ("capture", "capture", "capture"),
    ("ONNX registry (ours: built once per worker)", None, "registry"),
    ("decompose", "decompose", "decompose"),
    ("scan", "scan", None),
    ("translate", "translate", "translate"),
    ("optimize", "optimize", "optimize"),
    ("check", "check", None),
    ("save", "save", "save"),
    ("verify (ours: after the result)", "verify", None),
]


def stage_table(target: Target, row: dict) -> list[str]:
    ours, stock = row["stages"], row["stock_stages"]
    lines = [f"### {target.name}", "",
             f"Stock built the model once, before its exports: {_s(row['stock_build'])}.", "",
             "| stage | onnxlens | stock |", "|---|---:|---:|"]
    for label, mine, theirs in STAGE_ROWS:
        if (mine is None or mine not in ours) and (theirs is None or theirs not in stock):
            continue
        lines.append(f"| {label} | {_s(ours.get(mine)) if mine else '—'} | {_s(stock.get(theirs)) if theirs else '—'} |")
    lines += [f"| total: save → done / warm stock export | {_s(row['done'])} | {_s(row['warm'])} |", ""]
    return lines


def table(targets: list[Target], ours: dict, runs: int, cold_runs: int, load: list[str], commit: str) -> str:
    lines = [
        "# Real-size saves through the language server",
        "",
        f"`.venv/bin/python -m benchmarks.real_size --runs {runs} --cold-runs {cold_runs}`, "
        f"{time.strftime('%Y-%m-%d')}, commit {commit}. Medians; onnxlens runs: {runs}, warm stock: {runs}, cold stock: {cold_runs}, "
        "interleaved run by run. Ratios are stock ÷ onnxlens (above 1: onnxlens answers sooner), the median "
        "of each run's own ratio. The machine was shared (2 cores): load average "
        f"{' → '.join(load)} (start → end).",
        "",
        "| target | save → first finding | save → done | save → verified | warm stock | cold stock | "
        "first finding vs warm / cold stock | done vs warm stock | stock outcome |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for target in targets:
        row = ours[target.name]
        versus = "—" if row["first"] is None else f"{_x(row['first_vs_warm'])} / {_x(row['first_vs_cold'])}"
        lines.append(f"| {target.name} | {_s(row['first'])} | {_s(row['done'])} | {_s(row['verified'])} | "
                     f"{_s(row['warm'])} | {_s(row['cold'])} | {versus} | {_x(row['done_vs_warm'])} | "
                     f"{row['stock_outcome']} |")
    lines += ["", "## Stages against stock's", "",
              "Medians of the same runs: the pipeline's stages as the server reports them (`onnxlens/stats`), "
              "stock's steps timed inside its warm export (benchmarks/stock_stages.py), elapsed time.", ""]
    for target in targets:
        lines += stage_table(target, ours[target.name])
    lines += [
        "## Memory",
        "",
        f"Worker zygote RSS: {_mb(ours['zygote_rss_start'])} after the first exports, {_mb(ours['zygote_rss_end'])} at the end "
        "(it preloads the libraries jobs imported: transformers).",
        "",
        "| target | export child: peak RSS | peak USS (its own pages) | stock warm process: peak RSS |",
        "|---|---:|---:|---:|",
    ]
    for target in targets:
        row = ours[target.name]
        lines.append(f"| {target.name} | {_mb(row['child_peak_rss'])} | {_mb(row['child_peak_uss'])} | "
                     f"{_mb(row['stock_max_rss'])} |")
    lines += ["", "## Targets", ""]
    lines += [f"* **{t.name}**: {t.note}." for t in targets]
    lines += [
        "",
        "## How",
        "",
        "Default settings: debounce 200 ms, verification on (the config default). *first finding*: the "
        "first publishDiagnostics for the file of the responsible line that holds a diagnostic on it (found "
        "by text in the file; targets with an error only: an empty publish shows the user nothing); *done*: "
        "the `onnxlens/exportStatus` that the export finished (saved, findings shown; `verifying` while "
        "verification runs); *verified*: the status after verification. Warm stock: "
        "`torch.onnx.export(..., dynamo=True)` + save again in a process that built the model and exported "
        "once; cold stock: a fresh python process from start to saved (or raised).",
        "",
        "## Machine",
        "",
        *worker_benchmark.machine(),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--only", help="comma-separated target names")
    parser.add_argument("--nanogpt", type=Path, help=f"a checkout (or bare mirror) of karpathy/nanoGPT (default {NANOGPT})")
    parser.add_argument("--no-write", action="store_true", help="print the table instead of writing REAL_SIZE.md")
    options = parser.parse_args()
    if options.nanogpt:
        globals()["NANOGPT"] = options.nanogpt  # the target's prepare() reads it
    targets = [t for t in TARGETS if not options.only or t.name in options.only.split(",")]
    root = workspace(targets)
    commit = measured_commit(HERE / "REAL_SIZE.md", HERE / "real_size.json", length=10)
    load = [worker_benchmark.load_average()]
    try:
        ours = asyncio.run(through_lsp(root, targets, options.runs, min(options.cold_runs, options.runs)))
    finally:  # the workspace holds every cold export (BERT-base's alone is 420 MB)
        shutil.rmtree(root, ignore_errors=True)
    load.append(worker_benchmark.load_average())
    text = table(targets, ours, options.runs, min(options.cold_runs, options.runs), load, commit)
    if options.no_write:
        print(text)
        return
    (HERE / "REAL_SIZE.md").write_text(text)
    (HERE / "real_size.json").write_text(json.dumps(ours, indent=1))
    print(text)


if __name__ == "__main__":
    main()
