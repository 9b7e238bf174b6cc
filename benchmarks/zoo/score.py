"""Scores onnxlens against the zoo's record.

    .venv/bin/python -m benchmarks.zoo.score            # the whole zoo; writes RESULTS.md, results.json
    .venv/bin/python -m benchmarks.zoo.score --fast     # the CI subset (cases with fast = true)
    .venv/bin/python -m benchmarks.zoo.score --library kornia --case kornia-perspective

For every case: the stock exporter in a fresh process (benchmarks/zoo/stock.py, forked after the imports), then
`onnxlens check DIR --format json --no-cache` over the library's targets, and the comparison
with the record (each library's cases.toml, see README.md):

* a model the stock exporter exports must export in onnxlens with no error finding (else a
  *false failure*), and the two .onnx files must be byte-identical;
* a failure's responsible lines (found by hand) must each be the primary or a related location
  of one of onnxlens's error findings (else a *missed line*);
* a case's `primary` lines (culprits in the workspace) must each be the primary location of one of
  onnxlens's error findings (else *not primary*), a measure of its own;
* no finding may be an onnxlens internal error;
* the stock outcome observed must be the recorded one (else the record is stale);
* onnxlens must give stock's answer (`differences`): the same outcome; for a failure, an error
  of the exporter step that raised in stock, naming the exception class torch's summary names
  (for an op without a translation: the op), with the line torch's message blames among its
  locations.

A library whose cases.toml names an `environment` runs, stock and onnxlens both, in that
environment's interpreter, `.venvs/zoo-NAME/` (made by `scripts/setup-zoo-NAME`, which the
scorer runs first: it does nothing when the environment is current); the others in this one.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.zoo.stock import SERVED_PREFIX

ZOO = Path(__file__).resolve().parent
REPO = ZOO.parent.parent
INTERNAL_MARK = "please report this"

# The exporter step stock raised in (stock.py) -> the codes of onnxlens's findings for it.
STEP_CODES = {
    "capture": {"torch-export"},
    "decompose": {"decomposition"},
    "translate": {"unsupported-op", "translation"},
    "optimize": {"translation"},
}


@dataclass
class Case:
    library: str
    root: Path
    target: str
    model: str
    stock: str  # "exports" | "fails", as recorded
    classes: list[int] = field(default_factory=list)
    responsible: list[str] = field(default_factory=list)  # "path:line", path relative to site-packages or root
    # The responsible lines in the workspace that must be the primary location of an error finding
    # (the culprit is the primary location where it is in the workspace).
    primary: list[str] = field(default_factory=list)
    # Of several responsible lines, the one whose problem the stock exporter's error is about (the
    # others surface only once it is fixed).
    reported_first: str = ""
    upstream: str = ""  # where the case comes from: "owner/repo path::test" (peer-style cases)
    how: str = ""
    note: str = ""
    fast: bool = False
    # "varies": two stock runs in fresh processes already differ (the library writes generated
    # code to random temporary paths that the stack traces name): compared without metadata.
    stock_bytes: str = "stable"
    # "invalid": the stock exporter writes a file that onnx.checker / onnxruntime reject. onnxlens
    # must fail it (that is not a false failure), on the responsible lines.
    stock_output: str = "valid"
    # The library's `environment` (cases.toml, top level): None for the scorer's own.
    environment: str | None = None

    @property
    def id(self) -> str:
        return f"{self.library}/{self.target}"


@dataclass
class Score:
    id: str
    library: str
    classes: list[int]
    stock_recorded: str
    stock_observed: str
    stock_error: str | None
    status: str  # onnxlens's target status
    errors: int  # error findings
    false_failure: bool
    internal_error: bool
    identical: bool | None  # .onnx bytes equal to stock's (None: not both written)
    lines_found: list[str]
    lines_missed: list[str]
    where: str  # "primary" | "related" | "missed" | "" (no responsible line)
    message: str  # onnxlens's first error message, first line
    note: str
    stock_seconds: float | None = None
    onnxlens_seconds: float | None = None
    # Where onnxlens's answer is not stock's (`differences`); empty: the same answer.
    differences: list[str] = field(default_factory=list)
    # How the .onnx files were compared: "bytes", or "without metadata" for a case whose stock
    # files already differ between two fresh processes (stock_bytes = "varies").
    compared: str = "bytes"
    primary_expected: list[str] = field(default_factory=list)
    primary_missed: list[str] = field(default_factory=list)  # expected primary, not the primary of any error

    @property
    def passed(self) -> bool:
        """Everything the record asks: stock's answer and every culprit where the record wants it."""
        return self.faithful and not self.lines_missed and not self.primary_missed

    @property
    def faithful(self) -> bool:
        """Stock's answer, and nothing of ours in the way: what no case may ever lose."""
        return (not self.false_failure and not self.internal_error and self.stock_observed == self.stock_recorded
                and self.identical is not False and not self.differences)


