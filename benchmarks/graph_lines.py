"""The work the inlay hints and the graph's change on save add to a save.

    .venv/bin/python benchmarks/graph_lines.py [--runs 7]

Per model, two real exports in one process with a warm Pipeline (as the zygote has it): the
model as it is, then with one line added (a LayerNorm call where the model has user lines; the
same model again for BERT-base, whose lines are all transformers'). Then each piece the feature
adds is timed on those exports, repeated `--runs` times, medians in this process's CPU time
(every piece runs on one thread; CPU time holds still while other processes load the machine),
elapsed time beside it:

* in the export child, after optimize: the line data and the graph summary (`lines.record`)
  against the line data alone as it was before the feature (lines.py at BASE_COMMIT, run on the
  same model), and its parts: what each line produced from the program (line_values), the
  graph's summary, the lines' text;
* in the export child, after the result: the report's "Change since the last export";
* over the pipe: the result's msgpack size with and without the new fields, and the previous
  graph the server sends with the job;
* in the language server, per result: the comparison (graph_change) and keeping the text of the
  files with line data (ExportedText.remember); per inlay hint request after an edit, the
  mapping of the export's text to the edited buffer (difflib).

Writes benchmarks/GRAPH_LINES.md.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Callable

import msgpack

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.run import load_average, machine  # noqa: E402
from benchmarks.commit import measured_commit  # noqa: E402
from onnxlens.exporter.graph_change import graph_change  # noqa: E402
from onnxlens.exporter.pipeline import Pipeline  # noqa: E402
from onnxlens.exporter.pipeline.output import graph_summary  # noqa: E402
from onnxlens.exporter.pipeline.tracing import line_values  # noqa: E402
from onnxlens.exporter.pipeline.output import lines as lines_module  # noqa: E402
from onnxlens.exporter.pipeline.tracing.stacks import full_traces  # noqa: E402
from onnxlens.exporter.report.change_section import change_section  # noqa: E402
from onnxlens.exporter.types import ExportedGraph, LineInfo, TargetSpec  # noqa: E402
from onnxlens.server.lsp.exported_text import ExportedText, unchanged_lines  # noqa: E402
from tests.support.tagger import tagger  # noqa: E402

BASE_COMMIT = "b62a60c"  # main before the feature: its lines.py is the line data as it was
OUT = REPO / "benchmarks" / "GRAPH_LINES.md"

class Model:
    def __init__(self, name: str, root: Path, file: str, model: str, inputs: str, shapes: str | None,
                 edit: tuple[str, str] | None) -> None:
        self.name, self.root, self.file = name, root, root / file
        self.spec = TargetSpec(name=name, root=str(root), model=f"{file}:{model}", inputs=f"{file}:{inputs}",
                               dynamic_shapes=f"{file}:{shapes}" if shapes else None,
                               output=str(root / ".onnxlens" / f"{name}.onnx"),
                               report=str(root / ".onnxlens" / "reports" / f"{name}.md"), verify=False)
        self.edit = edit  # (a line of the file, the line added after it), or None: the same model again


def models(scratch: Path) -> list[Model]:
    examples = scratch / "examples"
    shutil.copytree(REPO / "examples", examples, ignore=shutil.ignore_patterns(".onnxlens", "__pycache__"))
    bert = scratch / "bert"
    bert.mkdir()
    shutil.copy(REPO / "benchmarks" / "models" / "bert_base.py", bert / "bert_base.py")
    user = scratch / "tagger"
    user.mkdir()
    # Not models/tagger.py: the examples' `models` package is imported in this process already.
    (user / "bert_tagger.py").write_text(tagger(bert="BertConfig()", hidden=768, vocab=30522, rows=1, tokens=128))
    return [
        Model("encoder", examples, "models/encoder.py", "build_encoder", "example_inputs", "dynamic_shapes",
              ("    def forward(self, x: torch.Tensor) -> torch.Tensor:\n", "        x = self.norm1(x)\n")),
        Model("bert-base", bert, "bert_base.py", "build_model", "example_inputs", None, None),
        Model("bert-base tagger", user, "bert_tagger.py", "build", "example_inputs", "named",
              ("            hidden = block(hidden)\n", "        hidden = hidden * 2\n")),
    ]


def base_line_infos() -> types.ModuleType:
    """lines.py as it was before the feature, as a module (its `line_infos`)."""
    source = subprocess.run(["git", "show", f"{BASE_COMMIT}:exporter/pipeline/output/lines.py"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("lines_before")
    exec(compile(source, "lines_before.py", "exec"), module.__dict__)
    return module


def timed(function, runs: int) -> tuple[float, float]:
    """Medians of `runs` calls: (CPU seconds, elapsed seconds)."""
    cpu, wall = [], []
    for _ in range(runs):
        c, w = time.process_time(), time.perf_counter()
        function()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu), statistics.median(wall)


def measure(pipeline: Pipeline, model: Model, runs: int, before_module: types.ModuleType) -> dict:
    first = pipeline.export(model.spec, lambda event: None)
    assert first.result.status == "ok", [f.message for f in first.result.findings]
    previous = ExportedGraph.of(first.result)
    if model.edit is not None:
        anchor, added = model.edit
        text = model.file.read_text()
        assert anchor in text, anchor
        model.file.write_text(text.replace(anchor, anchor + added, 1))
    job = pipeline.export(model.spec, lambda event: None)
    assert job.result.status == "ok", [f.message for f in job.result.findings]
    result, onnx_model = job.result, job.onnx_program.model
    traces = full_traces(job.decomposed)
    origins = lines_module.NodeLines(job.workspace, traces)
    infos = lines_module.line_infos(onnx_model, origins)
    figures = {
        "fx_nodes": sum(1 for node in job.decomposed.graph.nodes if node.op == "call_function"),
        "onnx_nodes": result.node_count,
        "user_lines": len(result.lines),
        "hinted_lines": sum(1 for info in result.lines if info.produced),
        "before": timed(lambda: before_module.line_infos(onnx_model, job.workspace, traces), runs),
        "record": timed(lambda: lines_module.record(job, traces), runs),
        "line_infos": timed(lambda: lines_module.line_infos(onnx_model, lines_module.NodeLines(job.workspace, traces)), runs),
        # On fresh copies of the ONNX line data (add_values fills them in).
        "values": timed(lambda: line_values.add_values([LineInfo(file=i.file, line=i.line, ops=i.ops) for i in infos],
                                                       job.decomposed, onnx_model, job.workspace), runs),
        "summary": timed(lambda: graph_summary.summarize(job, onnx_model, origins.line), runs),
    }
    current = ExportedGraph.of(result)
    figures["change"] = timed(lambda: graph_change(previous, current), runs)
    figures["report_section"] = timed(lambda: change_section(previous, result, str), runs)
    with_fields = msgpack.packb(result.to_dict(), use_bin_type=True, default=str)
    bare = result.to_dict()
    bare["graph"] = None
    bare["lines"] = [{key: info[key] for key in ("file", "line", "ops", "outputs", "modules")} for info in bare["lines"]]
    figures["result_bytes"] = (len(msgpack.packb(bare, use_bin_type=True, default=str)), len(with_fields))
    figures["previous_bytes"] = len(msgpack.packb(previous.to_dict(), use_bin_type=True, default=str))
    texts = ExportedText(lambda path: Path(path).read_text(), lambda path: Path(path).read_text().splitlines())
    figures["remember"] = timed(lambda: texts.remember(("config", model.name), result), runs)
    source = model.file.read_text().splitlines()
    edited = source[:len(source) // 2] + ["        # a comment typed in the middle"] + source[len(source) // 2:]
    figures["mapping"] = timed(lambda: unchanged_lines(source, edited), runs)
    figures["file_lines"] = len(source)
    return figures


def ms(pair: tuple[float, float]) -> str:
    cpu, wall = pair
    return f"{cpu * 1000:.2f} ms ({wall * 1000:.2f})"


def columns(results: dict[str, dict]) -> tuple[str, Callable[[str, Callable[[dict], str]], str]]:
    """A table with a column per model: its header, and a row maker (a label, a cell per result)."""
    names = list(results)
    header = "| | " + " | ".join(names) + " |\n|---|" + "---:|" * len(names)

    def row(label: str, cell: Callable[[dict], str]) -> str:
        return f"| {label} | " + " | ".join(cell(results[name]) for name in names) + " |"

    return header, row


def render(results: dict[str, dict], runs: int, started: str) -> str:
    names = list(results)
    header, row = columns(results)

    rows = [
        row("FX nodes / ONNX nodes / lines with line data / lines with a hint",
            lambda r: f"{r['fx_nodes']} / {r['onnx_nodes']} / {r['user_lines']} / {r['hinted_lines']}"),
        "| **in the export child, after optimize** | " + " | " * len(names),
        row("line data before the feature (lines.py at `" + BASE_COMMIT + "`)", lambda r: ms(r["before"])),
        row("line data + graph summary now (`lines.record`)", lambda r: ms(r["record"])),
        row("**added per export**", lambda r: f"**{(r['record'][0] - r['before'][0]) * 1000:+.2f} ms** "
                                              f"({(r['record'][1] - r['before'][1]) * 1000:+.2f})"),
        row("&nbsp;&nbsp;of which: ONNX line data (+ text, initializer bytes)", lambda r: ms(r["line_infos"])),
        row("&nbsp;&nbsp;what each line produced (program walk: line_values)", lambda r: ms(r["values"])),
        row("&nbsp;&nbsp;graph summary", lambda r: ms(r["summary"])),
        "| **in the export child, after the result** | " + " | " * len(names),
        row("report: \"Change since the last export\"", lambda r: ms(r["report_section"])),
        "| **over the pipe** | " + " | " * len(names),
        row("result, msgpack bytes: without the new fields → with", lambda r: f"{r['result_bytes'][0]:,} → {r['result_bytes'][1]:,}"),
        row("previous graph sent with the job, bytes", lambda r: f"{r['previous_bytes']:,}"),
        "| **in the language server** | " + " | " * len(names),
        row("per result: compare with the previous graph", lambda r: ms(r["change"])),
        row("per result: keep the text of the files with line data", lambda r: ms(r["remember"])),
        row("per hint request after an edit: map the export's text to the buffer", lambda r: ms(r["mapping"]) + f" ({r['file_lines']} lines)"),
    ]
    load = load_average()
    commit = measured_commit(OUT)
    return "\n".join([
        "# The added work per save: inlay hints and the graph's change",
        "",
        f"`.venv/bin/python benchmarks/graph_lines.py --runs {runs}`, {started}, at `{commit}`. "
        "Two real exports per model in one process with a warm Pipeline (the second with one line added: a "
        "LayerNorm call in the encoder's block, `hidden * 2` after the tagger's blocks; BERT-base, whose lines are all "
        "transformers', exported twice as it is), then each piece timed on them: medians of "
        f"{runs} runs, CPU time of this process, elapsed in parentheses. BERT-base is `benchmarks/models/bert_base.py` "
        "(12 layers, hidden 768, random init, a library model: no line of the workspace, so no hints; "
        "the program walk still runs); the tagger is BERT-base behind a user's lines (tests/support/tagger.py: "
        "three blocks and a head, string dims batch/seq).",
        "",
        *machine(),
        f"* load average at the end: {load}",
        "",
        header,
        *rows,
        "",
        "The line data before the feature was the ONNX nodes' ops, outputs and modules per line; it now also reads "
        "each line's text and its initializers' bytes, walks the program the graph was translated from (each FX "
        "node's value and the line and module that made it) and summarizes the graph. Everything else the save "
        "does (capture, decompose, translate, optimize, save: seconds, benchmarks/ENGINE_STAGES.md) is unchanged.",
        "",
    ])


def main_over_models(out: Path, measure: Callable[[Pipeline, Model, int], dict],
                     render: Callable[[dict[str, dict], int, str], str]) -> None:
    """The `main` of a benchmark over `models()` (this one's and profile_cost.py's): `--runs`,
    torch at one thread as in the worker's children, one warm Pipeline for every model,
    `measure(pipeline, model, runs)` per model, `render(results, runs, date)` written to `out`."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    started = datetime.datetime.now().strftime("%Y-%m-%d")
    pipeline = Pipeline()
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for model in models(Path(scratch)):
            print(f"{model.name} ...", file=sys.stderr)
            results[model.name] = measure(pipeline, model, args.runs)
    out.write_text(render(results, args.runs, started))
    print(out.read_text())


def main() -> None:
    before_module = base_line_infos()
    main_over_models(OUT, lambda pipeline, model, runs: measure(pipeline, model, runs, before_module), render)


if __name__ == "__main__":
    main()
