"""`onnxlens` command line: `onnxlens serve` (LSP on stdio), `onnxlens check` (CI), `onnxlens
init` (export targets for the workspace's models), `onnxlens merge` (shards' results joined) and
`onnxlens --version` (onnxlens, the ONNX stack, the worker's interpreter, the torch adapter).

`onnxlens check` exports the workspace's targets through the same ExportService the language
server uses (one code path for CI and editor) and prints the findings as text, JSON or SARIF;
with `--baseline` it is a regression gate (server/check/gate.py), with `--shard K/N` one part of a CI
matrix (server/check/shards.py), with `--changed FILE...` a pre-commit hook (server/check/reach.py).

Exit status (`status_of`, one rule for `check` and `merge`): 0 no error findings, 1 error
findings (warnings such as `mismatch` do not fail) — with a baseline: 0 the gate passed, 1 it
failed —, 2 usage or config error, or an internal error of onnxlens itself. Our own failures
never end in a traceback (set ONNXLENS_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

from onnxlens.exporter import atomic
from onnxlens.exporter.types import ExportResult, TargetSpec
from onnxlens.exporter.versions import installed_versions, version_lines
from onnxlens.server.check.formats import RENDERERS, CheckRun, progress_line, to_json_data
from onnxlens.server.check.gate import BaselineError, Thresholds, compare, load_baseline
from onnxlens.server.check.shards import Shard, ShardError, parse_shard, shard_of
from onnxlens.server.config import Config, find_config, load_config

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A mistake in how onnxlens was called: a message and exit status 2."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


class _Versions(argparse.Action):
    """`--version`: read when asked (package metadata of the worker's interpreter, no torch import)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show onnxlens's, torch's and the ONNX stack's versions, the worker's "
                              "interpreter and the torch adapter, and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print("\n".join(version_lines(installed_versions(), sys.executable)))
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnxlens",
        description="See ONNX export problems on your own source lines.",
    )
    # The worker runs in this interpreter (ExportService's default; the editors start `onnxlens
    # serve` with the user's interpreter).
    parser.add_argument("--version", action=_Versions)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("serve", help="run the language server on stdio")
    check = sub.add_parser(
        "check", help="export every target and report problems (for CI)",
        description="Export the workspace's targets and report every problem. "
                    "Exit status: 0 no errors, 1 errors found, 2 usage or config error.",
    )
    check.add_argument("path", nargs="?", default=".", metavar="PATH",
                       help="a directory (searched upward for the config) or a config file; default: .")
    check.add_argument("--target", action="append", default=[], metavar="NAME",
                       help="export only this target (repeatable)")
    check.add_argument("--format", choices=sorted(RENDERERS), default="text", help="output format (default: text)")
    check.add_argument("--jobs", type=_positive_int, default=min(os.cpu_count() or 1, 4), metavar="N",
                       help="exports at once (default: CPUs, at most 4)")
    check.add_argument("--memory-budget", type=_positive_int, metavar="MB",
                       help="memory the export processes running at once may need together "
                            "(default: 80%% of the memory available when the check starts)")
    check.add_argument("--no-verify", action="store_true", help="skip the onnxruntime comparison")
    check.add_argument("--no-cache", action="store_true", help="export even if a cached result is valid")
    check.add_argument("--trust-cache", action="store_true",
                       help="also use cached results this user did not write on this machine (a cache "
                            "restored in CI); their files must still be unchanged")
    check.add_argument("--baseline", type=Path, metavar="FILE",
                       help="regression gate: compare with this saved result; the exit status says whether "
                            "the gate passed")
    check.add_argument("--save-baseline", type=Path, metavar="FILE",
                       help="write this run's JSON result, with what a later --baseline compares, to FILE")
    check.add_argument("--summary", type=Path, metavar="FILE",
                       help="write a markdown summary (for a pull-request comment) to FILE")
    check.add_argument("--shard", metavar="K/N",
                       help="export only the K-th of N parts of the targets (balanced by --baseline's times)")
    check.add_argument("--changed", nargs="+", default=None, metavar="FILE",
                       help="export only the targets these files reach (a pre-commit hook's staged files)")
    merge = sub.add_parser(
        "merge", help="join the JSON or SARIF results of `check --shard` runs into one",
        description="Join the results of the shards of one check (all JSON, or all SARIF) into the result "
                    "the unsharded check gives, on stdout. Exit status as `check`'s for the joined result "
                    "(with a baseline: the gate's), 2 for files that do not belong together.",
    )
    merge.add_argument("files", nargs="+", type=Path, metavar="FILE", help="the shards' results")
    merge.add_argument("--summary", type=Path, metavar="FILE",
                       help="write the markdown summary of the joined JSON result to FILE")
    init = sub.add_parser(
        "init", help="add an export target for each model the workspace defines",
        description="Find the nn.Module classes (constructed without arguments) and model factory "
                    "functions of the workspace's Python files and add an export target for each that "
                    "has none, with example inputs written beside it. Exit status: 0 done (or nothing "
                    "to add), 2 usage error or a config that cannot be extended.",
    )
    init.add_argument("path", nargs="?", default=".", metavar="PATH",
                      help="the workspace directory (a config above it makes its directory the workspace); default: .")
    init.add_argument("--dry-run", action="store_true", help="print what would be added; change nothing")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)  # usage mistakes: argparse prints them and exits 2
    try:
        status = COMMANDS[args.command](args)
    except UsageError as error:
        print(f"onnxlens: {error}", file=sys.stderr)
        status = EXIT_USAGE
    except KeyboardInterrupt:
        print("onnxlens: interrupted", file=sys.stderr)
        status = 130
    except Exception as error:  # noqa: BLE001 - our bug must still end in a message, not a traceback
        if os.environ.get("ONNXLENS_DEBUG"):
            raise
        print(f"onnxlens: internal error: {type(error).__name__}: {error} "
              f"(set ONNXLENS_DEBUG=1 for the traceback)", file=sys.stderr)
        status = EXIT_USAGE
    sys.exit(status)