def regressions(scores: list[Score], record: list[dict]) -> list[str]:
    """What CI fails on: a case that is not faithful, or that lost a culprit (a responsible line,
    or a primary location) the committed record (results.json, measured by a whole run) found.
    A culprit the record never found is the zoo's open work, counted in RESULTS.md; one it found
    must stay found."""
    recorded = {entry["id"]: entry for entry in record}
    found = []
    for s in scores:
        if not s.faithful:
            found.append(f"{s.id}: not stock's answer: {'; '.join(s.differences) or _unfaithful(s)}")
        before = recorded.get(s.id)
        if before is None:
            continue
        lost = sorted(set(s.lines_missed) & set(before.get("lines_found", [])))
        had_primary = set(before.get("primary_expected", [])) - set(before.get("primary_missed", []))
        lost_primary = sorted(set(s.primary_missed) & had_primary)
        if lost or lost_primary:
            found.append(f"{s.id}: lost culprits the record found: lines {lost}, primary {lost_primary}")
    return found


def _unfaithful(s: Score) -> str:
    if s.false_failure:
        return "false failure"
    if s.internal_error:
        return "onnxlens internal error"
    if s.stock_observed != s.stock_recorded:
        return f"stock {s.stock_observed}, recorded {s.stock_recorded}"
    return "the .onnx files differ from stock's"


def load_cases(library: str | None = None) -> list[Case]:
    cases = []
    for record in sorted(ZOO.glob("*/cases.toml")):
        name = record.parent.name
        if library and name != library:
            continue
        document = tomllib.loads(record.read_text())
        for entry in document["case"]:
            responsible, primary = (_line_list(entry.get(key, [])) for key in ("responsible", "primary"))
            stray = [line for line in [*primary, entry.get("reported_first")] if line and line not in responsible]
            if stray:
                raise SystemExit(f"{record}: {entry['target']}: {stray} not among its responsible lines")
            cases.append(Case(library=name, root=record.parent, target=entry["target"], model=entry["model"],
                              stock=entry["stock"], classes=entry.get("classes", []), responsible=responsible,
                              primary=primary, reported_first=entry.get("reported_first", ""),
                              upstream=entry.get("upstream", ""),
                              how=entry.get("how", ""), note=entry.get("note", ""), fast=entry.get("fast", False),
                              stock_bytes=entry.get("stock_bytes", "stable"),
                              stock_output=entry.get("stock_output", "valid"),
                              environment=document.get("environment")))
    return cases


def _line_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def interpreter(environment: str | None) -> str:
    """The Python a library's cases run in: this one, or the named environment's, set up first."""
    if environment is None:
        return sys.executable
    setup = REPO / "scripts" / f"setup-zoo-{environment}"
    if not setup.is_file():
        raise SystemExit(f"environment {environment!r} (a cases.toml) has no set-up script: {setup} does not exist")
    subprocess.run([str(setup)], cwd=REPO, check=True)
    return str(REPO / ".venvs" / f"zoo-{environment}" / "bin" / "python")


STOCK_TIMEOUT = 900  # seconds for one stock export


