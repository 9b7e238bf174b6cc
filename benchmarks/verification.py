"""Verification: what it locates, what it tolerates, what it costs. Writes VERIFICATION.md.

    .venv/bin/python -m benchmarks.verification [--section locate,noise,share] [--runs 3]
                                                [--before COMMIT]     (from the repository root)

Each section is measured by its own run and kept in verification.json with the commit it was
measured at; VERIFICATION.md is written from all of them (a section not measured in this run
keeps its figures and its commit).

* locate: finding the first diverging value, onnxlens (one onnxruntime session) against stock
  `verify_onnx_program(..., compare_intermediates=True)` (one session per value). A real
  mismatch is made by shifting 8 entries of one bias of the exported ONNX model (the
  `layers.2.ff.0` Linear of the 6-layer example encoder, `net.2` of the MLP); onnxlens as
  medians of 5, stock as medians of 3 on the MLP and ONE run on the encoder (minutes).
* noise: the calibration of the noise floor (exporter/verify/tolerance.py). Correct exports of
  whisper-tiny (openai-whisper, random weights), BERT-base and GPT-2 (transformers, random
  weights), the example encoder in float32 and float16: every intermediate value onnxruntime and
  torch both compute, its largest difference in units of its dtype's eps at the value's largest
  magnitude, and how many values rtol 1e-3 / atol 1e-5 alone called different.
* share: verification's share of a save on the segment-anything ViT-B image encoder at
  1024x1024 (benchmarks/models/sam_vit_b.py), through the pipeline's stage timings, in-process
  (one warm Pipeline per scenario, torch at as many threads as the language server gives its one
  job: every core), medians of --runs. Scenarios: the first save (nothing to reuse); a save that
  leaves the graph unchanged (a comment added at the top of the model's file: every line
  moves); two images with a dynamic batch, verified on the example and with
  `verify-inputs = "small"`; and stock `torch.onnx.export(dynamo=True)` of the one-image
  encoder, for scale. `--before COMMIT` also measures the onnxlens of that commit (its exporter
  and server from `git archive`, in the same venv) on the one-image scenarios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXAMPLES = REPO / "examples"
RESULTS = HERE / "verification.json"
SECTIONS = ("locate", "noise", "share")


def _commit(source: Path = REPO) -> str:
    out = subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--", "exporter", "server",
                            "benchmarks/verification.py", "benchmarks/models"], capture_output=True, text=True).stdout.strip()
    return out.stdout.strip() + ("+changes" if dirty else "")


def _machine() -> str:
    import psutil
    import torch

    load = ", ".join(f"{x:.1f}" for x in psutil.getloadavg())
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"{psutil.virtual_memory().total / 2**30:.0f} GB, Python {platform.python_version()}, "
            f"torch {torch.__version__}; load average {load}")


# --- locate -------------------------------------------------------------------------------------

def locate() -> dict:
    import onnx_ir as ir
    import torch
    from torch.onnx.verification import verify_onnx_program

    from onnxlens.exporter.verify import verify

    sys.path.insert(0, str(EXAMPLES))
    from models.encoder import build_encoder, dynamic_shapes
    from models.encoder import example_inputs as encoder_inputs
    from models.mlp import MLP
    from models.mlp import example_inputs as mlp_inputs

    def broken_program(model, args, bias: str, dynamic=None):
        program = torch.onnx.export(model, args, dynamo=True, dynamic_shapes=dynamic, verbose=False)
        value = program.model.graph.initializers[bias]
        array = value.const_value.numpy().copy()
        array[:8] += 0.05
        value.const_value = ir.tensor(array, name=bias)
        return program

    def stock_first(program, args) -> tuple[float, str | None, int]:
        start = time.perf_counter()
        infos = verify_onnx_program(program, args, {}, compare_intermediates=True)
        seconds = time.perf_counter() - start
        first = next((i.name for i in infos if i.max_abs_diff > 1e-5 + 1e-3 * 1.0), None)
        return seconds, first, len(infos)

    def ours(program, args) -> tuple[float, object]:
        start = time.perf_counter()
        summary, _ = verify(program.exported_program, program, args, {}, root=str(EXAMPLES))
        return time.perf_counter() - start, summary

    torch.set_num_threads(1)  # as in the worker's children
    cases = [
        ("MLP", MLP().eval(), mlp_inputs(), "net.2.bias", None, 3),
        ("Encoder (6 blocks)", build_encoder(), encoder_inputs(), "layers.2.ff.0.bias", dynamic_shapes(), 1),
    ]
    rows = []
    for label, model, args, bias, dynamic, stock_runs in cases:
        program = broken_program(model, args, bias, dynamic)
        ours_runs = [ours(program, args) for _ in range(5)]
        summary = ours_runs[-1][1]
        stock = [stock_first(program, args) for _ in range(stock_runs)]
        first = summary.first_mismatch
        rows.append(dict(model=label, ours=statistics.median(s for s, _ in ours_runs),
                         stock=statistics.median(s for s, _, _ in stock), stock_runs=stock_runs,
                         values=stock[0][2], node=first.node if first else None,
                         module=first.module if first else None, stock_node=stock[0][1]))
        print(rows[-1], file=sys.stderr)
    return {"rows": rows}


def render_locate(data: dict) -> list[str]:
    lines = ["| model | onnxlens verify + locate (median of 5) | stock compare_intermediates | stock runs | values stock compared | speed-up | onnxlens: first bad value | module | stock: first value past tolerance |",
             "|---|---:|---:|---:|---:|---:|---|---|---|"]
    for r in data["rows"]:
        lines.append(f"| {r['model']} | {r['ours']:.3f} s | {r['stock']:.2f} s | {r['stock_runs']} | {r['values']} "
                     f"| {r['stock'] / r['ours']:.0f}× | `{r['node']}` | `{r['module']}` | `{r['stock_node']}` |")
    return lines


# --- noise --------------------------------------------------------------------------------------

NOISE_CASES = [
    # label, workspace file text, model, inputs
    ("whisper-tiny (float32)", "speech.py", '''
import torch
from whisper.model import ModelDimensions, Whisper

TINY = ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=384, n_audio_head=6, n_audio_layer=4,
                       n_vocab=51865, n_text_ctx=448, n_text_state=384, n_text_head=6, n_text_layer=4)


def build():
    torch.manual_seed(0)
    model = Whisper(TINY).eval()
    torch.nn.init.normal_(model.decoder.positional_embedding, std=0.01)  # torch.empty in whisper
    return model


def inputs():
    generator = torch.Generator().manual_seed(1)
    return (torch.randn(1, 80, 3000, generator=generator), torch.randint(0, 51865, (1, 8), generator=generator))
'''),
    ("BERT-base (float32)", "bert.py", '''
import torch
from transformers import BertConfig, BertModel


def build():
    torch.manual_seed(0)
    return BertModel(BertConfig()).eval()


def inputs():
    return (torch.randint(0, 30522, (1, 64), generator=torch.Generator().manual_seed(0)),)
'''),
    ("GPT-2 (float32)", "gpt2.py", '''
import torch
from transformers import GPT2Config, GPT2LMHeadModel


def build():
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(use_cache=False)).eval()


def inputs():
    return (torch.randint(0, 50257, (1, 32), generator=torch.Generator().manual_seed(0)),)
'''),
    ("example encoder (float32)", "encoder32.py", '''
import torch
from models.encoder import build_encoder, example_inputs


def build():
    return build_encoder()


def inputs():
    return example_inputs()
'''),
    ("example encoder (float16)", "encoder16.py", '''
import torch
from models.encoder import build_encoder, example_inputs


def build():
    return build_encoder().half()


def inputs():
    return tuple(x.half() for x in example_inputs())
'''),
]


def noise() -> dict:
    import torch

    from onnxlens.exporter.pipeline import Pipeline
    from onnxlens.exporter.torch_internals.active import internals
    from onnxlens.exporter.types import TargetSpec
    from onnxlens.exporter.verify import divergence, runtime

    torch.set_num_threads(os.cpu_count() or 1)
    pipeline = Pipeline()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        shutil.copytree(EXAMPLES / "models", root / "models")
        for label, file, text in NOISE_CASES:
            (root / file).write_text(text.lstrip())
            module = file.removesuffix(".py")
            spec = TargetSpec(name=module, root=str(root), model=f"{file}:build", inputs=f"{file}:inputs",
                              output=str(root / "out" / f"{module}.onnx"), report=str(root / "out" / f"{module}.md"),
                              verify=False)
            job = pipeline.export(spec)
            assert job.result.status == "ok", [f.message for f in job.result.findings]
            program, model = job.decomposed, job.onnx_program.model
            args, kwargs = job.target.args, job.target.kwargs
            feeds = runtime.ort_feeds(model, runtime.user_inputs(program, args, kwargs))
            found = divergence.candidates(program, model)
            outputs = {v.name for v in model.graph.outputs}
            sessions = runtime.Sessions(model)
            names = list(dict.fromkeys(c.fetch_name for c in found))
            session = sessions.session([c.value for c in found if c.fetch_name not in outputs])
            fetched = dict(zip(names, runtime.run(session, feeds, names)))
            by_node = {c.node: c for c in found}
            units, old_fails = [], 0

            class Measure(torch.fx.Interpreter):
                def run_node(self, node):
                    result = super().run_node(node)
                    candidate = by_node.get(node)
                    actual = fetched.get(candidate.fetch_name) if candidate is not None else None
                    if (isinstance(result, torch.Tensor) and result.is_floating_point() and isinstance(actual, torch.Tensor)
                            and actual.shape == result.shape and result.numel()):
                        nonlocal old_fails
                        expected, got = result.double(), actual.double()
                        finite = torch.isfinite(expected) & torch.isfinite(got)
                        if bool(finite.any()):
                            expected, got = expected[finite], got[finite]
                            scale = float(expected.abs().max())
                            difference = (expected - got).abs()
                            old_fails += bool((difference > 1e-5 + 1e-3 * expected.abs()).any())
                            if scale:
                                units.append(float(difference.max()) / (torch.finfo(result.dtype).eps * scale))
                    return result

            with torch.no_grad():
                Measure(program.graph_module).run(*internals.graph_module_inputs(program, args, kwargs))
            units.sort()
            rows.append(dict(model=label, values=len(units), median=units[len(units) // 2],
                             p99=units[min(len(units) - 1, int(len(units) * 0.99))], max=units[-1],
                             old_fails=old_fails))
            print(rows[-1], file=sys.stderr)
    return {"rows": rows}


def render_noise(data: dict) -> list[str]:
    lines = ["| correct export | values compared | largest difference, in eps at the value's scale: median | 99th percentile | max | values past rtol 1e-3 / atol 1e-5 alone |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in data["rows"]:
        lines.append(f"| {r['model']} | {r['values']} | {r['median']:.1f} | {r['p99']:.1f} | {r['max']:.1f} | {r['old_fails']} |")
    return lines


# --- share --------------------------------------------------------------------------------------

SCENARIOS = {
    # name: (inputs factory, dynamic shapes factory, verify-inputs, what each timed run does
    # first, measured for --before too)
    "first save": ("inputs", None, None, "forget", True),
    "save, graph unchanged": ("inputs", None, None, "comment", True),
    "2 images, dynamic batch": ("inputs_pair", "batch_shapes", None, "forget", False),
    "2 images, dynamic batch, verify-inputs = small": ("inputs_pair", "batch_shapes", "small", "forget", False),
}
STOCK = "stock torch.onnx.export(dynamo=True), one image"


def measure(scenario: str, runs: int, source: str | None) -> list[dict]:
    """In a process of its own: `runs` exports of the scenario after a warm-up (and, for a save
    that leaves the graph unchanged, one export that verifies first)."""
    if source:
        sys.path.insert(0, source)
    import torch

    from onnxlens.exporter.pipeline import Pipeline
    from onnxlens.exporter.types import TargetSpec

    import onnxlens.exporter

    warnings.simplefilter("ignore")
    torch.set_num_threads(os.cpu_count() or 1)  # the language server's one job gets every core
    if source:  # the onnxlens measured is the one asked for, not the installed one
        assert Path(onnxlens.exporter.__file__).is_relative_to(source), onnxlens.exporter.__file__
    if scenario == STOCK:
        return stock(runs)
    inputs, shapes, verify_inputs, before_each, _ = SCENARIOS[scenario]
    pipeline = Pipeline()
    pipeline.warm_up()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        model_file = root / "sam_vit_b.py"
        shutil.copy(HERE / "models" / "sam_vit_b.py", model_file)
        options = dict(verify_inputs=verify_inputs) if verify_inputs else {}
        spec = TargetSpec(name="sam", root=str(root), model="sam_vit_b.py:build", inputs=f"sam_vit_b.py:{inputs}",
                          dynamic_shapes=f"sam_vit_b.py:{shapes}" if shapes else None,
                          output=str(root / ".onnxlens" / "sam.onnx"),
                          report=str(root / ".onnxlens" / "reports" / "sam.md"), verify=True, **options)
        record = root / ".onnxlens" / "cache" / "sam.verified.json"
        if before_each == "comment":
            pipeline.run(spec)  # the save before: it verifies (and keeps what it verified)
        timed = []
        for run in range(runs):
            if before_each == "forget":
                record.unlink(missing_ok=True)
            else:
                model_file.write_text(f"# edit {run}\n" + model_file.read_text())
            result = pipeline.run(spec)
            verification = result.verification
            timed.append(dict(status=result.status, seconds=result.seconds, verify=result.stages.get("verify", 0.0),
                              stages=result.stages, reused=bool(getattr(verification, "reused", None)),
                              inputs=getattr(verification, "inputs", None),
                              other_sizes=getattr(verification, "other_sizes", None),
                              findings=[f.code for f in result.findings]))
            print(json.dumps(timed[-1]), file=sys.stderr)
    return timed


def stock(runs: int) -> list[dict]:
    """`runs` stock exports of the encoder (no verification), after one that pays torch's lazy
    first-export costs (as the Pipeline's warm-up does)."""
    import torch

    sys.path.insert(0, str(HERE / "models"))
    import sam_vit_b

    model, args = sam_vit_b.build(), sam_vit_b.inputs()
    torch.onnx.export(torch.nn.Sequential(torch.nn.Linear(4, 4)), (torch.randn(2, 4),), dynamo=True, verbose=False)
    timed = []
    for _ in range(runs):
        start = time.perf_counter()
        torch.onnx.export(model, args, dynamo=True, verbose=False)
        timed.append(dict(seconds=time.perf_counter() - start))
        print(json.dumps(timed[-1]), file=sys.stderr)
    return timed


def share(runs: int, before: str | None) -> dict:
    sources = [("after", _commit(), None)]
    scratch = None
    if before:
        scratch = Path(tempfile.mkdtemp(prefix="onnxlens-before-"))
        checkout = scratch / "onnxlens"
        checkout.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", before, "exporter", "server"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(checkout)], input=archive, check=True)
        short = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", before], capture_output=True,
                               text=True, check=True).stdout.strip()
        sources.insert(0, ("before", short, str(scratch)))
    results = {}
    try:
        for label, commit, source in sources:
            for scenario in (*SCENARIOS, STOCK) if label == "after" else [s for s, v in SCENARIOS.items() if v[4]]:
                command = [sys.executable, "-m", "benchmarks.verification", "--measure", scenario, "--runs", str(runs)]
                if source:
                    command += ["--source", source]
                process = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
                if process.returncode != 0:
                    raise RuntimeError(f"{label} {scenario}: {process.stderr[-3000:]}")
                timed = json.loads(process.stdout.strip().splitlines()[-1])
                if scenario == STOCK:
                    results["stock"] = timed
                else:
                    results.setdefault(label, {"commit": commit, "scenarios": {}})["scenarios"][scenario] = timed
                print(label, scenario, "done", file=sys.stderr)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return {"runs": runs, "threads": os.cpu_count(), **results}


