"""How far onnxruntime may be from torch before a value counts as different: the one rule.

An element of a compared value passes when

    |onnxruntime - torch| <= max(atol, noise) + rtol * |torch|
    noise = NOISE_ULPS(dtype) * eps(dtype) * scale,  scale = the largest finite |torch| of the value

* `noise` is the rounding a value carries from its largest elements. Two runtimes that compute
  the same graph sum in other orders: every element of a matmul, a softmax or a normalization
  carries rounding of the order of eps at the magnitude of the terms it was computed from, not
  at its own. An element near zero among logits up to 345 (whisper-tiny's decoder) differs by
  ~1e-4 between correct runs: far past `atol` 1e-5 and `rtol` times its own size, and 2 units of
  float32's eps at the value's scale. Measured on correct exports (benchmarks/VERIFICATION.md,
  every intermediate value of whisper-tiny, BERT-base, GPT-2, the example encoder): float32
  values differ by at most 18 eps at their scale (GPT-2's 12 layers), float16 ones by at most
  1.5 of float16's (both runtimes compute half-precision ops in float32 and round: differences
  are whole float16 units, rarely more than one). NOISE_ULPS leaves room above those: 128 for
  32- and 64-bit floats, 8 for 16-bit and smaller ones. A wrong translation or weight stays far
  beyond it (a GELU approximated by x*sigmoid(1.702x): ~5e4 eps at its scale).
* `rtol` and `atol` default by dtype: float32 and float64 rtol 1e-3, atol 1e-5; a narrower float
  at least 8 of its eps relative and one eps absolute (float16: rtol 7.8e-3, atol 9.8e-4;
  bfloat16: rtol 6.3e-2, atol 7.8e-3), since float32's rtol is below one float16 unit. The
  target's `rtol`/`atol` (docs/configuration.md) replace the defaults for every floating dtype.
* integers and booleans are compared without noise (with the configured or float32 tolerances
  for integers; booleans exactly).
* the scale ignores non-finite elements; a value with huge sentinels (an attention mask of
  finfo.min) gets a large floor: a difference there is found at the next value (the softmax).

Intermediate values (divergence.py) use the same rule, each with its own dtype and scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

RTOL = 1e-3  # float32 and float64, and the least for any float
ATOL = 1e-5
_NARROW_RTOL_EPS = 8  # a float narrower than float32: rtol at least this many of its eps
NOISE_ULPS_WIDE = 128  # float32, float64
NOISE_ULPS_NARROW = 8  # float16, bfloat16, the 8-bit floats


@dataclass(frozen=True)
class Bounds:
    """The tolerance one value is compared with."""

    rtol: float
    atol: float
    noise_ulps: float  # 0: no noise floor (integers, booleans)
    eps: float = 0.0  # the dtype's machine epsilon (0 for integers and booleans)

    def noise(self, scale: float) -> float:
        """The absolute noise floor of a value whose largest finite |element| is `scale`."""
        return self.noise_ulps * self.eps * scale

    def floor(self, scale: float) -> float:
        """The absolute part of the bound: max(atol, noise)."""
        return max(self.atol, self.noise(scale))


@dataclass(frozen=True)
class Tolerance:
    """The target's tolerance: `rtol`/`atol` from the config, or None for each dtype's default."""

    rtol: float | None = None
    atol: float | None = None

    def bounds(self, dtype: torch.dtype) -> Bounds:
        if dtype == torch.bool:
            return Bounds(rtol=0.0, atol=0.0, noise_ulps=0)
        if not dtype.is_floating_point:
            return Bounds(rtol=self.rtol if self.rtol is not None else RTOL,
                          atol=self.atol if self.atol is not None else ATOL, noise_ulps=0)
        eps = torch.finfo(dtype).eps
        wide = torch.finfo(dtype).bits >= 32
        rtol = RTOL if wide else max(RTOL, _NARROW_RTOL_EPS * eps)
        atol = ATOL if wide else max(ATOL, eps)
        return Bounds(rtol=self.rtol if self.rtol is not None else rtol,
                      atol=self.atol if self.atol is not None else atol,
                      noise_ulps=NOISE_ULPS_WIDE if wide else NOISE_ULPS_NARROW, eps=eps)


def tolerance_of(spec: Any) -> Tolerance:
    """The target's tolerance: its `rtol`/`atol` settings (a TargetSpec)."""
    return Tolerance(rtol=spec.rtol, atol=spec.atol)