def serve(args: argparse.Namespace | None = None) -> int:
    # Imported only here: `onnxlens check` must not pay for pygls.
    try:
        from onnxlens.server.lsp.app import serve as serve_lsp
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith("onnxlens.server.lsp"):
            raise
        raise UsageError("the language server is not part of this installation "
                         "(onnxlens.server.lsp.app is missing)") from None
    serve_lsp()
    return EXIT_OK


def check(args: argparse.Namespace) -> int:
    config = _load(Path(args.path))
    baseline = _baseline(args.baseline)
    specs, shard = _narrowed(args, config, baseline)
    if args.no_verify:
        specs = [dataclasses.replace(spec, verify=False) for spec in specs]

    show_progress = args.format == "text"
    started = time.perf_counter()

    def finished(result: ExportResult) -> None:
        if show_progress:
            print(progress_line(result), file=sys.stderr, flush=True)

    results: list[ExportResult] = []
    memory: dict[str, float] = {}
    internal_errors = 0
    if show_progress:
        _announce(shard, args.changed, len(specs))
    if specs:
        # No more jobs than targets: each job's torch gets the CPUs divided by the jobs, and a
        # job slot no target fills would leave its share of the CPUs idle.
        jobs = min(args.jobs, len(specs))
        if show_progress:
            print(f"onnxlens: exporting {len(specs)} target{'s' if len(specs) != 1 else ''} of "
                  f"{config.config_file} ({jobs} at once)", file=sys.stderr, flush=True)
        estimates = {t["name"]: float(t["memory_mb"]) for t in baseline["targets"] if t.get("memory_mb")} if baseline else {}
        results, memory, internal_errors = asyncio.run(
            _export_all(specs, jobs=jobs, use_cache=not args.no_cache, trust_cache=args.trust_cache,
                        on_done=finished, memory_budget_mb=args.memory_budget or _default_memory_budget(),
                        memory_estimates=estimates))
    run = CheckRun(config=config, results=results, seconds=time.perf_counter() - started,
                   selection=args.target, shard=shard, memory_mb=memory)
    if baseline is not None or args.save_baseline is not None:
        from onnxlens.server.check.graphs import summarize

        run.graphs = {result.target: summarize(result.onnx or result.graph_onnx)
                      for result in results if result.status == "ok" and (result.onnx or result.graph_onnx)}
    if baseline is not None:
        run.gate = compare(baseline, to_json_data(run), config, Thresholds.from_config(config.gate),
                           str(args.baseline))
    data = to_json_data(run) if (args.save_baseline or args.summary or run.gate) else None
    if args.save_baseline is not None:
        _write(args.save_baseline, json.dumps(data, indent=2) + "\n")
    if args.summary is not None:
        from onnxlens.server.check.summary import render_summary

        _write(args.summary, render_summary(data))
    sys.stdout.write(RENDERERS[args.format](run))
    sys.stdout.flush()

    return EXIT_USAGE if internal_errors else status_of(data if data is not None else to_json_data(run))