def run_stock_library(root: Path, cases: list["Case"], scratch: Path, python: str,
                      progress=print) -> dict[str, tuple[dict, Path]]:
    """Each case's stock export, through one `stock.py --serve` process for the workspace (a
    fresh child per case, forked after the imports). A case whose child does not answer in
    STOCK_TIMEOUT kills the server; the next case gets a new one."""
    results: dict[str, tuple[dict, Path]] = {}
    server: subprocess.Popen | None = None
    try:
        for case in cases:
            # Named as onnxlens names it: the external data file's name is inside the .onnx.
            out = scratch / case.library / f"{case.target}.onnx"
            out.parent.mkdir(parents=True, exist_ok=True)
            result_file = out.with_suffix(".result.json")
            if server is None or server.poll() is not None:
                server = subprocess.Popen([python, "-m", "benchmarks.zoo.stock", "--serve", str(root)], cwd=REPO,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          text=True, bufsize=1)
            server.stdin.write(f"{case.target}\t{out}\t{result_file}\n")
            server.stdin.flush()
            answered = _served(server, case.target)
            if answered and result_file.exists():
                result = json.loads(result_file.read_text())
            else:
                if not answered:
                    server.kill()
                    server.wait()
                    server = None
                result = {"outcome": "crashed" if answered else "timed out", "error": None, "seconds": None}
            results[case.id] = (result, out)
            progress(f"stock    {case.id}: {result['outcome']}")
    finally:
        if server is not None:
            server.stdin.close()
            server.wait()
    return results


def _served(server: subprocess.Popen, target: str) -> bool:
    """Waits (at most STOCK_TIMEOUT) for the server's line saying `target` is done."""
    done = threading.Event()
    answered = []

    def read() -> None:
        for line in server.stdout:
            if line.startswith(SERVED_PREFIX) and line[len(SERVED_PREFIX):].strip() == target:
                answered.append(True)
                break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    done.wait(STOCK_TIMEOUT)
    return bool(answered)


def run_onnxlens(root: Path, targets: list[str], python: str) -> dict[str, dict]:
    onnxlens = shutil.which("onnxlens", path=os.path.dirname(python)) or "onnxlens"
    command = [onnxlens, "check", str(root), "--format", "json", "--no-cache", "--jobs", "1"]
    for target in targets:
        command += ["--target", target]
    process = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=3600)
    try:
        report = json.loads(process.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"onnxlens check {root} gave no JSON (exit {process.returncode}):\n{process.stderr[-4000:]}")
    return {target["name"]: target for target in report["targets"]}


def _matches(responsible: str, file: str, line: int, root: Path) -> bool:
    want_file, want_line = responsible.rsplit(":", 1)
    if int(want_line) != line:
        return False
    path = Path(file) if os.path.isabs(file) else root / file
    normalized = str(path.resolve()).replace("\\", "/")
    return normalized == str((root / want_file).resolve()) or normalized.endswith("/" + want_file)


def same_files(ours: Path, stock: Path) -> bool:
    """The public API's bytes: the data files byte-identical, and the graphs too once our data
    file's name in them is mapped to stock's (onnx_pair.public_api_difference, the one rule)."""
    from onnxlens.exporter.onnx_pair import public_api_difference

    return public_api_difference(ours, stock) is None


def _same_without_metadata(ours: Path, stock: Path) -> bool:
    """The models equal once every node's metadata (stack traces, names of modules) is dropped."""
    import onnx

    def stripped(path: Path) -> bytes:
        model = onnx.load(str(path), load_external_data=True)
        for node in model.graph.node:
            del node.metadata_props[:]
        return model.SerializeToString(deterministic=True)

    return stripped(ours) == stripped(stock)


def _op_named(text: str) -> str:
    """The op a DispatchError names, as onnxlens's messages name it: `aten.x.default` from
    `<OpOverload(op='aten.x', overload='default')>`, `round` from `<built-in function round>`,
    `map` from `<torch._higher_order_ops.map.MapImpl object at 0x…>`."""
    found = re.search(r"No ONNX function found for (.+?)(?:[;>.]\s|>$|$)", text)
    if not found:
        return ""
    named = found.group(1)
    overload = re.search(r"op='([^']+)', overload='([^']+)'", named)
    if overload:
        return f"{overload.group(1)}.{overload.group(2)}"
    function = re.search(r"function (\w+)", named)
    if function:
        return function.group(1).lstrip("_")
    impl = re.search(r"\.(\w+?)(?:Impl)? object", named)
    if impl:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", impl.group(1)).lower()
    return named.strip("<> ").split()[0]


