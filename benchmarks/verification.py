"""Finding the first diverging value: onnxlens (one onnxruntime session) vs stock
`verify_onnx_program(..., compare_intermediates=True)` (one session per value).

A real mismatch is made by changing one bias of one layer in the exported ONNX model (the
`layers.2.ff.0` Linear of the 6-layer example encoder, `net.2` of the MLP). Both tools are
measured in this run on the same programs; onnxlens as medians of 5, stock as medians of 3 on the
MLP and ONE run on the encoder (it takes minutes). Writes benchmarks/VERIFICATION.md.

    .venv/bin/python benchmarks/verification.py
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import onnx_ir as ir
import torch
from torch.onnx.verification import verify_onnx_program

from onnxlens.exporter.verify import verify

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
sys.path.insert(0, str(EXAMPLES))

from models.encoder import build_encoder, dynamic_shapes  # noqa: E402
from models.encoder import example_inputs as encoder_inputs  # noqa: E402
from models.mlp import MLP  # noqa: E402
from models.mlp import example_inputs as mlp_inputs  # noqa: E402


def broken_program(model, args, bias: str, dynamic=None):
    program = torch.onnx.export(model, args, dynamo=True, dynamic_shapes=dynamic, verbose=False)
    value = program.model.graph.initializers[bias]
    array = value.const_value.numpy().copy()
    array[:8] += 0.05
    value.const_value = ir.tensor(array, name=bias)
    return program


def stock_first(program, args) -> tuple[float, str | None, int]:
    start = time.perf_counter()
    infos = verify_onnx_program(program, args, {}, compare_intermediates=True)
    seconds = time.perf_counter() - start
    first = next((i.name for i in infos if i.max_abs_diff > 1e-5 + 1e-3 * 1.0), None)
    return seconds, first, len(infos)


def ours(program, args) -> tuple[float, dict]:
    start = time.perf_counter()
    summary, _ = verify(program.exported_program, program, args, {}, root=str(EXAMPLES))
    return time.perf_counter() - start, summary


def main() -> None:
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)  # as in the worker's children
    cases = [
        ("MLP", MLP().eval(), mlp_inputs(), "net.2.bias", None, 3),
        ("Encoder (6 blocks)", build_encoder(), encoder_inputs(), "layers.2.ff.0.bias", dynamic_shapes(), 1),
    ]
    rows = []
    for label, model, args, bias, dynamic, stock_runs in cases:
        program = broken_program(model, args, bias, dynamic)
        ours_runs = [ours(program, args) for _ in range(5)]
        summary = ours_runs[-1][1]
        ours_median = statistics.median(seconds for seconds, _ in ours_runs)
        stock = [stock_first(program, args) for _ in range(stock_runs)]
        stock_median = statistics.median(seconds for seconds, _, _ in stock)
        first = summary.first_mismatch
        rows.append((label, ours_median, stock_median, stock_runs, stock[0][2],
                     first.node if first else None, first.module if first else None, stock[0][1]))
        print(label, ours_median, stock_median, first, file=sys.stderr)

    lines = [
        "# Verification: locating the first diverging value",
        "",
        "`.venv/bin/python benchmarks/verification.py`; one mismatch made by shifting 8 entries of one",
        "bias in the ONNX model by 0.05. Same process, same programs, torch at 1 thread.",
        "",
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"torch {torch.__version__}.",
        "",
        "| model | onnxlens verify + locate (median of 5) | stock compare_intermediates | stock runs | values stock compared | speed-up | onnxlens: first bad value | module | stock: first value past tolerance |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for label, mine, stock, runs, values, node, module, stock_node in rows:
        lines.append(f"| {label} | {mine:.3f} s | {stock:.2f} s | {runs} | {values} | {stock / mine:.0f}× "
                     f"| `{node}` | `{module}` | `{stock_node}` |")
    (REPO / "benchmarks" / "VERIFICATION.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