def _narrowed(args: argparse.Namespace, config: Config, baseline: dict | None) -> tuple[list[TargetSpec], Shard | None]:
    """The targets this check exports: --target's, then those --changed files reach, then this
    --shard's part of them (balanced by the baseline's times)."""
    specs = _select(config, args.target)
    if args.changed is not None:
        from onnxlens.server.service.cache import ResultCache
        from onnxlens.server.check.reach import reached

        cache = ResultCache(sys.executable, trust_foreign=args.trust_cache)
        specs = reached(config, specs, [Path(f) for f in args.changed], cache)
    if not args.shard:
        return specs, None
    try:
        index, count = parse_shard(args.shard)
    except ShardError as error:
        raise UsageError(str(error)) from None
    seconds = {t["name"]: float(t.get("seconds") or 0) for t in baseline["targets"]} if baseline else {}
    shard = shard_of([spec.name for spec in specs], index, count, seconds)
    return [spec for spec in specs if spec.name in shard.assigned], shard


def _announce(shard: Shard | None, changed: list[str] | None, selected: int) -> None:
    """What --shard and --changed left to export (text mode, stderr)."""
    if shard is not None:
        balance = "the baseline's times" if shard.balanced_by == "times" else "count"
        print(f"onnxlens: shard {shard.index}/{shard.count}: {len(shard.assigned)} of {len(shard.targets)} "
              f"targets (balanced by {balance})", file=sys.stderr, flush=True)
    if changed is not None:
        print(f"onnxlens: {selected} target{'s' if selected != 1 else ''} reached by the "
              f"{len(changed)} changed file{'s' if len(changed) != 1 else ''}", file=sys.stderr, flush=True)


def _baseline(path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        return load_baseline(path)
    except BaselineError as error:
        raise UsageError(str(error)) from None


def _write(path: Path, text: str) -> None:
    try:
        atomic.write_text(str(path), text)
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error}") from None


def _default_memory_budget() -> float | None:
    """80 % of the memory the kernel says is available now (MemAvailable); None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024 * 0.8
    except (OSError, ValueError, IndexError):
        pass
    return None


def merge(args: argparse.Namespace) -> int:
    """`onnxlens merge`: the shards' results joined (server/check/merge.py), on stdout."""
    from onnxlens.server.check.merge import MergeError, merge_files

    try:
        kind, merged = merge_files(args.files)
    except MergeError as error:
        raise UsageError(str(error)) from None
    if args.summary is not None:
        if kind != "json":
            raise UsageError("--summary needs the shards' JSON results (SARIF has no gate or graph data)")
        from onnxlens.server.check.summary import render_summary

        _write(args.summary, render_summary(merged))
    sys.stdout.write(json.dumps(merged, indent=2) + "\n")
    sys.stdout.flush()
    return status_of(merged) if kind == "json" else _sarif_status(merged)


def init(args: argparse.Namespace) -> int:
    """`onnxlens init`: plan the targets (server/fixits/workspace_scan.py, server/fixits/new_targets.py), print
    them, and unless --dry-run apply the insertions to the files."""
    from onnxlens.server.fixits.edits import apply_insertions
    from onnxlens.server.fixits.workspace_scan import plan_workspace

    path = Path(args.path)
    if not path.is_dir():
        raise UsageError(f"{path}: not a directory")
    config = find_config(path)
    root = (config.parent if config is not None else path).resolve()
    plan = plan_workspace(root)
    if plan.stopped:
        print(f"onnxlens: the search for models in {root} stopped early ({plan.stopped}); "
              f"run `onnxlens init` on the directory that holds them", file=sys.stderr)
    if plan.problem:
        raise UsageError(plan.problem)
    new = plan.new_targets
    if new is None:
        print(f"onnxlens: no new targets: every model in {root} has one, or none was found "
              "(top-level nn.Module models, not the blocks other models build, and model factory functions)")
        return EXIT_OK
    verb = "would add" if args.dry_run else "added"
    for target in new.targets:
        print(f"{verb} target {target.name}: model = \"{target.model}\", inputs = \"{target.inputs}\"")
    files = list(dict.fromkeys(insertion.file for insertion in new.insertions))
    if args.dry_run:
        print(f"would change {', '.join(_relative(f, root) for f in files)} (--dry-run: nothing written)")
        return EXIT_OK
    for file in files:
        existing = Path(file).exists()
        # newline="": the file's own line endings, kept byte for byte
        original = open(file, encoding="utf-8", newline="").read() if existing else ""
        mode = Path(file).stat().st_mode if existing else None
        atomic.write_text(file, apply_insertions(original, [i for i in new.insertions if i.file == file]))
        if mode is not None:
            os.chmod(file, mode & 0o7777)  # an edited file keeps its mode (an executable script stays one)
    print(f"changed {', '.join(_relative(f, root) for f in files)}; the example inputs' shapes are guesses "
          f"(marked TODO where nothing told them): check them, then run `onnxlens check {args.path}`")
    return EXIT_OK