def _in_torch(path: str) -> bool:
    return "/site-packages/torch/" in path.replace("\\", "/")


def differences(case: Case, stock: dict, diagnostics: list[dict]) -> list[str]:
    """Where onnxlens's answer is not stock's (see the module docstring)."""
    errors = [d for d in diagnostics if d["severity"] == "error"]
    stock_fails = stock["outcome"] != "exports" or case.stock_output == "invalid"
    if not stock_fails:
        return [f"stock exports; onnxlens: {errors[0]['code']}"] if errors else []
    if not errors:
        return [f"stock fails ({stock.get('error')}); onnxlens reports no error"]
    found = []
    step, cause = stock.get("step"), stock.get("cause")
    if step in STEP_CODES and case.stock_output != "invalid":
        same_step = [d for d in errors if d["code"] in STEP_CODES[step]]
        if not same_step:
            found.append(f"stock fails in {step}; onnxlens's errors are {sorted({d['code'] for d in errors})}")
        elif cause == "DispatchError":
            op = _op_named(stock.get("cause_text") or stock.get("error") or "")
            if op and not any(op in d["message"] for d in same_step if d["code"] == "unsupported-op"):
                found.append(f"stock: no translation for {op}; no unsupported-op finding names it")
        elif cause and not any(cause in d["message"] for d in same_step):
            found.append(f"stock raises {cause}; no {step} finding of onnxlens names it")
    location = stock.get("location")
    if location:
        file, line = location.rsplit(":", 1)
        ours = {(os.path.realpath(d["file"]) if os.path.isabs(d["file"]) else os.path.realpath(case.root / d["file"]),
                 d["line"]) for e in errors for d in [e, *e.get("related", [])]}
        model_code = not _in_torch(file) or any(_matches(r, file, int(line), case.root) for r in case.responsible)
        if model_code and (os.path.realpath(file), int(line)) not in ours:
            found.append(f"stock blames {location}; not among onnxlens's error locations")
    return found


def score(case: Case, stock: dict, target: dict | None, stock_onnx: Path) -> Score:
    diagnostics = (target or {}).get("diagnostics", [])
    errors = [d for d in diagnostics if d["severity"] == "error"]
    internal = any(INTERNAL_MARK in d["message"] for d in diagnostics)
    found, missed, kinds = [], [], set()
    for responsible in case.responsible:
        primary = any(_matches(responsible, d["file"], d["line"], case.root) for d in errors)
        related = any(_matches(responsible, r["file"], r["line"], case.root)
                      for d in errors for r in d.get("related", []))
        (found if primary or related else missed).append(responsible)
        kinds.add("primary" if primary else "related" if related else "missed")
    # The weakest placement among the responsible lines.
    where = next((kind for kind in ("missed", "related", "primary") if kind in kinds), "")
    primary_missed = [line for line in case.primary
                      if not any(_matches(line, d["file"], d["line"], case.root) for d in errors)]
    status = (target or {}).get("status", "missing")
    identical = None
    compared = "without metadata" if case.stock_bytes == "varies" else "bytes"
    onnx = (target or {}).get("onnx")
    if onnx and stock_onnx.exists():
        onnx_path = Path(onnx) if os.path.isabs(onnx) else case.root / onnx
        if case.stock_bytes == "varies":
            identical = _same_without_metadata(onnx_path, stock_onnx)
        else:
            identical = same_files(onnx_path, stock_onnx)
    message = errors[0]["message"].splitlines()[0] if errors else ""
    return Score(id=case.id, library=case.library, classes=case.classes, stock_recorded=case.stock,
                 stock_observed=stock["outcome"], stock_error=stock.get("error"), status=status, errors=len(errors),
                 false_failure=(stock["outcome"] == "exports" and case.stock_output == "valid"
                                and (status != "ok" or bool(errors))),
                 internal_error=internal, identical=identical, lines_found=found, lines_missed=missed,
                 where=where, message=message, note=case.note, stock_seconds=stock.get("seconds"),
                 onnxlens_seconds=(target or {}).get("seconds"),
                 differences=differences(case, stock, diagnostics) if target else ["onnxlens reported no result"],
                 compared=compared, primary_expected=list(case.primary), primary_missed=primary_missed)


