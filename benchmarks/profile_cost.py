"""What the cost per line (the target's `profile`) adds to a save.

    .venv/bin/python benchmarks/profile_cost.py [--runs 7]

Per model (graph_lines.py's: the example encoder, BERT-base, BERT-base behind a user's lines),
one real export in one process with a warm Pipeline, verification off; then the verify stage's
work on that export, without and with the profiler, alternating, `--runs` times each: the
verification (`exporter.verify.verify`: the onnxruntime session, the run, torch's run, the
comparison) and, with the profiler, what line_costs.record adds (reading onnxruntime's profile
and the optimized graph it saved, the lines, writing the profile beside the report). Medians
in this process's CPU time (one thread, as the worker's children with `jobs` = the core
count; CPU time holds still while other processes load the machine), elapsed time beside it.

Also, from the last profiled run: the kernels, the share of their time on the user's lines,
whether the lines and the rest add up to the profile's total, and the profile's size.

Writes benchmarks/PROFILE_COST.md.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.graph_lines import columns, main_over_models  # noqa: E402
from benchmarks.run import load_average, machine  # noqa: E402
from benchmarks.commit import measured_commit  # noqa: E402
from onnxlens.exporter.pipeline import Pipeline  # noqa: E402
from onnxlens.exporter.pipeline.output import line_costs  # noqa: E402
from onnxlens.exporter.verify import verify  # noqa: E402
from onnxlens.exporter.verify.profiling import Profiler  # noqa: E402

OUT = REPO / "benchmarks" / "PROFILE_COST.md"


def verification(job, profiled: bool) -> tuple[float, float]:
    """One verification of the export as the verify stage runs it: (CPU s, elapsed s)."""
    cpu, wall = time.process_time(), time.perf_counter()
    profiler = Profiler() if profiled else None
    summary, _ = verify(job.decomposed, job.onnx_program, job.target.args, job.target.kwargs,
                        workspace=job.workspace, fallback=job.fallback, profiler=profiler)
    assert summary.error is None, summary.error
    if profiler is not None:
        line_costs.record(job, profiler)
        assert job.result.cost is not None, profiler.error
    return time.process_time() - cpu, time.perf_counter() - wall


def measure(pipeline: Pipeline, model, runs: int) -> dict:
    """The export without its verification, then the verification timed without and with the profiler."""
    job = pipeline.export(dataclasses.replace(model.spec, verify=False), lambda event: None)
    assert job.result.status == "ok", [f.message for f in job.result.findings]
    times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    verification(job, True)  # onnxruntime's first session in the process pays its own start-up
    for _ in range(runs):
        for profiled in (False, True):
            times[profiled].append(verification(job, profiled))
    cost = job.result.cost
    attributed = sum(line.microseconds for line in cost.lines)
    events = json.loads(Path(cost.profile).read_text())
    onnxruntime_total = sum(e["dur"] for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"))

    def median(profiled: bool, index: int) -> float:
        return statistics.median(pair[index] for pair in times[profiled])

    return {
        "export": job.result.seconds - job.result.stages.get("verify", 0.0),
        "plain": (median(False, 0), median(False, 1)),
        "profiled": (median(True, 0), median(True, 1)),
        "record": cost.seconds,
        "kernels": cost.kernel_count,
        "total_us": cost.total_us,
        "onnxruntime_total": onnxruntime_total,
        "run_us": cost.run_us,
        "lines": len(cost.lines),
        "attributed": attributed / cost.total_us if cost.total_us else 0.0,
        "sums": abs(attributed + cost.other_us - cost.total_us) < 1e-6 * max(1.0, cost.total_us),
        "profile_bytes": Path(cost.profile).stat().st_size,
        "top": cost.lines[0].describe() if cost.lines else "",
    }


def ms(pair: tuple[float, float]) -> str:
    cpu, wall = pair
    return f"{cpu * 1000:.0f} ms ({wall * 1000:.0f})"


def render(results: dict[str, dict], runs: int, started: str) -> str:
    header, row = columns(results)

    def added(r: dict) -> str:
        cpu = r["profiled"][0] - r["plain"][0]
        wall = r["profiled"][1] - r["plain"][1]
        return f"**{cpu * 1000:+.0f} ms** ({wall * 1000:+.0f}), {cpu / r['plain'][0]:+.0%} of the verification"

    rows = [
        row("export without verification (one run, elapsed)", lambda r: f"{r['export']:.2f} s"),
        row("verification, profiler off", lambda r: ms(r["plain"])),
        row("verification, profiler on + cost per line", lambda r: ms(r["profiled"])),
        row("**added per save**", added),
        row("&nbsp;&nbsp;of which: the profile read and put on lines (`line_costs.record`, elapsed)",
            lambda r: f"{r['record'] * 1000:.1f} ms"),
        row("kernels in the run / lines with a cost", lambda r: f"{r['kernels']} / {r['lines']}"),
        row("kernel time (onnxlens / onnxruntime's profile) and the run", lambda r:
            f"{r['total_us'] / 1000:.2f} / {r['onnxruntime_total'] / 1000:.2f} / {r['run_us'] / 1000:.2f} ms"),
        row("share of the kernel time on the user's lines", lambda r: f"{r['attributed']:.1%}"),
        row("lines + the rest = the profile's total", lambda r: "yes" if r["sums"] else "**no**"),
        row("onnxruntime's profile kept beside the report", lambda r: f"{r['profile_bytes'] / 1024:.0f} KiB"),
        row("the costliest line's lens", lambda r: f"`{r['top']}`" if r["top"] else "(no line of the workspace)"),
    ]
    load = load_average()
    commit = measured_commit(OUT)
    return "\n".join([
        "# The added work per save: cost per line (`profile = true`)",
        "",
        f"`.venv/bin/python benchmarks/profile_cost.py --runs {runs}`, {started}, at `{commit}`. "
        "One real export per model in one process with a warm Pipeline, then the verify stage's work on it "
        f"without and with onnxruntime's profiler, alternating: medians of {runs} runs each, CPU time of this "
        "process (one thread), elapsed in parentheses. The models are those of GRAPH_LINES.md: the example "
        "encoder, BERT-base (`benchmarks/models/bert_base.py`: transformers' lines only, so no line of the "
        "workspace gets a cost) and BERT-base behind a user's lines (tests/support/tagger.py).",
        "",
        *machine(),
        f"* load average at the end: {load}",
        "",
        header,
        *rows,
        "",
        "With the profiler, onnxruntime records an event per kernel, writes its profile when the run ends, and "
        "saves the optimized graph it ran (the weights' bytes go to /dev/null) so that fused kernels can be put "
        "on the nodes they stand for; onnxlens then reads both and puts each kernel on a line. With `profile` "
        "off (the default) none of this runs.",
        "",
    ])


def main() -> None:
    main_over_models(OUT, measure, render)


if __name__ == "__main__":
    main()
