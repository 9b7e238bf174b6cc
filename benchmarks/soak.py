"""Soak test of the language server: many save cycles, good and broken, on three
targets, through the real LSP on stdio. NOT part of the test suite (it runs for minutes).

    .venv/bin/python -m benchmarks.soak                 # 500 cycles, prints a markdown report
    .venv/bin/python -m benchmarks.soak --cycles 150 --write benchmarks/SOAK.md

(from the repository root, as a module: it drives the server with the fault matrix's helpers,
tests/support/, which need the test extra: pip install -e '.[test]')

Each cycle saves one target's model file (round-robin over three targets) in the next state
of its good/broken alternation: good states change the model's output width (so the .onnx
says which save it came from); broken states raise in the model factory with the cycle's
version in the message (so a stale diagnostic is recognisable). Saves come faster than
exports, so the server has to coalesce. Measured:

* server RSS and worker (zygote) RSS sampled during the run; the run FAILS if either grows by
  more than the stated bound between the first sample after warm-up and the end;
* saves sent versus exports started / finished / cancelled (the server's `onnxlens/stats`);
* at the end, after the server went quiet: every target's diagnostics and .onnx must match
  that target's LAST save exactly: no lost diagnostic, no stale one, no stale .onnx.

Exit status 0 if all of that holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

# the fault matrix's harness: a real server, a real client
from tests.support.faults import HELPER_TEMPLATE, Session, marked_line, net_source, onnx_width, pyproject
from tests.support.workspace import write

TARGETS = ("alpha", "beta", "gamma")
SERVER_RSS_GROWTH_MB = 60  # bound on server RSS growth over the run
WORKER_RSS_GROWTH_MB = 150  # bound on zygote RSS growth over the run


def broken_source(version: int) -> str:
    return net_source(version, factory=f"raise ValueError('broken v{version}')  # FAULT")


@dataclass
class Sample:
    cycle: int
    seconds: float
    server_mb: float
    worker_mb: float
    worker_pids: list[int]


@dataclass
class Soak:
    root: Path
    cycles: int
    pause: float
    samples: list[Sample] = field(default_factory=list)
    last: dict[str, tuple[int, bool]] = field(default_factory=dict)  # target -> (version, good)

    def model(self, target: str) -> Path:
        return self.root / "models" / f"{target}.py"

    def onnx(self, target: str) -> Path:
        return self.root / ".onnxlens" / f"{target}.onnx"

    def sample(self, session: Session, cycle: int, started: float) -> Sample:
        server = psutil.Process(session.server_pid)
        workers = session.worker_processes()
        sample = Sample(cycle, time.monotonic() - started, server.memory_info().rss / 2**20,
                        sum(w.memory_info().rss for w in workers) / 2**20,
                        [w.pid for w in workers])
        self.samples.append(sample)
        return sample


def make_workspace(root: Path) -> None:
    write(root / "models" / "__init__.py", "")
    write(root / "models" / "helper.py", HELPER_TEMPLATE)
    for target in TARGETS:
        write(root / "models" / f"{target}.py", net_source(1))
    write(root / "pyproject.toml", pyproject(
        [{"name": t, "model": f"models/{t}.py:build_model", "inputs": f"models/{t}.py:example_inputs"}
         for t in TARGETS],
        **{"output-dir": ".onnxlens", "verify": False, "timeout": 60}))


async def run(soak: Soak) -> tuple[bool, str]:
    make_workspace(soak.root)
    session = await Session.launch(soak.root)
    started = time.monotonic()
    try:
        for target in TARGETS:
            session.open(soak.model(target))
        for target in TARGETS:  # warm-up: every target exported once
            await session.wait_clean_export(soak.onnx(target), 1, soak.model(target))
        soak.sample(session, 0, started)

        version = 1
        for cycle in range(1, soak.cycles + 1):
            target = TARGETS[(cycle - 1) % len(TARGETS)]
            good = ((cycle - 1) // len(TARGETS)) % 2 == 1  # each target: broken, good, broken...
            version += 1
            session.save(soak.model(target), net_source(version) if good else broken_source(version))
            soak.last[target] = (version, good)
            await asyncio.sleep(soak.pause)
            if cycle % 25 == 0:
                soak.sample(session, cycle, started)

        # quiet: the server has finished when every target shows its last save
        for target, (version, good) in soak.last.items():
            path = soak.model(target)
            if good:
                await session.wait_clean_export(soak.onnx(target), version, path, timeout=300)
            else:
                text = broken_source(version)
                await session.wait_for(lambda p=path, v=version, t=text: any(
                    d.code == "setup" and d.range.start.line == marked_line(t) - 1
                    and f"broken v{v}" in d.message for d in session.diagnostics_of(p)),
                    f"{target}'s last (broken) save diagnosed", timeout=300)
        await session.wait_idle(quiet=3, timeout=300)  # let anything still scheduled run, then check again
        soak.sample(session, soak.cycles, started)
        counters = await session.stats()
        problems = check_final(soak, session)
    finally:
        await session.close()
    elapsed = time.monotonic() - started
    return report(soak, counters, problems, elapsed)


def check_final(soak: Soak, session: Session) -> list[str]:
    problems = []
    for target, (version, good) in soak.last.items():
        diags = session.diagnostics_of(soak.model(target))
        if good:
            if diags:
                problems.append(f"{target}: stale diagnostics after a good last save: "
                                f"{[d.message for d in diags]}")
            if onnx_width(soak.onnx(target)) != version:
                problems.append(f"{target}: .onnx is not the last good save (v{version})")
        else:
            wanted = [d for d in diags if f"broken v{version}" in d.message]
            others = [d for d in diags if f"broken v{version}" not in d.message]
            if len(wanted) != 1:
                problems.append(f"{target}: expected one diagnostic of v{version}, got "
                                f"{[d.message for d in diags]}")
            if others:
                problems.append(f"{target}: stale diagnostics {[d.message for d in others]}")
    unexpected = {p: d for p, d in session.all_diagnostics().items()
                  if p not in {soak.model(t) for t in TARGETS}}
    if unexpected:
        problems.append(f"diagnostics on other files: {unexpected}")
    return problems


def report(soak: Soak, counters: dict, problems: list[str], elapsed: float) -> tuple[bool, str]:
    first, end = soak.samples[0], soak.samples[-1]
    server_growth = end.server_mb - first.server_mb
    worker_growth = end.worker_mb - first.worker_mb
    per_target = counters.get("per_target", {})
    totals = {k: sum(v.get(k, 0) for v in per_target.values())
              for k in ("started", "finished", "cancelled", "cached")}
    ok = (not problems and server_growth <= SERVER_RSS_GROWTH_MB
          and worker_growth <= WORKER_RSS_GROWTH_MB)
    lines = [
        "# Soak: save cycles through the language server",
        "",
        f"`python -m benchmarks.soak --cycles {soak.cycles} --pause {soak.pause}` on "
        f"{platform.machine()}, {psutil.cpu_count()} cores, Python {platform.python_version()}; "
        f"machine shared with other jobs. Wall time {elapsed:.0f} s.",
        "",
        f"**Result: {'PASS' if ok else 'FAIL'}**",
        "",
        "## Saves versus exports",
        "",
        "| saves | triggers seen by the server | exports started | finished | cancelled | "
        "served from cache |",
        "|---|---|---|---|---|---|",
        f"| {soak.cycles} | {counters.get('triggers', '?')} | {totals['started']} | "
        f"{totals['finished']} | {totals['cancelled']} | {totals['cached']} |",
        "",
        "(The counters include the three warm-up exports.)",
        "",
        "## Memory over time (RSS, MB)",
        "",
        "| cycle | seconds | server | worker (zygote) | worker pid |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {s.cycle} | {s.seconds:.0f} | {s.server_mb:.0f} | {s.worker_mb:.0f} | "
              f"{','.join(map(str, s.worker_pids))} |" for s in soak.samples]
    lines += [
        "",
        f"Growth from the first sample (after warm-up) to the end: server {server_growth:+.0f} MB "
        f"(bound {SERVER_RSS_GROWTH_MB}), worker {worker_growth:+.0f} MB "
        f"(bound {WORKER_RSS_GROWTH_MB}).",
        "",
        "## Final state",
        "",
        "Last save per target: " + ", ".join(
            f"{t} v{v} ({'good' if g else 'broken'})" for t, (v, g) in sorted(soak.last.items())),
        "",
        ("Every target's diagnostics and .onnx match its last save: no lost and no stale "
         "diagnostics." if not problems else "Problems:\n\n" + "\n".join(f"* {p}" for p in problems)),
        "",
    ]
    return ok, "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=500)
    parser.add_argument("--pause", type=float, default=0.25, help="seconds between saves")
    parser.add_argument("--write", type=Path, help="also write the markdown report here")
    parser.add_argument("--workdir", type=Path, help="workspace directory (default: a temp dir)")
    args = parser.parse_args()

    import tempfile

    with tempfile.TemporaryDirectory(prefix="onnxlens-soak-") as tmp:
        root = (args.workdir or Path(tmp)) / "ws"
        ok, text = asyncio.run(run(Soak(root=root, cycles=args.cycles, pause=args.pause)))
    print(text)
    if args.write:
        args.write.write_text(text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
