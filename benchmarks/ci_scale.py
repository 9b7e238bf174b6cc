"""`onnxlens check` at a team's scale: 50 small real targets, `--jobs 1` against `--jobs 2`, and the
same targets as 2 shards joined by `onnxlens merge`. Writes benchmarks/CI_SCALE.md.

    .venv/bin/python -m benchmarks.ci_scale [--targets 50] [--runs 3] [--out benchmarks/CI_SCALE.md]

The targets are generated into a temporary workspace: MLPs, small conv nets, attention blocks,
cumsum heads and residual stacks (5 kinds, 10 widths each), every one a real model the CLI exports and verifies
with onnxruntime. Each run is a fresh `onnxlens check --no-cache` process (the worker's start
and warm-up included, as in CI); the `--jobs 1` and `--jobs 2` runs alternate, so a change of
the machine's load falls on both. The table gives medians and the range. The shards: `--shard
1/2` and `--shard 2/2` (balanced by the times of a `--jobs 2` run given as the baseline) run one
after the other (as two CI machines would at once: the table gives each one's time), then
`onnxlens merge`; the joined JSON is compared with an unsharded run against the same baseline
(all three export afresh), timings and onnxruntime's last-bit float differences left out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from tests.support.team import comparable
from benchmarks.commit import measured_commit

REPO = Path(__file__).resolve().parents[1]

KINDS = {
    "mlp": '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(W)
        self.net = nn.Sequential(nn.Linear(W, 2 * W), nn.ReLU(), nn.Linear(2 * W, W), nn.ReLU(), nn.Linear(W, 10))

    def forward(self, x):
        return self.net(x).softmax(dim=-1)


def inputs():
    torch.manual_seed(0)
    return (torch.randn(4, W),)
''',
    "conv": '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(W)
        self.conv1 = nn.Conv2d(3, W // 4, 3, padding=1)
        self.conv2 = nn.Conv2d(W // 4, W // 4, 3, padding=1)
        self.head = nn.Linear(W // 4, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.head(x.mean(dim=(2, 3)))


def inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 3, 16, 16),)
''',
    "attention": '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(W)
        self.norm = nn.LayerNorm(W)
        self.attn = nn.MultiheadAttention(W, 4, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(W, 2 * W), nn.GELU(), nn.Linear(2 * W, W))

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(x)


def inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 8, W),)
''',
    "cumsum": '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(W)
        self.embed = nn.Linear(8, W)
        self.out = nn.Linear(W, 4)

    def forward(self, x):
        h = torch.tanh(self.embed(x))
        return self.out(h.cumsum(dim=1))


def inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 6, 8),)
''',
    "residual": '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(W)
        self.blocks = nn.ModuleList(nn.Linear(W, W) for _ in range(3))

    def forward(self, x):
        for block in self.blocks:
            x = x + torch.relu(block(x))
        return x


def inputs():
    torch.manual_seed(0)
    return (torch.randn(4, W),)
''',
}
SIZES = (16, 32, 48, 64, 96, 128, 160, 192, 224, 256)


def make_workspace(root: Path, count: int) -> list[str]:
    """`count` targets cycling through the kinds and sizes; returns their names in config order."""
    (root / "models").mkdir(parents=True)
    config = ['[tool.onnxlens]\noutput-dir = ".onnxlens"\n']
    names = []
    kinds = list(KINDS)
    for index in range(count):
        kind = kinds[index % len(kinds)]
        width = SIZES[(index // len(kinds)) % len(SIZES)]
        name = f"{kind}_{index:02d}"
        source = "import torch\nfrom torch import nn\n\nW = %d\n\n\n%s" % (width, KINDS[kind])
        (root / "models" / f"{name}.py").write_text(source)
        config.append(f'\n[[tool.onnxlens.target]]\nname = "{name}"\nmodel = "models/{name}.py:Model"\n'
                      f'inputs = "models/{name}.py:inputs"\n')
        names.append(name)
    (root / "pyproject.toml").write_text("".join(config))
    return names


def onnxlens(*args: str | Path, cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    process = subprocess.run([sys.executable, "-m", "onnxlens.server.cli", *map(str, args)], cwd=cwd,
                             capture_output=True, text=True)
    return time.perf_counter() - started, process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "CI_SCALE.md")
    args = parser.parse_args()
    commit = measured_commit(args.out)
    with tempfile.TemporaryDirectory(prefix="onnxlens-ci-scale-") as tmp:
        root = Path(tmp)
        names = make_workspace(root, args.targets)
        times: dict[int, list[float]] = {1: [], 2: []}
        loads = [os.getloadavg()[0]]
        failed = []
        for run in range(args.runs):
            for jobs in (1, 2) if run % 2 == 0 else (2, 1):
                seconds, process = onnxlens("check", root, "--no-cache", "--jobs", jobs, "--format", "json",
                                            "--save-baseline", root / f"jobs{jobs}.json", cwd=root)
                data = json.loads(process.stdout)
                failed += [t["name"] for t in data["targets"] if t["status"] != "ok"]
                times[jobs].append(seconds)
                loads.append(os.getloadavg()[0])
                print(f"run {run + 1}: --jobs {jobs}: {seconds:.1f} s (exit {process.returncode}, "
                      f"load {loads[-1]:.1f})", file=sys.stderr, flush=True)
        shard_seconds = []
        for index in (1, 2):
            seconds, _ = onnxlens("check", root, "--no-cache", "--jobs", 2, "--shard", f"{index}/2",
                                  "--baseline", root / "jobs2.json", "--save-baseline", root / f"shard{index}.json",
                                  "--format", "json", cwd=root)
            shard_seconds.append(seconds)
        _, merged = onnxlens("merge", root / "shard1.json", root / "shard2.json", cwd=root)
        joined = json.loads(merged.stdout)
        gated = onnxlens("check", root, "--no-cache", "--jobs", 2, "--baseline", root / "jobs2.json",
                         "--format", "json", cwd=root)[1]
        unsharded = json.loads(gated.stdout)
        equal = comparable(joined) == comparable(unsharded)
        shard_targets = [len(json.loads((root / f"shard{i}.json").read_text())["targets"]) for i in (1, 2)]
        balanced_by = json.loads((root / "shard1.json").read_text())["shard"]["balanced_by"]
        seconds_per_target = statistics.median(t["seconds"] for t in json.loads((root / "jobs1.json").read_text())["targets"])
    one, two = statistics.median(times[1]), statistics.median(times[2])

    def spread(values: list[float]) -> str:
        return f"{min(values):.1f}–{max(values):.1f}"

    lines = [
        "# `onnxlens check` at a team's scale: jobs and shards",
        "",
        f"`.venv/bin/python -m benchmarks.ci_scale --targets {args.targets} --runs {args.runs}` "
        f"(`benchmarks/ci_scale.py`), commit `{commit}`, {date.today().isoformat()}, "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        "The machine is shared with other engineers' builds and tests and was loaded while this ran: "
        f"its 1-minute load average went from {loads[0]:.1f} to {max(loads):.1f} "
        f"(between runs: {', '.join(f'{load:.1f}' for load in loads)}). Figures move with that load.",
        "",
        f"{args.targets} generated targets (MLPs, conv nets, attention blocks, cumsum heads, residual "
        f"stacks; widths 16–256), each exported and verified with onnxruntime; every run a fresh "
        f"`onnxlens check --no-cache` process, worker start and warm-up included; `--jobs 1` and "
        f"`--jobs 2` alternating. One export takes {seconds_per_target:.2f} s in the worker (median).",
        "",
        "| run | wall time, median | range | runs | per target (start-up included) |",
        "|---|---|---|---|---|",
        f"| `--jobs 1` | {one:.1f} s | {spread(times[1])} s | {len(times[1])} | {one / args.targets:.2f} s |",
        f"| `--jobs 2` | {two:.1f} s | {spread(times[2])} s | {len(times[2])} | {two / args.targets:.2f} s |",
        f"| speed-up | ×{one / two:.2f} | | | |",
        "",
        f"Shards (`--shard K/2 --jobs 2`, balanced by the `--jobs 2` run's times as the baseline: "
        f"`{balanced_by}`), one after the other here, at once on two CI machines: "
        f"shard 1 {shard_seconds[0]:.1f} s ({shard_targets[0]} targets), shard 2 {shard_seconds[1]:.1f} s "
        f"({shard_targets[1]} targets). `onnxlens merge` of their JSON "
        f"{'equals' if equal else 'DIFFERS FROM'} the unsharded run's result (timings, peak memory and "
        "onnxruntime's last-bit differences left out)" + (", gate included (passed)." if joined.get("gate", {}).get("passed") else "."),
        "",
        f"Failed exports: {len(set(failed))} (of {args.targets} targets × {2 * args.runs} runs).",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not equal or failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
