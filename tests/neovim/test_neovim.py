"""The core scenario driven by a real, independent LSP client: headless Neovim (Debian's 0.7.2).

Neovim runs scenario.lua against `python -m onnxlens.server` on a copy of examples/: open
models/spectral.py, read the diagnostics Neovim's own handlers stored, ask for code actions and
code lenses, execute "Open export report", then fix both unsupported operators in the buffers,
`:w` each file and wait for the diagnostics to clear; last, the lens and a hover on the now
exported model. The Lua side only acts and records (JSON lines, including every notification
the server pushed); every assertion is here. Nothing is mocked: real editor, real server, real
exports.

Install Neovim with scripts/install-neovim (CI does). Without `nvim` these tests skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.support.lsp import SERVER_COMMAND
from tests.support.workspace import copy_examples, lsp_line

HERE = Path(__file__).resolve().parent
NVIM = shutil.which("nvim")
# CI installs Neovim (.ci/run calls scripts/install-neovim): there, a missing nvim is a broken
# install step and must fail, not skip.
pytestmark = [
    pytest.mark.skipif(NVIM is None and not os.environ.get("CI"), reason="nvim not installed (scripts/install-neovim)"),
    pytest.mark.slow,  # a real Neovim
]

# The two unsupported operators of the `spectral` target, and the supported code that replaces
# them (both checked to export and verify with torch.onnx.export(dynamo=True)).
EIGVALS = "        eig = torch.linalg.eigvals(h).real"
EIGVALS_FIX = "        eig = torch.linalg.vector_norm(h, dim=-1)"
ZETA = "    return torch.special.zeta(shifted, 2.0)"
ZETA_FIX = "    return torch.pow(2.0, -shifted)"  # the first term of the Hurwitz zeta series
MODEL_DEFINITION = "class SpectralNet(nn.Module):"
LINEAR = "        h = self.proj(x)"  # nn.Linear: becomes Gemm (or MatMul + Add) in ONNX
HELPER_CALL = "        return zeta_features(eig) + h.sum()"  # forward's call of the zeta helper

WAIT_MS = 90_000  # each bounded wait inside Neovim (the happy path needs ~30 s in all)
NVIM_TIMEOUT_S = 240  # the whole editor run (`timeout` kills it past this)


def unique_line(path: Path, text: str) -> int:
    """0-based line (vim.diagnostic counts from 0) of the one line of `path` that is `text` (the
    scenario replaces that line)."""
    assert path.read_text().splitlines().count(text) == 1, f"{path.name} should contain exactly one line {text!r}"
    return lsp_line(path, text, whole=True)


@dataclass
class Run:
    workspace: Path
    spectral: Path
    features: Path
    events: list[dict]
    returncode: int
    seconds: float
    stderr: str
    lsp_log: str
    lines: dict[str, int]  # 0-based lines of interest, found in the files before the edits
    leftovers: list[str]  # processes of this run (server, workers) still alive after Neovim

    def where(self) -> str:
        """Context for a failing assertion: what the editor recorded."""
        lines = [json.dumps(e)[:600] for e in self.events]
        return (f"nvim exit {self.returncode} after {self.seconds:.1f}s\n" + "\n".join(lines)
                + f"\n--- processes left running ---\n{self.leftovers}"
                + f"\n--- nvim stderr ---\n{self.stderr[-3000:]}"
                + f"\n--- Neovim LSP log (server stderr) ---\n{self.lsp_log[-4000:]}")

    def of(self, event: str, step: str | None = None) -> list[dict]:
        return [e for e in self.events
                if e["event"] == event and (step is None or e["step"] == step)]

    def one(self, event: str, step: str) -> dict:
        found = self.of(event, step)
        assert len(found) == 1, f"expected one {event!r} at step {step!r}\n{self.where()}"
        return found[0]

    def diagnostics(self, step: str, path: Path) -> list[dict]:
        items = self.one("diagnostics", step)["items"]
        return [d for d in items if Path(d["file"]) == path and d["source"] == "onnxlens"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    """One Neovim session for the whole module: it is the expensive part (server, exports)."""
    assert NVIM is not None, "CI=true but nvim is not installed: run scripts/install-neovim"
    tmp = tmp_path_factory.mktemp("neovim")
    workspace = copy_examples(tmp)
    spectral = workspace / "models" / "spectral.py"
    features = workspace / "models" / "features.py"
    output = tmp / "events.jsonl"
    lines = {"eigvals": unique_line(spectral, EIGVALS), "zeta": unique_line(features, ZETA),
             "model": unique_line(spectral, MODEL_DEFINITION), "linear": unique_line(spectral, LINEAR),
             "helper_call": unique_line(spectral, HELPER_CALL)}
    scenario = {
        "cmd": SERVER_COMMAND,
        "root_dir": str(workspace),
        "output": str(output),
        "wait_ms": WAIT_MS,
        "open": str(spectral),
        # Both files have a finding: wait until Neovim holds diagnostics for each.
        "open_wait": {"nonempty": [str(spectral), str(features)]},
        "execute_action": "Open export report",
        "lens_file": str(spectral),
        # Fix the helper first: spectral.py must keep its own diagnostic after that save, and
        # lose it only after its own fix. "fresh": the file's diagnostics were published again
        # after the :w (a clear state from before the save does not count).
        "fixes": [
            {"file": str(features), "old": ZETA, "new": ZETA_FIX,
             "wait": {"empty": [str(features)], "fresh": [str(features)]}},
            {"file": str(spectral), "old": EIGVALS, "new": EIGVALS_FIX,
             "wait": {"empty": [str(spectral), str(features)], "fresh": [str(spectral)]}},
        ],
        "hover": {"file": str(spectral), "line": lines["linear"]},
    }
    scenario_file = tmp / "scenario.json"
    scenario_file.write_text(json.dumps(scenario))

    # A private home for Neovim's state and its LSP log (which holds the server's stderr).
    xdg = {name: str(tmp / "xdg" / name.lower())
           for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")}
    env = {**os.environ, **xdg, "ONNXLENS_NVIM_SCENARIO": str(scenario_file)}
    command = ["timeout", "-k", "5", str(NVIM_TIMEOUT_S), NVIM, "--headless", "-u", "NONE",
               "-i", "NONE", "-n", "-c", f"luafile {HERE / 'scenario.lua'}"]
    started = time.monotonic()
    done = subprocess.run(command, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    seconds = time.monotonic() - started
    leftovers = _leftover_processes(str(scenario_file))
    events = [json.loads(line) for line in output.read_text().splitlines()] if output.exists() else []
    lsp_log = tmp / "xdg" / "xdg_cache_home" / "nvim" / "lsp.log"
    result = Run(workspace, spectral, features, events, done.returncode, seconds,
                 done.stdout + done.stderr, lsp_log.read_text() if lsp_log.exists() else "", lines, leftovers)
    return result


def _leftover_processes(marker: str, grace_s: float = 5.0) -> list[str]:
    """Processes started by this run (they inherit ONNXLENS_NVIM_SCENARIO) that are still alive
    `grace_s` after Neovim exited. They are killed, so a failure does not leak them."""
    def ours() -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter():
            try:
                if process.environ().get("ONNXLENS_NVIM_SCENARIO") == marker:
                    found.append(process)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                pass
        return found

    deadline = time.monotonic() + grace_s
    while (alive := ours()) and time.monotonic() < deadline:
        time.sleep(0.2)
    described = []
    for process in alive:
        try:
            described.append(f"{process.pid}: {' '.join(process.cmdline())}")
            process.kill()
        except psutil.NoSuchProcess:
            pass
    return described


def test_editor_session_ran_to_the_end(run):
    assert run.returncode == 0, run.where()
    assert run.of("initialized", "open"), run.where()


def test_diagnostics_land_on_the_unsupported_operators_lines(run):
    assert run.one("wait", "open")["satisfied"], run.where()
    # The messages name the ATen op that has no translation (eigvals decomposes to linalg_eig).
    expected = {run.spectral: (run.lines["eigvals"], "linalg_eig"),
                run.features: (run.lines["zeta"], "zeta")}
    for path, (line, op) in expected.items():
        found = run.diagnostics("open", path)
        assert [d["lnum"] for d in found] == [line], f"{path.name}\n{run.where()}"
        (diagnostic,) = found
        assert diagnostic["code"] == "unsupported-op", run.where()
        assert diagnostic["severity"] == 1, run.where()  # vim.diagnostic.severity.ERROR
        assert op in diagnostic["message"], run.where()


def test_helper_diagnostic_points_back_to_the_call_in_forward(run):
    """Neovim 0.7 announces relatedInformation: the rest of the user's call chain comes along."""
    (diagnostic,) = run.diagnostics("open", run.features)
    related = [(Path(r["file"]), r["line"]) for r in diagnostic["related"]]
    assert (run.spectral, run.lines["helper_call"]) in related, run.where()