def score_all(cases: list[Case], progress=print, jobs: int = 2) -> list[Score]:
    """Each workspace's stock exports (one warm server forking a fresh child per case) and its
    `onnxlens check`, `jobs` of those processes at a time (they are independent; the times they
    report are informative only), then the comparison."""
    by_root: dict[Path, list[Case]] = {}
    for case in cases:
        by_root.setdefault(case.root, []).append(case)
    python = {root: interpreter(group[0].environment) for root, group in by_root.items()}
    took = _recorded_seconds()
    stock, checked = {}, {}
    with tempfile.TemporaryDirectory(prefix="onnxlens-zoo-") as scratch, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        # Longest first (the pool starts its tasks in the order they come): one library's check
        # takes longer than all the others' stock exports, and started last it would run alone.
        tasks = []
        for root, group in by_root.items():
            tasks.append((sum(took.get((case.id, "stock_seconds"), 0.0) for case in group), stock, root,
                          run_stock_library, (root, group, Path(scratch), python[root], progress)))
            tasks.append((sum(took.get((case.id, "onnxlens_seconds"), 0.0) for case in group), checked, root,
                          run_onnxlens, (root, [case.target for case in group], python[root])))
        for _, futures, root, run, arguments in sorted(tasks, key=lambda task: -task[0]):
            futures[root] = pool.submit(run, *arguments)
        scores = []
        for root, group in by_root.items():
            targets = checked[root].result()
            stock_results = stock[root].result()
            for case in group:
                result_of_stock, stock_onnx = stock_results[case.id]
                result = score(case, result_of_stock, targets.get(case.target), stock_onnx)
                scores.append(result)
                progress(f"onnxlens {case.id}: {'ok' if result.passed else 'FAIL'} "
                         f"({result.where or result.status}) {result.message[:100]}")
    return scores


def _recorded_seconds() -> dict[tuple[str, str], float]:
    """(case id, "stock_seconds" | "onnxlens_seconds") -> seconds, as the committed record
    measured them: what orders the runs, nothing else."""
    try:
        record = json.loads((ZOO / "results.json").read_text())
    except (OSError, ValueError):
        return {}
    return {(case["id"], key): case.get(key) or 0.0 for case in record for key in ("stock_seconds", "onnxlens_seconds")}


