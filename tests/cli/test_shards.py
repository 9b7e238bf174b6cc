"""`onnxlens check --shard K/N` and `onnxlens merge`: the shards' results joined equal the unsharded
run (real CLI processes, real exports of tests/support/team.py's workspace), and how targets are
split (server/check/shards.py, on names and times)."""

from __future__ import annotations

import json

import pytest

from onnxlens.server.check.shards import ShardError, parse_shard, shard_of, split
from tests.support.team import TARGETS, comparable, onnxlens, write_team

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The unsharded run and two shards, each exporting afresh (--no-cache), as JSON and SARIF."""
    root = write_team(tmp_path_factory.mktemp("team"))
    out = {}
    for name, extra in (("full", []), ("1", ["--shard", "1/2"]), ("2", ["--shard", "2/2"])):
        process = onnxlens("check", root, *extra, "--no-cache", "--jobs", "2", "--format", "sarif",
                           "--save-baseline", root / f"{name}.json")
        (root / f"{name}.sarif").write_text(process.stdout)
        out[name] = (json.loads((root / f"{name}.json").read_text()), json.loads(process.stdout))
        exported = [t["name"] for t in out[name][0]["targets"]]
        assert process.returncode == (1 if "known_bad" in exported else 0), process.stderr
    return root, out


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_each_target_is_exported_by_exactly_one_shard(runs):
    _, out = runs
    first, second = (out[k][0] for k in ("1", "2"))
    names = [t["name"] for t in first["targets"]] + [t["name"] for t in second["targets"]]
    assert sorted(names) == sorted(TARGETS)
    assert first["shard"]["targets"] == list(TARGETS) == second["shard"]["targets"]
    assert len(first["targets"]) in (2, 3) and len(second["targets"]) in (2, 3)  # 5 targets by count: 3 + 2


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_merged_json_equals_the_unsharded_run(runs):
    root, out = runs
    process = onnxlens("merge", root / "2.json", root / "1.json", "--summary", root / "merged.md")
    assert process.returncode == 1, process.stderr  # as the unsharded check: known_bad's error
    merged = json.loads(process.stdout)
    full = out["full"][0]
    assert "shard" not in merged and "shard" not in full
    assert [t["name"] for t in merged["targets"]] == list(TARGETS)
    assert comparable(merged) == comparable(full)


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_merged_sarif_equals_the_unsharded_run(runs):
    root, out = runs
    process = onnxlens("merge", root / "1.sarif", root / "2.sarif")
    assert process.returncode == 1, process.stderr
    merged = json.loads(process.stdout)
    assert merged == out["full"][1]  # SARIF has no timings: equal as it is


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_merge_refuses_what_does_not_belong_together(runs):
    root, _ = runs
    only_one = onnxlens("merge", root / "1.json")
    assert only_one.returncode == 2 and "each of 1..2 is needed once" in only_one.stderr
    mixed = onnxlens("merge", root / "1.json", root / "2.sarif")
    assert mixed.returncode == 2 and "mix JSON and SARIF" in mixed.stderr
    unsharded = onnxlens("merge", root / "full.json", root / "1.json")
    assert unsharded.returncode == 2 and "not the result of `onnxlens check --shard K/N`" in unsharded.stderr
    assert all("Traceback" not in p.stderr for p in (only_one, mixed, unsharded))


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_a_baseline_balances_the_shards_by_its_times(runs):
    """The full run's JSON as baseline: the shards take its seconds (the slow failing target alone)."""
    root, out = runs
    seconds = {t["name"]: t["seconds"] for t in out["full"][0]["targets"]}
    process = onnxlens("check", root, "--shard", "1/2", "--baseline", root / "full.json", "--format", "json")
    shard = json.loads(process.stdout)["shard"]
    assert shard["balanced_by"] == "times"
    assert shard == shard_of(list(TARGETS), 1, 2, seconds).to_dict()


def test_split_deals_the_longest_first_to_the_least_loaded():
    seconds = {"a": 10.0, "b": 1.0, "c": 1.0, "d": 8.0, "e": 1.0}
    assert split(list("abcde"), 2, seconds) == [["a", "e"], ["b", "c", "d"]]  # 11 s and 10 s
    assert split(list("abcde"), 2, {}) == [["a", "c", "e"], ["b", "d"]]  # by count, in config order
    # A target without a time counts as the median of the known ones (here 1 s).
    assert split(list("abcdef"), 2, seconds) == [["a", "e"], ["b", "c", "d", "f"]]  # 11 s and 11 s


def test_every_shard_computes_the_same_split_and_together_they_cover_all():
    names = [f"t{i}" for i in range(23)]
    seconds = {name: float((i * 7) % 5 + 1) for i, name in enumerate(names)}
    shards = [shard_of(names, k, 4, seconds) for k in range(1, 5)]
    assigned = [name for shard in shards for name in shard.assigned]
    assert sorted(assigned) == sorted(names) and len(assigned) == len(set(assigned))
    loads = [sum(seconds[n] for n in shard.assigned) for shard in shards]
    assert max(loads) - min(loads) <= max(seconds.values())  # greedy: within one target of even
    assert [shard_of(names, k, 4, seconds) for k in range(1, 5)] == shards


@pytest.mark.parametrize("text", ["0/2", "3/2", "2", "a/b", "1/0"])
def test_a_bad_shard_is_refused(text):
    with pytest.raises(ShardError):
        parse_shard(text)


@pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker
def test_a_bad_shard_is_a_usage_error(tmp_path):
    root = write_team(tmp_path, ("steady",))
    process = onnxlens("check", root, "--shard", "3/2")
    assert process.returncode == 2 and "K must be between 1 and N" in process.stderr