def test_code_actions_on_the_diagnostic(run):
    actions = run.one("code_actions", "code_actions")
    assert actions["line"] == run.lines["eigvals"], run.where()
    assert not actions["errors"] and "request_error" not in actions, run.where()
    assert "Open export report" in actions["titles"], run.where()
    assert "Re-export spectral" in actions["titles"], run.where()


def test_open_export_report_shows_the_report_path(run):
    executed = run.one("execute_command", "code_actions")
    assert executed["command"] == "onnxlens.openReport", run.where()
    assert not executed["timed_out"] and "error" not in executed, run.where()
    # Neovim 0.7.2 announces window.showDocument.support = false: the server must not ask it to
    # show the document, and tells the user where the report is instead.
    assert not run.of("server:window/showDocument"), run.where()
    messages = [e["message"] for e in run.of("server:window/showMessage", "code_actions")]
    reports = [Path(p) for m in messages for p in re.findall(r"(/\S+\.md)\b", m)]
    assert reports and all(p.is_file() and p.stat().st_size > 0 for p in reports), run.where()


def test_code_lens_on_the_model_definition(run):
    lenses = run.one("code_lenses", "code_lenses")
    assert lenses["resolved"], run.where()
    line = run.lines["model"]
    titles = [lens["title"] for lens in lenses["lenses"] if lens["line"] == line]
    assert any("spectral" in title for title in titles), run.where()


