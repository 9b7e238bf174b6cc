"""What a result-cache lookup costs on a repository with many files. Writes benchmarks/CACHE_LOOKUP.md.

    .venv/bin/python -m benchmarks.cache_lookup [--files 400] [--targets 10] [--rounds 30]
                                                [--out benchmarks/CACHE_LOOKUP.md]

A generated workspace: a package of `--files` modules (each a small block, ~2 KB), imported by
every one of `--targets` real targets, so each target's closure holds every file. One `onnxlens
check` process exports them all (the cache filled); then, in this process, as a session would:

* the session's first lookup: a new ResultCache (what the server and `onnxlens check` make once)
  and one `load` — what a session pays once, before its first answer;
* further lookups: every target looked up `--rounds` times on that ResultCache; median and
  95th percentile of one `load`;
* `onnxlens check` with everything cached: the whole process (interpreter start, config, every
  lookup, the report), median of 5 runs.

Every lookup must be a hit: a miss would measure something else, and the run stops.

The output file keeps one section per commit (a run at another commit adds its own section, a
run at the same commit replaces it): the cost before and after a change of the cache, each
measured at the commit it describes.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from benchmarks.commit import measured_commit

REPO = Path(__file__).resolve().parents[1]

BLOCK = '''import torch
from torch import nn


class Block{index}(nn.Module):
    """A residual block of the generated repository (module {index})."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The same few lines in every module: what matters is that there are many files.
        y = self.norm(x)
        y = torch.relu(self.up(y))
        y = self.down(y)
        return x + y * {scale}
'''

TARGET = '''import torch
from torch import nn

from blocks import *  # noqa: F403 - every module of the package: each one is in the closure


class Model{index}(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block{index}(16)  # noqa: F405

    def forward(self, x):
        return self.block(x)


def inputs():
    return (torch.randn(2, 16),)
'''


def write_repository(root: Path, files: int, targets: int) -> None:
    package = root / "blocks"
    package.mkdir(parents=True)
    names = [f"block_{index:04d}" for index in range(files)]
    for index, name in enumerate(names):
        (package / f"{name}.py").write_text(BLOCK.format(index=index, scale=1 + index / files))
    (package / "__init__.py").write_text("".join(f"from .{name} import *  # noqa: F403\n" for name in names))
    config = ["[tool.onnxlens]", "verify = false", ""]
    for index in range(targets):
        (root / f"target_{index}.py").write_text(TARGET.format(index=index))
        config += ["[[tool.onnxlens.target]]", f'name = "t{index}"', f'model = "target_{index}.py:Model{index}"',
                   f'inputs = "target_{index}.py:inputs"', ""]
    (root / "pyproject.toml").write_text("\n".join(config))
    # Dated in the past: the cache stores no result whose files changed while it was computed.
    past = time.time() - 60
    for path in root.rglob("*.py"):
        os.utime(path, (past, past))


def check(root: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    process = subprocess.run([sys.executable, "-m", "onnxlens.server.cli", "check", str(root)],
                             capture_output=True, text=True, env=env, cwd=REPO)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        sys.exit(f"onnxlens check failed ({process.returncode}):\n{process.stdout}\n{process.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--targets", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "CACHE_LOOKUP.md")
    args = parser.parse_args()

    from onnxlens.server.service.cache import ResultCache
    from onnxlens.server.config import load_config

    with tempfile.TemporaryDirectory(prefix="onnxlens-cache-lookup-") as scratch:
        root = Path(scratch) / "repository"
        write_repository(root, args.files, args.targets)
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(scratch) / "user-cache")}
        os.environ["XDG_CACHE_HOME"] = env["XDG_CACHE_HOME"]  # this process signs and reads as that user
        export_seconds = check(root, env)
        specs = load_config(root / "pyproject.toml").targets
        closure_bytes = sum(path.stat().st_size for path in (root / "blocks").glob("*.py"))

        started = time.perf_counter()
        cache = ResultCache(sys.executable)
        first = cache.load(specs[0])
        first_seconds = time.perf_counter() - started
        if first is None:
            sys.exit("the first lookup missed: nothing to measure")
        lookups = []
        for _ in range(args.rounds):
            for spec in specs:
                started = time.perf_counter()
                hit = cache.load(spec)
                lookups.append(time.perf_counter() - started)
                if hit is None:
                    sys.exit(f"{spec.name}: a lookup missed")
        processes = sorted(check(root, env) for _ in range(5))

    median = statistics.median(lookups)
    p95 = statistics.quantiles(lookups, n=20)[-1]
    heading = f"## Commit `{measured_commit(args.out)}`"
    section = [
        heading,
        "",
        f"`.venv/bin/python -m benchmarks.cache_lookup --files {args.files} --targets {args.targets} "
        f"--rounds {args.rounds}`, {date.today()}, {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; 1-minute load average {os.getloadavg()[0]:.1f} at the end (a machine "
        "shared with other engineers' tests: figures move with it).",
        "",
        f"A generated repository of {args.files} modules ({closure_bytes / 1e6:.1f} MB), every one in the "
        f"closure of each of {args.targets} targets; filled by one `onnxlens check` ({export_seconds:.1f} s).",
        "",
        "| what | time |",
        "|---|---|",
        f"| the session's first lookup (a new ResultCache, one `load`) | {first_seconds * 1e3:.1f} ms |",
        f"| a further lookup (`load`), median of {len(lookups)} | {median * 1e3:.2f} ms |",
        f"| a further lookup, 95th percentile | {p95 * 1e3:.2f} ms |",
        f"| `onnxlens check`, all {args.targets} targets cached: the whole process, median of 5 "
        f"| {statistics.median(processes):.2f} s ({processes[0]:.2f}–{processes[-1]:.2f} s) |",
        "",
    ]
    print("\n".join(section))
    args.out.write_text(with_section(args.out, heading, section))


def with_section(path: Path, heading: str, section: list[str]) -> str:
    """The output file's text with `section` in place of the one under the same heading (the
    same commit), else after the others."""
    title = ["# Result-cache lookups on a repository with many files", "",
             "Written by `benchmarks/cache_lookup.py` (its docstring says what each figure is): one "
             "section per commit, in the order they were measured.", ""]
    sections: list[list[str]] = []
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("## "):
                sections.append([])
            if sections:
                sections[-1].append(line)
    sections = [old for old in sections if old[0] != heading] + [section]
    body = "\n\n".join("\n".join(kept).strip("\n") for kept in sections)
    return "\n".join(title) + "\n" + body + "\n"


if __name__ == "__main__":
    main()
