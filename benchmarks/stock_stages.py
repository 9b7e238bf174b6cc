"""Stock `torch.onnx.export`'s own steps, timed by wrapping the torch functions it calls (the
capture strategy, the registry build, `_prepare_exported_program_for_export`,
`_exported_program_to_onnx_program`, `ONNXProgram.optimize`, `ONNXProgram.save`). Timing wrappers
only: each calls the function it wraps with the same arguments and returns its answer.

Used by engine_stages.py (CPU time, in-process against our Pipeline) and by inprocess.py's warm
stock process (elapsed time, next to the language server's saves: real_size.py)."""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Callable

# label -> what stock does in it (the rows of the tables that show them)
STOCK_STEPS = {
    "capture": "capture (torch.export, non-strict)",
    "registry": "ONNX registry build",
    "decompose": "decompose (+ type promotion)",
    "translate": "translate: FX → ONNX (+ opset conversion)",
    "optimize": "optimize",
    "save": "save",
}


class Timings:
    """Seconds per label on `clock`, summed over one export (wrappers around torch functions
    and around our pipeline's stages)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.current: dict[str, float] = defaultdict(float)

    def wrap(self, owner, name: str, label: str, classmethod_: bool = False) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            return self.timed(original, label)(*args[1:], **kwargs) if classmethod_ else \
                self.timed(original, label)(*args, **kwargs)

        setattr(owner, name, classmethod(timed) if classmethod_ else timed)

    def timed(self, function, label: str):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            start = self.clock()
            try:
                return function(*args, **kwargs)
            finally:
                self.current[label] += self.clock() - start
        return timed

    def take(self) -> dict[str, float]:
        taken, self.current = dict(self.current), defaultdict(float)
        return taken


def wrap_stock_steps(timings: Timings) -> None:
    """Time each of stock's steps (STOCK_STEPS) in this process from now on."""
    from torch.onnx._internal.exporter import _capture_strategies, _core, _onnx_program, _registration

    timings.wrap(_capture_strategies.TorchExportNonStrictStrategy, "__call__", "capture")
    timings.wrap(_registration.ONNXRegistry, "from_torchlib", "registry", classmethod_=True)
    timings.wrap(_core, "_prepare_exported_program_for_export", "decompose")
    timings.wrap(_core, "_exported_program_to_onnx_program", "translate")
    # The opset conversion `_core.export` runs after translating (always: the public API's
    # opset_version defaults to ONNX_DEFAULT_OPSET), inside our translate stage too.
    from torch.onnx._internal._lazy_import import onnxscript_apis

    timings.wrap(onnxscript_apis, "convert_version", "translate")
    timings.wrap(_onnx_program.ONNXProgram, "optimize", "optimize")
    timings.wrap(_onnx_program.ONNXProgram, "save", "save")
