"""The report's "Cost per line": onnxruntime's profile of the verification run by the user's
line (ExportResult.cost, exporter/pipeline/output/line_costs.py), the most expensive line first.
"""

from __future__ import annotations

from typing import Callable

from onnxlens.exporter.types import InferenceCost, duration_us, percent


def cost_section(cost: InferenceCost | None, display: Callable[[str], str]) -> str | None:
    """The section's body; None when the run was not profiled (the caller says why).
    `display`: how the report writes a path."""
    if cost is None:
        return None
    threads = f"{cost.threads} thread{'s' if cost.threads != 1 else ''}"
    text = [f"onnxruntime's profile of the verification run ({threads}, the example inputs): "
            f"**{duration_us(cost.total_us)}** in {cost.kernel_count} kernels "
            f"(the run as onnxruntime timed it: {duration_us(cost.run_us)}).", ""]
    if cost.profile:
        text += [f"The profile: `{display(cost.profile)}` (chrome://tracing or Perfetto open it).", ""]
    text += ["| line | code | time | share | kernels |", "|---|---|---:|---:|---|"]
    for line in cost.lines:
        kernels = ", ".join(f"{count} {op}" for op, count in sorted(
            line.kernels.items(), key=lambda item: (-line.kernel_us.get(item[0], 0.0), item[0])))
        code = line.code.replace("|", "\\|").replace("`", "'")
        text.append(f"| `{display(line.file)}:{line.line}` | `{code}` | {duration_us(line.microseconds)} | "
                    f"{percent(line.share)} | {kernels} |")
    if cost.other_kernels:
        share = cost.other_us / cost.total_us if cost.total_us else 0.0
        kernels = ", ".join(f"{count} {op}" for op, count in sorted(cost.other_kernels.items(), key=lambda i: (-i[1], i[0])))
        text.append(f"| (no line of your code) | | {duration_us(cost.other_us)} | {percent(share)} | {kernels} |")
    return "\n".join(text) + "\n"
