"""A save killed at any instant leaves the old pair or the new one (pipeline/output/onnx_commit.py's invariant).

A real save (both of its commits: the weights under a token's name, then under their content's),
of new weights and, the second scenario, of the old pair's weights under another graph (the save
keeps the old data file, output/kept_weights.py),
SIGKILLed by strace on entering each of its syscalls in turn (tests/exporter/save_kills.py runs
it and reports): after every kill the .onnx and the data file it names are byte for byte the
old pair or the new one (the data file's name aside), and onnxruntime computes the old model's outputs or
the new model's. The control, a save that renames the stock-named data file and then the graph,
killed the same way at its renames, leaves the old graph beside the new weights, which
onnxruntime runs with wrong numbers: the harness sees a torn pair when there is one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from tests.support.workspace import REPO

pytestmark = [
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (apt-get install strace)"),
    pytest.mark.slow,  # a real save killed by strace at each of its syscalls
]


@pytest.fixture(scope="module")
def whole_report(tmp_path_factory) -> dict:
    scratch = tmp_path_factory.mktemp("save-kills")
    run = subprocess.run([sys.executable, "-m", "tests.exporter.save_kills", str(scratch / "out"),
                          str(scratch / "report.json")], cwd=REPO, capture_output=True, text=True)
    if "strace could not attach" in run.stderr:
        pytest.skip(f"strace cannot trace here: {run.stderr.strip().splitlines()[-1]}")
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((scratch / "report.json").read_text())


@pytest.fixture(params=["written", "kept"])
def report(request, whole_report) -> dict:
    """One scenario's facts: the save of new weights, or the save that keeps the old weights."""
    return {**whole_report[request.param], "scenario": request.param}


def test_the_trace_is_the_whole_save(report):
    assert report["complete_save"] == "exit 0"
    assert {call["pid"] for call in report["calls"]} == {report["calls"][0]["pid"]}  # no thread went untraced
    names = [call["name"] for call in report["calls"]]
    # Both commits: the weights renamed to a name of their own beside the .onnx, the graph
    # renamed onto the .onnx; then the weights linked under their content's name, the graph
    # naming that renamed onto the .onnx.
    targets = [call["paths"][1] for call in report["calls"] if call["name"].startswith("rename")]
    destination = report["destination"]
    data_name = re.escape(destination) + r"\.[0-9a-f]{16}\.data"
    weights = [t for t in targets if re.fullmatch(data_name, t)]
    commits = [index for index, target in enumerate(targets) if target == destination]
    if report["scenario"] == "kept":
        # The old pair's data file linked under the token's name (nothing written), then the commit.
        links = [call for call in report["calls"] if call["name"] in ("link", "linkat")]
        token = links[0]["paths"][1]
        assert re.fullmatch(data_name, token) and links[0]["paths"][0] in [
            f"{destination.rsplit('/', 1)[0]}/{old}" for old in report["old_files"]]
        assert report["calls"].index(links[0]) < [i for i, c in enumerate(report["calls"])
                                                   if c["name"].startswith("rename") and c["paths"][1:] == [destination]][0]
        weights.insert(0, token)
        targets.insert(0, token)
        commits = [index + 1 for index in commits]
        assert report["new_data"] in report["old_files"]  # named by content: the old pair's name
    assert len(weights) == len(commits) == 2, targets
    assert targets.index(weights[0]) < commits[0] < targets.index(weights[1]) < commits[1], targets
    assert weights[1] == f"{destination}.{report['new_data_sha256'][:16]}.data" != weights[0]
    assert report["new_data"] == weights[1].rsplit("/", 1)[1]  # the saved pair is named by content
    assert "link" in names or "linkat" in names
    assert "unlink" in names or "unlinkat" in names  # the old pair's data file goes, after the commit


def test_every_syscall_of_the_save_was_a_kill_point(report):
    assert len(report["kills"]) == len(report["calls"]) > 20
    not_killed = [(k["name"], k["k"], k["ended"]) for k in report["kills"] if k["ended"] != "signal SIGKILL"]
    assert not not_killed, f"the injection missed: {not_killed}"


def test_after_each_kill_the_onnx_is_the_old_pair_or_the_new_one(report):
    torn = [(k["name"], k["k"], k["args"][:120], k["pair"], k["computes"], k["files"])
            for k in report["kills"] if k["pair"] not in ("old", "new") or k["computes"] != k["pair"]]
    assert not torn, "\n".join(map(str, torn))
    sequence = [k["pair"] for k in report["kills"]]
    # Old until the commit, new from it on: one rename switches, and nothing switches back.
    assert sequence == sorted(sequence, key=lambda pair: pair == "new")
    assert sequence.count("old") and sequence.count("new")


def test_the_next_save_removes_what_a_killed_save_left(report):
    assert report["killed_at_commit"] == "signal SIGKILL"
    left = report["left_behind"]
    assert any(name.endswith(".tmp") for name in left)  # the killed save's staging directory
    assert len([name for name in left if name.endswith(".data")]) == 2  # the old pair's and the new weights
    after = report["after_next_save"]
    assert after["pair"] == after["computes"] == "new"
    assert after["files"] == sorted(["net.onnx", after["data"]])


def test_the_control_two_renames_leave_a_torn_pair(whole_report):
    """The control, a save by two renames (the data file, then the graph): killed between them,
    onnxruntime runs the old graph on the new weights (finite, wrong numbers) — what data files
    named per save prevent."""
    states = [(c["pair"], c["computes"]) for c in whole_report["control"]]
    assert ("neither", "neither") in states, states