def table(scores: list[Score], commit: str) -> str:
    """RESULTS.md: measured columns only. The hand-written notes on each case (what a user would
    still miss) stay in its cases.toml: they describe onnxlens when they were written."""
    failures = [s for s in scores if s.stock_recorded == "fails" or s.lines_found or s.lines_missed]
    with_line = [s for s in failures if s.lines_found or s.lines_missed]
    hit = [s for s in with_line if not s.lines_missed]
    exports = [s for s in scores if s.stock_recorded == "exports" and not (s.lines_found or s.lines_missed)]
    by_bytes = [s for s in exports if s.compared == "bytes"]
    by_graph = [s for s in exports if s.compared != "bytes"]
    with_primary = [s for s in scores if s.primary_expected]
    lines = [
        "# Real-world zoo: results",
        "",
        f"Written by `python -m benchmarks.zoo.score` (see README.md) at `{commit}`. "
        f"{len(scores)} models from {len({s.library for s in scores})} libraries.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| onnxlens's answer differs from stock's (outcome, step, exception, blamed line) | "
        f"{sum(bool(s.differences) for s in scores)} / {len(scores)} |",
        f"| responsible line found (primary or related), failures that have one | {len(hit)} / {len(with_line)} |",
        f"| culprit in the workspace is the primary location, cases that name one | "
        f"{sum(not s.primary_missed for s in with_primary)} / {len(with_primary)} |",
        f"| false failures (stock exports a valid model, onnxlens reports an error) | "
        f"{sum(s.false_failure for s in scores)} / {len(exports)} |",
        f"| onnxlens internal errors | {sum(s.internal_error for s in scores)} |",
        f"| byte-identical .onnx and .onnx.data, models that export | "
        f"{sum(s.identical is True for s in by_bytes)} / {len(by_bytes)} |",
        f"| equal without node metadata, models whose stock files differ between two fresh runs | "
        f"{sum(s.identical is True for s in by_graph)} / {len(by_graph)} |",
        f"| stock outcome differs from the record | {sum(s.stock_observed != s.stock_recorded for s in scores)} |",
        "",
        "| case | classes | stock | onnxlens | same answer | line | message (first line) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        line = s.where or ("—" if s.stock_recorded == "fails" else "")
        if s.primary_missed:
            line += f", not primary: {len(s.primary_missed)} of {len(s.primary_expected)}"
        identical = {True: f", identical ({s.compared})", False: f", NOT identical ({s.compared})", None: ""}[s.identical]
        onnxlens = f"{s.status}{identical}" + (" **false failure**" if s.false_failure else "") + (
            " **internal error**" if s.internal_error else "")
        same = "yes" if not s.differences else "**no**: " + "; ".join(s.differences)
        message = s.message.replace("|", "\\|")[:140]
        lines.append(f"| {s.id} | {', '.join(map(str, s.classes)) or '—'} | {s.stock_observed} | {onnxlens} | "
                     f"{same.replace('|', '/')} | {line} | {message} |")
    return "\n".join(lines) + "\n"


def _commit() -> str:
    """The commit the scored tree is (`+changes` when the tree differs from it)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/zoo/RESULTS.md",
                  ":!benchmarks/zoo/results.json")
    return head + ("+changes" if changed else "")


def summary(text: str) -> list[str]:
    """The measures of a RESULTS.md (its first table): what CI holds the committed file to."""
    return [line for line in text.split("\n\n| case |")[0].splitlines() if line.startswith("| ")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="only the cases marked fast")
    parser.add_argument("--library")
    parser.add_argument("--case", action="append", help="library/target (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="processes at a time (stock exports, onnxlens checks)")
    parser.add_argument("--no-write", action="store_true", help="do not write RESULTS.md / results.json")
    parser.add_argument("--check", metavar="DIR", type=Path,
                        help="CI: the whole zoo, RESULTS.md and results.json written to DIR; exit 1 also when the "
                             "committed RESULTS.md's measures differ from these")
    options = parser.parse_args(argv)
    cases = [c for c in load_cases(options.library)
             if (not options.fast or c.fast) and (not options.case or c.id in options.case)]
    partial = bool(options.fast or options.case or options.library)
    scores = score_all(cases, jobs=options.jobs)
    text = table(scores, _commit())
    print(text)
    if options.check:
        # CI: the committed record is the bar (see `regressions`); the summary below must be it.
        failing = regressions(scores, json.loads((ZOO / "results.json").read_text()))
        for line in failing:
            print(f"zoo: FAILED {line}", file=sys.stderr)
        passed = not failing
    else:
        passed = all(s.passed for s in scores)
    out = options.check or (None if options.no_write or partial else ZOO)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "RESULTS.md").write_text(text)
        (out / "results.json").write_text(json.dumps([asdict(s) for s in scores], indent=1) + "\n")
    if options.check and not partial:
        committed = summary((ZOO / "RESULTS.md").read_text())
        if committed != summary(text):
            print("benchmarks/zoo/RESULTS.md is stale: its measures are not this run's. Committed:\n  "
                  + "\n  ".join(committed) + "\nMeasured:\n  " + "\n  ".join(summary(text))
                  + f"\n(the measured file is {out / 'RESULTS.md'})", file=sys.stderr)
            passed = False
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
