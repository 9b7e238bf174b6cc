"""The report's "First mismatch: this op or drift": the numbers behind the verdict the mismatch's
message gives (FirstMismatch.verdict, exporter/verify/verdict.py)."""

from __future__ import annotations

from onnxlens.exporter.types import VerificationSummary

_HEADLINES = {
    "op": "this op's translation differs from torch",
    "drift": "drift, not this op (accumulated float error)",
    "rounding": "float rounding, not a wrong op",
    "context": "the op agrees alone; onnxruntime computes it otherwise inside the whole model",
}


def verdict_section(summary: VerificationSummary | None) -> str | None:
    """The section's body; None without a first mismatch (the section is left out)."""
    first = summary.first_mismatch if summary is not None else None
    if first is None:
        return None
    verdict = first.verdict
    if verdict is None:
        return f"No verdict on FX node `{first.node}`: {first.verdict_note or 'not judged'}.\n"
    ops = ", ".join(f"`{op}`" for op in verdict.onnx_nodes)
    within = "within" if verdict.alone_passed else "past"
    lines = [f"FX node `{first.node}` (`{first.target}`): **{_HEADLINES.get(verdict.kind, verdict.kind)}**", "",
             f"- Its ONNX nodes ({ops}) run alone on torch's own inputs to it, against torch's output: max abs "
             f"diff {verdict.alone_max_abs_diff:.3g}, max rel diff {verdict.alone_max_rel_diff:.3g} ({within} the "
             f"verification's tolerance{': ' + verdict.alone_tolerance if verdict.alone_tolerance else ''})"]
    if verdict.torch_float64_diff is not None and verdict.onnx_float64_diff is not None:
        lines.append(f"- Against the op computed in float64 on the same inputs: torch's result is off by "
                     f"{verdict.torch_float64_diff:.3g}, ONNX's alone by {verdict.onnx_float64_diff:.3g}")
    lines.append(f"- Time: {verdict.seconds:.3f} s")
    if verdict.inputs:
        lines += ["", "Its inputs, torch's against the whole ONNX model's (the drift it was given):", "",
                  "| input | max abs diff | max rel diff |", "|---|---:|---:|"]
        lines += [f"| `{drift.name}` | {drift.max_abs_diff:.3g} | {drift.max_rel_diff:.3g} |" for drift in verdict.inputs]
    return "\n".join(lines) + "\n"
