"""`onnxlens` command line: `onnxlens serve` (LSP on stdio), `onnxlens check` (CI), `onnxlens
init` (export targets for the workspace's models) and `onnxlens --version` (onnxlens, the ONNX
stack, the worker's interpreter, the torch adapter).

`onnxlens check` exports the workspace's targets through the same ExportService the language
server uses (one code path for CI and editor) and prints the findings as text, JSON or SARIF.

Exit status: 0 no error findings, 1 error findings (warnings such as `mismatch` do not fail),
2 usage or config error, or an internal error of onnxlens itself. Our own failures never end in
a traceback (set ONNXLENS_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Callable

from onnxlens.exporter.types import ExportResult, TargetSpec
from onnxlens.exporter.versions import installed_versions, version_lines
from onnxlens.server.config import Workspace, find_config, load_workspace
from onnxlens.server.formats import RENDERERS, CheckRun, progress_line

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
    check.add_argument("--no-verify", action="store_true", help="skip the onnxruntime comparison")
    check.add_argument("--no-cache", action="store_true", help="export even if a cached result is valid")
    check.add_argument("--trust-cache", action="store_true",
                       help="also use cached results this user did not write on this machine (a cache "
                            "restored in CI); their files must still be unchanged")
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
        status = serve() if args.command == "serve" else init(args) if args.command == "init" else check(args)
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


def serve() -> int:
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
    workspace = _load(Path(args.path))
    specs = _select(workspace, args.target)
    if args.no_verify:
        specs = [dataclasses.replace(spec, verify=False) for spec in specs]

    show_progress = args.format == "text"
    started = time.perf_counter()

    def finished(result: ExportResult) -> None:
        if show_progress:
            print(progress_line(result), file=sys.stderr, flush=True)

    results: list[ExportResult] = []
    internal_errors = 0
    if specs:
        if show_progress:
            print(f"onnxlens: exporting {len(specs)} target{'s' if len(specs) != 1 else ''} of "
                  f"{workspace.config_file} ({min(args.jobs, len(specs))} at once)", file=sys.stderr, flush=True)
        results, internal_errors = asyncio.run(
            _export_all(specs, jobs=args.jobs, use_cache=not args.no_cache,
                        trust_cache=args.trust_cache, on_done=finished))
    run = CheckRun(workspace=workspace, results=results, seconds=time.perf_counter() - started,
                   selection=args.target)
    sys.stdout.write(RENDERERS[args.format](run))
    sys.stdout.flush()

    return EXIT_USAGE if internal_errors else exit_status(run)


def init(args: argparse.Namespace) -> int:
    """`onnxlens init`: plan the targets (server/workspace_targets.py, server/target_fix.py), print
    them, and unless --dry-run apply the insertions to the files."""
    from onnxlens.exporter import atomic
    from onnxlens.server.edits import apply_insertions
    from onnxlens.server.workspace_targets import plan_workspace

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
    fix = plan.fix
    if fix is None:
        print(f"onnxlens: no new targets: every model in {root} has one, or none was found "
              "(top-level nn.Module models, not the blocks other models build, and model factory functions)")
        return EXIT_OK
    verb = "would add" if args.dry_run else "added"
    for target in fix.targets:
        print(f"{verb} target {target.name}: model = \"{target.model}\", inputs = \"{target.inputs}\"")
    files = list(dict.fromkeys(insertion.file for insertion in fix.insertions))
    if args.dry_run:
        print(f"would change {', '.join(_relative(f, root) for f in files)} (--dry-run: nothing written)")
        return EXIT_OK
    for file in files:
        existing = Path(file).exists()
        # newline="": the file's own line endings, kept byte for byte
        original = open(file, encoding="utf-8", newline="").read() if existing else ""
        mode = Path(file).stat().st_mode if existing else None
        atomic.write_text(file, apply_insertions(original, [i for i in fix.insertions if i.file == file]))
        if mode is not None:
            os.chmod(file, mode & 0o7777)  # an edited file keeps its mode (an executable script stays one)
    print(f"changed {', '.join(_relative(f, root) for f in files)}; the example inputs' shapes are guesses "
          f"(marked TODO where nothing told them): check them, then run `onnxlens check {args.path}`")
    return EXIT_OK


def _relative(file: str, root: Path) -> str:
    path = Path(file)
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else file


def exit_status(run: CheckRun) -> int:
    """2 for config errors, 1 for error findings, else 0: warnings (e.g. `mismatch`) pass."""
    if run.workspace.findings:
        return EXIT_USAGE
    if any(finding.severity == "error" for _, finding in run.findings):
        return EXIT_FINDINGS
    # A failed export that explains nothing must still fail the build.
    if any(result.status != "ok" and not result.findings for result in run.results):
        return EXIT_FINDINGS
    return EXIT_OK


def _load(path: Path) -> Workspace:
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    config = find_config(path)
    if config is None:
        raise UsageError(f"no onnxlens configuration in {path.resolve()} or any parent directory "
                         "(looked for onnxlens.toml, and pyproject.toml with a [tool.onnxlens] table)")
    return load_workspace(config)


def _select(workspace: Workspace, names: list[str]) -> list[TargetSpec]:
    """The targets to export: all valid ones, or those named by --target (in config order)."""
    if not names:
        return list(workspace.targets)
    known = workspace.target_lines
    unknown = [name for name in dict.fromkeys(names) if name not in known]
    if unknown and not workspace.findings:
        listed = ", ".join(known) or "none"
        raise UsageError(f"unknown target {', '.join(map(repr, unknown))} in "
                         f"{workspace.config_file}; its targets: {listed}")
    wanted = set(names)
    return [spec for spec in workspace.targets if spec.name in wanted]


async def _export_all(specs: list[TargetSpec], *, jobs: int, use_cache: bool, trust_cache: bool,
                      on_done: Callable[[ExportResult], None]) -> tuple[list[ExportResult], int]:
    """Export every spec (at most `jobs` at once); returns results in spec order and the
    number of exports that failed inside onnxlens itself (not in the user's model)."""
    from onnxlens.server.exports import ExportService  # the worker client: only `check` needs it

    service = ExportService(jobs=jobs, use_cache=use_cache, trust_cache=trust_cache)
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
        await service.shutdown()
    return list(results), internal_errors


if __name__ == "__main__":
    main()
