"""A call depth going back and forth across the end of a chunk of CPython's frame stack maps and
unmaps that chunk each time; run from `with_deep_frame_stack`, the same calls stay in one chunk
(exporter/worker/frame_stack.py). Told by the page faults the process takes (each new mapping is
faulted in), not by time."""

from __future__ import annotations

import resource

import pytest

from onnxlens.exporter.worker.frame_stack import with_deep_frame_stack


def _down(depth: int) -> int:
    return 0 if depth == 0 else 1 + _down(depth - 1)


def _back_and_forth() -> int:
    """Calls 1 to 400 frames deep, 40 times each: a chunk of 16 kB holds a few hundred of these
    small frames, so some depths cross a chunk's end wherever the caller stands."""
    total = 0
    for depth in range(1, 400, 3):
        for _ in range(40):
            total += _down(depth)
    return total


def _faults(function, *args) -> tuple[int, object]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    result = function(*args)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, result


def test_deep_calls_from_the_deep_frame_stack_stay_in_one_chunk():
    _back_and_forth()  # anything allocated once (code caches) is allocated now
    plain, expected = _faults(_back_and_forth)
    if plain < 1000:
        pytest.skip(f"this interpreter does not map and unmap frame chunks as 3.11 does ({plain} faults)")
    deep, result = _faults(with_deep_frame_stack, _back_and_forth)

    assert result == expected  # the function's own answer
    assert deep < plain / 20, (deep, plain)


def test_the_function_gets_its_arguments_and_its_exceptions_propagate():
    assert with_deep_frame_stack(lambda a, *, b: (a, b), 1, b=2) == (1, 2)
    with pytest.raises(ZeroDivisionError):
        with_deep_frame_stack(lambda: 1 / 0)
