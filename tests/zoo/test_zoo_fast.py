"""The real-world zoo's CI subset (benchmarks/zoo, cases with `fast = true`), scored as the whole
zoo is: the stock exporter in a fresh process per case, then `onnxlens check --format json` over
each library's targets, compared with the hand-made record.

What it pins: no false failure (every model stock exports, onnxlens exports with no error finding
and byte-identical files), every responsible line found (primary or related), no onnxlens
internal error, and the record still matching what the stock exporter does.
"""

from __future__ import annotations

import pytest

from benchmarks.zoo.score import load_cases, score_all

# The first case's test pays for scoring the whole subset (one onnxlens check per library).
pytestmark = pytest.mark.timeout(1800)

FAST = [case for case in load_cases() if case.fast]


@pytest.fixture(scope="module")
def scores():
    return {score.id: score for score in score_all(FAST, progress=lambda line: None)}


def test_the_fast_subset_covers_several_libraries_and_both_outcomes():
    assert len({case.library for case in FAST}) >= 3
    assert {"exports", "fails"} <= {case.stock for case in FAST}


@pytest.mark.parametrize("case", FAST, ids=lambda case: case.id)
def test_zoo_case(case, scores):
    result = scores[case.id]
    assert result.stock_observed == case.stock, f"the record is stale: stock now {result.stock_error}"
    assert not result.internal_error, result.message
    assert not result.false_failure, f"onnxlens failed a model stock exports: {result.message}"
    assert result.identical is not False, "the .onnx differs from the stock exporter's"
    assert not result.lines_missed, (f"responsible line(s) {result.lines_missed} not in any error finding; "
                                     f"onnxlens said: {result.message}")
