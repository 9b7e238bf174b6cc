"""Identical blocks traced N times: what torch offers for repeated regions, and what it would save.

    .venv/bin/python -m benchmarks.repeated_blocks [--runs 5] [--blocks 8,32]

torch marks a repeated region with `torch.compiler.nested_compile_region`: torch.compile traces
such a function once and calls the traced subgraph (`invoke_subgraph`) for each repetition. This
measures what that does to the exporter onnxlens runs (torch.export, non-strict, then
`torch.onnx.export(..., dynamo=True)`) on a stack of N identical transformer-style blocks: the
capture's time with and without the mark (one process, warm, alternating, medians of --runs),
the captured graph's size, and whether the .onnx stays stock's (the mark is adopted only if it
does, and only if it saves time). Writes benchmarks/REPEATED_BLOCKS.md.
"""

from __future__ import annotations

import argparse
import io
import logging
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

from benchmarks.commit import measured_commit

HERE = Path(__file__).resolve().parent


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(64)
        self.up = torch.nn.Linear(64, 256)
        self.down = torch.nn.Linear(256, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class MarkedBlock(Block):
    @torch.compiler.nested_compile_region
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Stack(torch.nn.Module):
    def __init__(self, block: type[Block], count: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.blocks = torch.nn.ModuleList([block() for _ in range(count)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def _capture_seconds(model: torch.nn.Module, example: tuple) -> tuple[float, int, set[str]]:
    started = time.perf_counter()
    program = torch.export.export(model, example)
    took = time.perf_counter() - started
    targets = {str(node.target) for node in program.graph.nodes if node.op == "call_function"}
    return took, len(program.graph.nodes), targets


def _onnx_bytes(model: torch.nn.Module, example: tuple) -> bytes:
    program = torch.onnx.export(model, example, dynamo=True, verbose=False)
    buffer = io.BytesIO()
    import onnx

    onnx.save(program.model_proto, buffer)
    return buffer.getvalue()


def measure(count: int, runs: int) -> dict:
    example = (torch.randn(2, 8, 64),)
    plain, marked = Stack(Block, count).eval(), Stack(MarkedBlock, count).eval()
    for model in (plain, marked):  # the first capture of each pays for lazy initialisation
        _capture_seconds(model, example)
    times: dict[str, list[float]] = {"plain": [], "marked": []}
    shape = {}
    for _ in range(runs):
        for name, model in (("plain", plain), ("marked", marked)):
            took, nodes, targets = _capture_seconds(model, example)
            times[name].append(took)
            shape[name] = (nodes, targets)
    same_onnx = _onnx_bytes(plain, example) == _onnx_bytes(marked, example)
    return {
        "blocks": count,
        "plain": statistics.median(times["plain"]),
        "marked": statistics.median(times["marked"]),
        "plain_nodes": shape["plain"][0],
        "marked_nodes": shape["marked"][0],
        "subgraph_calls": any("invoke_subgraph" in target for target in shape["marked"][1]),
        "same_onnx": same_onnx,
    }


def table(rows: list[dict], runs: int) -> str:
    lines = [
        "# Identical blocks traced N times: torch's repeated regions",
        "",
        f"`.venv/bin/python -m benchmarks.repeated_blocks --runs {runs}`, commit {measured_commit(HERE / 'REPEATED_BLOCKS.md')}, torch "
        f"{torch.__version__}, one thread. A stack of N identical blocks (LayerNorm, Linear, GELU, Linear, "
        "residual), captured by torch.export (non-strict, as stock's first strategy) with each block's "
        "`forward` plain and marked `torch.compiler.nested_compile_region`; warm, alternating, medians of "
        f"{runs} captures each. \"Same .onnx\": `torch.onnx.export(..., dynamo=True)` gives the same bytes "
        "with and without the mark.",
        "",
        "| blocks | capture, plain | capture, marked | marked ÷ plain | graph nodes plain / marked | "
        "invoke_subgraph in the graph | same .onnx |",
        "|---:|---:|---:|---:|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['blocks']} | {row['plain'] * 1000:.0f} ms | {row['marked'] * 1000:.0f} ms | "
            f"{row['marked'] / row['plain']:.1f}× | {row['plain_nodes']} / {row['marked_nodes']} | "
            f"{'yes' if row['subgraph_calls'] else 'no'} | {'yes' if row['same_onnx'] else 'no'} |")
    slower = all(row["marked"] > row["plain"] for row in rows)
    inlined = not any(row["subgraph_calls"] for row in rows)
    lines += ["", "Read: " + (
        "torch.export inlines the marked region (no `invoke_subgraph` in its graph, the same node "
        "count), and capturing it takes longer than tracing it plainly"
        + ("; the .onnx is not stock's either" if not all(row["same_onnx"] for row in rows) else "")
        + ": the mark saves nothing for the exporter, and onnxlens does not use it." if slower and inlined else
        "the mark changes the captured graph or saves time here: see the rows; onnxlens adopts it "
        "only where the .onnx stays stock's."), ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--blocks", default="8,32")
    options = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    rows = [measure(int(count), options.runs) for count in options.blocks.split(",")]
    text = table(rows, options.runs)
    (HERE / "REPEATED_BLOCKS.md").write_text(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
