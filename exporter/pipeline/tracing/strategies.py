"""The capture strategies: the stock exporter's own (non-strict, then strict), tried in turn.

We run them ourselves instead of through `_core.export`, which keeps only the first error: both
errors are useful, they often blame different lines (non-strict runs Python: it fails at the
first data-dependent value; strict (dynamo) names the data-dependent branch). A `Capture` holds
the program of the first strategy that succeeded, or none, and every failed strategy's error in
order (`attempts`): the first is stock's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onnxlens.exporter.torch_internals.active import internals


@dataclass
class Attempt:
    strategy: str  # "non-strict" | "strict" | "draft"
    error: BaseException


@dataclass
class Capture:
    program: Any = None  # torch.export.ExportedProgram
    strategy: str | None = None
    attempts: list[Attempt] = field(default_factory=list)


def capture(model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any) -> Capture:
    result = Capture()
    for name in internals.CAPTURE_STRATEGIES:
        outcome = internals.capture(name, model, args, kwargs, dynamic_shapes)
        if outcome.program is not None:
            result.program, result.strategy = outcome.program, name
            return result
        result.attempts.append(Attempt(name, outcome.error))
    return result
