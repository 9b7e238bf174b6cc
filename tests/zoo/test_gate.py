"""CI's bar for the zoo (benchmarks/zoo/score.py, `regressions`): stock's answer on every case,
and no culprit lost that the committed record found. The scores are built here because a real
whole-zoo run (scripts/zoo, in CI) takes minutes; the cases' fields are those the run writes."""

from __future__ import annotations

import dataclasses

from benchmarks.zoo.score import Score, regressions

FOUND = Score(id="lib/case", library="lib", classes=[8], stock_recorded="fails", stock_observed="fails",
              stock_error="TorchExportError", status="failed", errors=1, false_failure=False, internal_error=False,
              identical=None, lines_found=["a.py:3", "b.py:9"], lines_missed=[], where="primary", message="m", note="",
              primary_expected=["a.py:3"], primary_missed=[])


def record(score: Score) -> dict:
    return dataclasses.asdict(score)


def test_a_case_as_the_record_found_it_passes():
    assert regressions([FOUND], [record(FOUND)]) == []


def test_a_culprit_the_record_found_and_the_run_misses_fails():
    lost = dataclasses.replace(FOUND, lines_found=["a.py:3"], lines_missed=["b.py:9"])
    assert regressions([lost], [record(FOUND)]) == ["lib/case: lost culprits the record found: lines ['b.py:9'], primary []"]


def test_a_primary_location_the_record_had_and_the_run_loses_fails():
    demoted = dataclasses.replace(FOUND, where="related", primary_missed=["a.py:3"])
    assert regressions([demoted], [record(FOUND)]) == [
        "lib/case: lost culprits the record found: lines [], primary ['a.py:3']"]


def test_a_culprit_the_record_never_found_is_open_work_not_a_failure():
    open_work = dataclasses.replace(FOUND, lines_found=["a.py:3"], lines_missed=["b.py:9"], primary_missed=["a.py:3"],
                                    where="missed")
    assert regressions([open_work], [record(open_work)]) == []


def test_an_answer_that_is_not_stocks_fails_whatever_the_record_says():
    different = dataclasses.replace(FOUND, differences=["stock raises KeyError; no translation finding names it"])
    assert regressions([different], [record(different)]) == [
        "lib/case: not stock's answer: stock raises KeyError; no translation finding names it"]
    false_failure = dataclasses.replace(FOUND, stock_recorded="exports", stock_observed="exports", false_failure=True)
    assert regressions([false_failure], [record(false_failure)]) == ["lib/case: not stock's answer: false failure"]
