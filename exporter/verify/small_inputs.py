"""Smaller verification inputs, derived from the example (`verify-inputs = "small"`).

Verification runs the whole model twice (torch, onnxruntime) on the inputs it is given; on a
big example that costs more than the export itself. A target whose dimensions are dynamic can be
verified on less: each dynamic dimension of the example cut to a quarter of its size, else to
half, within the program's range constraints and never below 1 (a size of 1 only where the
range declares it: torch.export treats 0 and 1 apart, and keeps `Dim.AUTO` dimensions from 2 up);
sizes derived from others follow (`2*s0`). The values are the example's own, cut
(`second_shape.tiled`): token ids, masks and images stay what the user gave, only fewer of them.
A dimension the example did not declare dynamic keeps its size: the ONNX model fixed it.

The user asks for it: a translation wrong only at large sizes (an overflow, a kernel chosen by
size) goes unseen on the smaller inputs. The cut sizes are not the example's, so they stand for
the second-shape check too (larger sizes are not tried); only where the cut differs does the
pipeline verify on the example as well, to tell a size fixed in the graph from a model wrong at
every size. `candidates` gives the cuts to try, in order; the pipeline verifies on
the first torch runs (a guard torch.export put in the program may refuse some) and says what it
ran on (`VerificationSummary.inputs`).
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.verify.second_shape import OtherSizes, dynamic_inputs, other_values, tiled, with_sizes

# The cuts tried, in order.
_CUTS = (lambda size: size // 4, lambda size: size // 2)


def candidates(program: Any, args: tuple, kwargs: dict) -> list[OtherSizes]:
    """The example cut along its dynamic dimensions, smallest first; [] when none can shrink."""
    inputs = dynamic_inputs(program, args, kwargs)
    found, seen = [], set()
    for cut in _CUTS:
        values = other_values(program, inputs, cut, smallest=1) if inputs else {}
        key = tuple(sorted((str(symbol), value) for symbol, value in values.items()))
        if not values or key in seen:
            continue
        seen.add(key)
        smaller = with_sizes(inputs, values, args, kwargs, make=tiled)
        if smaller is not None:
            smaller.larger = False
            found.append(smaller)
    return found
