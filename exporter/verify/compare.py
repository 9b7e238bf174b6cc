"""Compare one torch value with one onnxruntime value, elementwise, within the tolerance of
tolerance.py (torch.isclose's form, with a noise floor at the value's magnitude)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from onnxlens.exporter.verify.tolerance import Tolerance

# Relative difference = |a - b| / (|expected| + EPS), as torch.onnx's verification computes it.
EPS = 1e-7


@dataclass
class Comparison:
    comparable: bool  # False: not two tensors of one shape (the reason is in `note`)
    passed: bool = True  # every element within the tolerance (tolerance.py)
    max_abs_diff: float = 0.0  # over finite elements
    max_rel_diff: float = 0.0
    # The tolerance applied (tolerance.py): rtol, atol (the dtype's or the target's), the noise
    # floor and the scale it was taken at, and the absolute floor max(atol, noise); `excess`: the
    # largest difference over what its element was allowed (> 1: past tolerance).
    rtol: float = 0.0
    atol: float = 0.0
    noise: float = 0.0
    floor: float = 0.0
    scale: float = 0.0
    excess: float = 0.0
    nan_mismatches: int = 0  # elements NaN/inf on one side only (not in the maxima)
    note: str = ""
    dtype: str = ""
    shape: tuple[int, ...] = ()


def as_tensor(value: Any) -> torch.Tensor | None:
    """A tensor for tensors and Python/Sym scalars; None for anything else."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        value = value.node.hint if hasattr(value.node, "hint") else None
    if isinstance(value, (bool, int, float)):
        return torch.tensor(value)
    return None


def compare(expected: Any, actual: Any, *, tolerance: Tolerance) -> Comparison:
    exp, act = as_tensor(expected), as_tensor(actual)
    if exp is None or act is None:
        return Comparison(False, note=f"not a tensor ({type(expected).__name__})")
    exp, act = exp.cpu(), act.cpu()
    if torch.is_complex(exp):
        exp = torch.view_as_real(exp.resolve_conj())  # the ONNX model's real representation
    if torch.is_complex(act):
        act = torch.view_as_real(act.resolve_conj())
    info = dict(dtype=str(exp.dtype).removeprefix("torch."), shape=tuple(exp.shape))
    if exp.shape != act.shape:
        # A scalar may come back as a [1] tensor (shape arithmetic); any other difference in
        # shape means the two are not the same value, and reshaping would compare nonsense.
        if not (exp.numel() == act.numel() == 1):
            return Comparison(False, passed=False, **info,
                              note=f"shape {list(act.shape)} from onnxruntime, {list(exp.shape)} from torch")
        act = act.reshape(exp.shape)
    if exp.numel() == 0:
        return Comparison(True, note="empty", **info)
    if exp.dtype == torch.bool or act.dtype == torch.bool:
        diff = (exp.to(torch.bool) != act.to(torch.bool))
        bad = int(diff.sum())
        return Comparison(True, passed=bad == 0, max_abs_diff=float(bad > 0),
                          max_rel_diff=float(bad > 0), **info)
    bounds = tolerance.bounds(exp.dtype)
    exp64, act64 = exp.to(torch.float64), act.to(torch.float64)
    both_finite = torch.isfinite(exp64) & torch.isfinite(act64)
    # Same NaN or same infinity on both sides agrees; anything else non-finite disagrees.
    same_special = (torch.isnan(exp64) & torch.isnan(act64)) | (
        torch.isinf(exp64) & torch.isinf(act64) & (exp64 == act64))
    nan_mismatches = int((~both_finite & ~same_special).sum())
    magnitude = exp64.abs()
    finite_expected = torch.isfinite(exp64)
    scale = float(magnitude[finite_expected].max()) if bool(finite_expected.any()) else 0.0
    floor = bounds.floor(scale)
    abs_diff = torch.where(both_finite, (exp64 - act64).abs(), torch.zeros_like(exp64))
    rel_diff = abs_diff / (magnitude + EPS)
    allowed = floor + bounds.rtol * torch.where(both_finite, magnitude, torch.zeros_like(magnitude))
    within = torch.where(both_finite, abs_diff <= allowed, same_special)
    excess = abs_diff / allowed if floor > 0 else torch.where(abs_diff > allowed, torch.inf, 0.0)
    return Comparison(
        True,
        passed=bool(within.all()),
        max_abs_diff=float(abs_diff.max()),
        max_rel_diff=float(torch.where(both_finite, rel_diff, torch.zeros_like(rel_diff)).max()),
        nan_mismatches=nan_mismatches,
        rtol=bounds.rtol, atol=bounds.atol, noise=bounds.noise(scale), floor=floor, scale=scale,
        excess=float(torch.where(both_finite, excess, torch.zeros_like(excess)).max()),
        **info,
    )