def _relative(file: str, root: Path) -> str:
    path = Path(file)
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else file


def exit_status(run: CheckRun) -> int:
    """The exit status of a run (`status_of` its JSON result)."""
    return status_of(to_json_data(run))


def status_of(data: dict) -> int:
    """2 for config errors; with a gate (`--baseline`): 1 if it failed, else 0; without: 1 for
    error findings, else 0 (warnings, e.g. `mismatch`, pass). One rule for `check` and `merge`."""
    if data["config_diagnostics"]:
        return EXIT_USAGE
    if "gate" in data:
        return EXIT_OK if data["gate"]["passed"] else EXIT_FINDINGS
    if any(d["severity"] == "error" for target in data["targets"] for d in target["diagnostics"]):
        return EXIT_FINDINGS
    # A failed export that explains nothing must still fail the build.
    if any(target["status"] != "ok" and not target["diagnostics"] for target in data["targets"]):
        return EXIT_FINDINGS
    return EXIT_OK


def _sarif_status(sarif: dict) -> int:
    """A joined SARIF log's exit status: as `status_of`, from its results (with a baseline, a new
    error or warning result fails, as the gate does)."""
    results = [r for run in sarif["runs"] for r in run.get("results", [])]
    if any(r["ruleId"] == "config" for r in results):
        return EXIT_USAGE
    if any("baselineState" in r for r in results):
        failing = [r for r in results if r.get("baselineState") == "new" and r["level"] in ("error", "warning")]
        return EXIT_FINDINGS if failing else EXIT_OK
    return EXIT_FINDINGS if any(r["level"] == "error" for r in results) else EXIT_OK


def _load(path: Path) -> Config:
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    config_file = find_config(path)
    if config_file is None:
        raise UsageError(f"no onnxlens configuration in {path.resolve()} or any parent directory "
                         "(looked for onnxlens.toml, and pyproject.toml with a [tool.onnxlens] table)")
    return load_config(config_file)


def _select(config: Config, names: list[str]) -> list[TargetSpec]:
    """The targets to export: all valid ones, or those named by --target (in config order)."""
    if not names:
        return list(config.targets)
    known = config.target_lines
    unknown = [name for name in dict.fromkeys(names) if name not in known]
    if unknown and not config.findings:
        listed = ", ".join(known) or "none"
        raise UsageError(f"unknown target {', '.join(map(repr, unknown))} in "
                         f"{config.config_file}; its targets: {listed}")
    wanted = set(names)
    return [spec for spec in config.targets if spec.name in wanted]


async def _export_all(specs: list[TargetSpec], *, jobs: int, use_cache: bool, trust_cache: bool,
                      on_done: Callable[[ExportResult], None], memory_budget_mb: float | None = None,
                      memory_estimates: dict[str, float] | None = None,
                      ) -> tuple[list[ExportResult], dict[str, float], int]:
    """Export every spec (at most `jobs` at once, within the memory budget); returns results in
    spec order, each export process's peak memory (MB, by target), and the number of exports
    that failed inside onnxlens itself (not in the user's model)."""
    from onnxlens.server.service.exports import ExportService  # the worker client: only `check` needs it

    service = ExportService(jobs=jobs, use_cache=use_cache, trust_cache=trust_cache,
                            memory_budget_mb=memory_budget_mb, memory_estimates=memory_estimates)
    internal_errors = 0

    async def one(spec: TargetSpec) -> ExportResult:
        nonlocal internal_errors
        try:
            result = await service.export(spec)
        except Exception as error:  # noqa: BLE001 - one broken job must not hide the others
            internal_errors += 1
            result = ExportResult.failure(
                spec.name, "crash", f"onnxlens internal error while exporting: {type(error).__name__}: {error}")
        on_done(result)
        return result

    try:
        # The worker imports torch and warms up: worth it only if something must be exported.
        if not use_cache or any(service.cached(spec) is None for spec in specs):
            await service.start()
        results = await asyncio.gather(*(one(spec) for spec in specs))
    finally:
        await service.shutdown()  # every job's process has exited: its peak memory is known
    return list(results), dict(service.peak_memory_mb), internal_errors


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"serve": serve, "check": check, "init": init,
                                                             "merge": merge}


if __name__ == "__main__":
    main()