def render_share(data: dict) -> list[str]:
    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.1f} s ({min(values):.1f}–{max(values):.1f})"

    lines = [f"Medians of {data['runs']} runs (lowest–highest in brackets), torch at {data['threads']} threads, "
             "each scenario in a fresh process. A save: the pipeline's export up to its result and saved model "
             "(`result.seconds`); verification: its `verify` stage (the second-shape check included); the rest: "
             "load, capture, decomposition, translation, optimization, checker, save. Scenarios with 2 images are "
             "measured on this branch only (`verify-inputs` is new). The scenarios run one after another, not "
             "interleaved: on a shared machine the load moves between them, and the rest of the save, the same "
             "work before and after, shows by how much.",
             "",
             "| onnxlens | scenario | save | verification | rest of the save | verification's share | what verification did |",
             "|---|---|---:|---:|---:|---:|---|"]
    for label in ("before", "after"):
        if label not in data:
            continue
        for scenario, timed in data[label]["scenarios"].items():
            saves, verifies = [t["seconds"] for t in timed], [t["verify"] for t in timed]
            rest = [s - v for s, v in zip(saves, verifies)]
            share = statistics.median(v / s for s, v in zip(saves, verifies))
            last = timed[-1]
            did = ("reused an unchanged one" if last["reused"] else f"ran on {last['inputs']}" if last["inputs"]
                   else "ran on the example inputs")
            if last["other_sizes"]:
                did += f"; second shape: {last['other_sizes']}"
            if last["findings"]:
                did += f"; findings: {', '.join(last['findings'])}"
            lines.append(f"| {label} (`{data[label]['commit']}`) | {scenario} | {spread(saves)} | {spread(verifies)} "
                         f"| {spread(rest)} | {share:.0%} | {did} |")
    if "stock" in data:
        lines.append(f"| stock | {STOCK} | {spread([t['seconds'] for t in data['stock']])} | – | – | – | no verification |")
    return lines


