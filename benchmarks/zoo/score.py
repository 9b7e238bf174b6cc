"""Scores onnxlens against the zoo's record.

    .venv/bin/python -m benchmarks.zoo.score            # the whole zoo; writes RESULTS.md, results.json
    .venv/bin/python -m benchmarks.zoo.score --fast     # the CI subset (cases with fast = true)
    .venv/bin/python -m benchmarks.zoo.score --library kornia --case kornia-perspective

For every case: the stock exporter in a fresh process (benchmarks/zoo/stock.py), then
`onnxlens check DIR --format json --no-cache` over the library's targets, and the comparison
with the record (each library's cases.toml, see README.md):

* a model the stock exporter exports must export in onnxlens with no error finding (else a
  *false failure*), and the two .onnx files must be byte-identical;
* a failure's responsible lines (found by hand) must each be the primary or a related location
  of one of onnxlens's error findings (else a *missed line*);
* no finding may be an onnxlens internal error;
* the stock outcome observed must be the recorded one (else the record is stale).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.zoo.stock import RESULT_PREFIX

ZOO = Path(__file__).resolve().parent
REPO = ZOO.parent.parent
INTERNAL_MARK = "please report this"


@dataclass
class Case:
    library: str
    root: Path
    target: str
    model: str
    stock: str  # "exports" | "fails", as recorded
    classes: list[int] = field(default_factory=list)
    responsible: list[str] = field(default_factory=list)  # "path:line", path relative to site-packages or root
    how: str = ""
    note: str = ""
    fast: bool = False
    # "varies": two stock runs in fresh processes already differ (the library writes generated
    # code to random temporary paths that the stack traces name): compared without metadata.
    stock_bytes: str = "stable"
    # "invalid": the stock exporter writes a file that onnx.checker / onnxruntime reject. onnxlens
    # must fail it (that is not a false failure), on the responsible lines.
    stock_output: str = "valid"

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

    @property
    def passed(self) -> bool:
        return (not self.false_failure and not self.internal_error and not self.lines_missed
                and self.stock_observed == self.stock_recorded and self.identical is not False)


def load_cases(library: str | None = None) -> list[Case]:
    cases = []
    for record in sorted(ZOO.glob("*/cases.toml")):
        name = record.parent.name
        if library and name != library:
            continue
        for entry in tomllib.loads(record.read_text())["case"]:
            responsible = entry.get("responsible", [])
            cases.append(Case(library=name, root=record.parent, target=entry["target"], model=entry["model"],
                              stock=entry["stock"], classes=entry.get("classes", []),
                              responsible=[responsible] if isinstance(responsible, str) else responsible,
                              how=entry.get("how", ""), note=entry.get("note", ""), fast=entry.get("fast", False),
                              stock_bytes=entry.get("stock_bytes", "stable"),
                              stock_output=entry.get("stock_output", "valid")))
    return cases


def run_stock(case: Case, out: Path) -> dict:
    process = subprocess.run([sys.executable, "-m", "benchmarks.zoo.stock", str(case.root), case.target, str(out)],
                             cwd=REPO, capture_output=True, text=True, timeout=900)
    lines = [line for line in process.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if not lines:
        tail = process.stderr.strip().splitlines()[-1:]
        return {"outcome": "crashed", "error": tail[0] if tail else None, "seconds": None}
    return json.loads(lines[-1][len(RESULT_PREFIX):])


def run_onnxlens(root: Path, targets: list[str]) -> dict[str, dict]:
    onnxlens = shutil.which("onnxlens", path=os.path.dirname(sys.executable)) or "onnxlens"
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
    status = (target or {}).get("status", "missing")
    identical = None
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
                 onnxlens_seconds=(target or {}).get("seconds"))


def score_all(cases: list[Case], progress=print) -> list[Score]:
    scores = []
    by_root: dict[Path, list[Case]] = {}
    for case in cases:
        by_root.setdefault(case.root, []).append(case)
    with tempfile.TemporaryDirectory(prefix="onnxlens-zoo-") as scratch:
        for root, group in by_root.items():
            stock = {}
            for case in group:
                # Named as onnxlens names it: the external data file's name is inside the .onnx.
                out = Path(scratch) / case.library / f"{case.target}.onnx"
                out.parent.mkdir(exist_ok=True)
                stock[case.target] = (run_stock(case, out), out)
                progress(f"stock    {case.id}: {stock[case.target][0]['outcome']}")
            targets = run_onnxlens(root, [case.target for case in group])
            for case in group:
                result = score(case, stock[case.target][0], targets.get(case.target), stock[case.target][1])
                scores.append(result)
                progress(f"onnxlens {case.id}: {'ok' if result.passed else 'FAIL'} "
                         f"({result.where or result.status}) {result.message[:100]}")
    return scores


def table(scores: list[Score]) -> str:
    failures = [s for s in scores if s.stock_recorded == "fails" or s.lines_found or s.lines_missed]
    with_line = [s for s in failures if s.lines_found or s.lines_missed]
    hit = [s for s in with_line if not s.lines_missed]
    exports = [s for s in scores if s.stock_recorded == "exports" and not (s.lines_found or s.lines_missed)]
    lines = [
        "# Real-world zoo: results",
        "",
        "Written by `.venv/bin/python -m benchmarks.zoo.score` (see README.md). "
        f"{len(scores)} models from {len({s.library for s in scores})} libraries.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| responsible line found (primary or related), failures that have one | {len(hit)} / {len(with_line)} |",
        f"| false failures (stock exports a valid model, onnxlens reports an error) | {sum(s.false_failure for s in scores)} / {len(exports)} |",
        f"| onnxlens internal errors | {sum(s.internal_error for s in scores)} |",
        f"| byte-identical .onnx, models that export | {sum(s.identical is True for s in exports)} / {len(exports)} |",
        f"| stock outcome differs from the record | {sum(s.stock_observed != s.stock_recorded for s in scores)} |",
        "",
        "| case | classes | stock | onnxlens | line | message (first line) | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        line = s.where or ("—" if s.stock_recorded == "fails" else "")
        identical = {True: ", identical", False: ", NOT identical", None: ""}[s.identical]
        onnxlens = f"{s.status}{identical}" + (" **false failure**" if s.false_failure else "") + (
            " **internal error**" if s.internal_error else "")
        message = s.message.replace("|", "\\|")[:140]
        lines.append(f"| {s.id} | {', '.join(map(str, s.classes)) or '—'} | {s.stock_observed} | {onnxlens} | "
                     f"{line} | {message} | {s.note.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="only the CI subset")
    parser.add_argument("--library")
    parser.add_argument("--case", action="append", help="library/target (repeatable)")
    parser.add_argument("--no-write", action="store_true", help="do not write RESULTS.md / results.json")
    parser.add_argument("--update", action="store_true",
                        help="with --library/--case: replace those cases in results.json and rewrite RESULTS.md")
    options = parser.parse_args(argv)
    cases = [c for c in load_cases(options.library)
             if (not options.fast or c.fast) and (not options.case or c.id in options.case)]
    scores = score_all(cases)
    if options.update and (ZOO / "results.json").exists():
        fresh = {score.id: score for score in scores}
        earlier = [Score(**entry) for entry in json.loads((ZOO / "results.json").read_text())]
        known = {score.id for score in earlier}
        scores = [fresh.get(score.id, score) for score in earlier] + [s for s in scores if s.id not in known]
    text = table(scores)
    print(text)
    if not options.no_write and (options.update or not (options.fast or options.case or options.library)):
        (ZOO / "RESULTS.md").write_text(text)
        (ZOO / "results.json").write_text(json.dumps([asdict(s) for s in scores], indent=1) + "\n")
    return 0 if all(s.passed for s in scores) else 1


if __name__ == "__main__":
    sys.exit(main())