def test_fixing_the_helper_clears_only_its_diagnostic(run):
    assert run.one("wait", "fix1")["satisfied"], run.where()
    assert run.diagnostics("fix1", run.features) == [], run.where()
    remaining = run.diagnostics("fix1", run.spectral)
    assert [d["lnum"] for d in remaining] == [run.lines["eigvals"]], run.where()
    # Nor was spectral.py cleared for a moment in between (the state above could be stale).
    start, end = (run.events.index(run.one("saved", step)) for step in ("fix1", "fix2"))
    cleared = [e for e in run.events[start:end] if e["event"] == "server:textDocument/publishDiagnostics"
               and Path(e["file"]) == run.spectral and e["count"] == 0]
    assert not cleared, run.where()


def test_fixing_both_operators_clears_every_diagnostic(run):
    assert run.one("wait", "fix2")["satisfied"], run.where()
    assert run.diagnostics("fix2", run.spectral) == [], run.where()
    assert run.diagnostics("fix2", run.features) == [], run.where()
    # The edits really reached the files on disk through Neovim's :w.
    assert EIGVALS_FIX in run.spectral.read_text().splitlines()
    assert ZETA_FIX in run.features.read_text().splitlines()


def test_server_exits_cleanly_when_neovim_stops_it(run):
    stopped = run.one("stopped", "stop")
    assert stopped["exit"] == {"code": 0, "signal": 0}, run.where()
    assert run.leftovers == [], run.where()


def test_progress_ends_after_the_diagnostics_are_published(run):
    """docs/lsp.md: diagnostics are published before the export's progress ends."""
    publishes = [i for i, e in enumerate(run.events)
                 if e["event"] == "server:textDocument/publishDiagnostics"
                 and Path(e["file"]) == run.spectral and e["count"] > 0]
    ends = [i for i, e in enumerate(run.events) if e["event"] == "server:$/progress"
            and e["value"].get("kind") == "end" and "spectral" in e["value"].get("message", "")]
    assert publishes and ends, run.where()
    assert publishes[0] < ends[0], run.where()


def test_code_lens_reports_success_after_the_fix(run):
    lenses = run.one("code_lenses", "fixed_code_lenses")
    titles = [lens["title"] for lens in lenses["lenses"] if lens["line"] == run.lines["model"]]
    status = [title for title in titles if "spectral" in title]
    assert status and not any("problem" in title for title in status), run.where()


def test_hover_shows_the_onnx_ops_of_a_line(run):
    hover = run.one("hover", "hover")
    assert not hover["errors"] and "request_error" not in hover, run.where()
    text = "\n".join(hover["contents"])
    assert "Gemm" in text or "MatMul" in text, run.where()