# --- the file -----------------------------------------------------------------------------------

TITLES = {
    "locate": ("Locating the first diverging value", render_locate),
    "noise": ("The noise floor: how far correct exports differ", render_noise),
    "share": ("Verification's share of a save: segment-anything ViT-B image encoder, 1024x1024", render_share),
}


def write(results: dict) -> None:
    lines = ["# Verification", "", "`.venv/bin/python -m benchmarks.verification` (its docstring says what each "
             "section measures); each section as its last run measured it.", ""]
    for section in SECTIONS:
        if section not in results:
            continue
        title, render = TITLES[section]
        data = results[section]
        lines += [f"## {title}", "", f"Measured at `{data['commit']}` on {data['machine']}.", "", *render(data), ""]
    (HERE / "VERIFICATION.md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", default=",".join(SECTIONS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", help="a commit whose onnxlens the share section measures too")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # one share scenario, in a process of its own
    parser.add_argument("--source", help=argparse.SUPPRESS)  # ... with the onnxlens under this directory
    options = parser.parse_args()
    if options.measure:
        print(json.dumps(measure(options.measure, options.runs, options.source)))
        return
    warnings.simplefilter("ignore")
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    for section in options.section.split(","):
        if section == "locate":
            data = locate()
        elif section == "noise":
            data = noise()
        elif section == "share":
            data = share(options.runs, options.before)
        else:
            raise SystemExit(f"unknown section {section!r}: {', '.join(SECTIONS)}")
        results[section] = {"commit": _commit(), "machine": _machine(), **data}
        RESULTS.write_text(json.dumps(results, indent=1))
        write(results)
    print((HERE / "VERIFICATION.md").read_text())


if __name__ == "__main__":
    main()
