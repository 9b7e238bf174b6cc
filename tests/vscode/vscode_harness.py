"""Real VS Code for tests: code-server (VS Code 1.100 in the browser) driven by headless Chromium.

scripts/install-vscode-e2e installs the pieces (Debian chromium, code-server and playwright-core
into .tools/). `CodeServer` runs one code-server process with its own user-data and extensions
dirs; `drive` runs drive_vscode.cjs against one or more of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTENSION_DIR = REPO / "vscode-extension"
TOOLS = REPO / ".tools"
CODE_SERVER = TOOLS / "node_modules" / ".bin" / "code-server"
PLAYWRIGHT = TOOLS / "node_modules" / "playwright-core"
CHROMIUM = Path("/usr/bin/chromium")
DRIVER = Path(__file__).with_name("drive_vscode.cjs")
TARGETS_DRIVER = Path(__file__).with_name("drive_vscode_targets.cjs")
HINTS_DRIVER = Path(__file__).with_name("drive_vscode_hints.cjs")


def missing_tools() -> list[str]:
    """What of the e2e toolchain is not installed (empty: everything is)."""
    wanted = {"code-server": CODE_SERVER, "playwright-core": PLAYWRIGHT / "package.json", "chromium": CHROMIUM}
    return [name for name, path in wanted.items() if not path.exists()]


def npm_ci() -> None:
    """`npm ci` in vscode-extension/, skipped when node_modules matches package-lock.json."""
    lock = EXTENSION_DIR / "package-lock.json"
    stamp = EXTENSION_DIR / "node_modules" / ".onnxlens-lock-sha256"
    want = hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == want:
        return
    run(["npm", "ci", "--no-audit", "--no-fund"], cwd=EXTENSION_DIR)
    stamp.write_text(want)


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    """Runs a command; on failure raises with its output (so the test shows why)."""
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done.stdout + done.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# VS Code settings for a quiet, deterministic window (no welcome page, no update checks).
QUIET_SETTINGS = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoUpdate": False,
    "extensions.autoCheckUpdates": False,
    "update.mode": "none",
    "security.workspace.trust.enabled": False,
    "git.enabled": False,
    "editor.minimap.enabled": False,
}


@dataclass
class CodeServer:
    """One code-server process. Use as a context manager; `url(folder)` opens a folder."""

    home: Path  # everything of this instance lives here: user data, extensions, XDG dirs, log
    settings: dict
    extensions: tuple[Path, ...] = ()
    path_prefix: tuple[Path, ...] = ()  # put first on the PATH of code-server and its extension host

    def __post_init__(self) -> None:
        self.user_data = self.home / "user-data"
        self.extensions_dir = self.home / "extensions"
        self.log = self.home / "code-server.log"
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def env(self) -> dict[str, str]:
        xdg = self.home / "xdg"
        env = dict(os.environ)
        # XDG_*: code-server writes its config and logs there instead of the home directory.
        env.update(XDG_CONFIG_HOME=str(xdg / "config"), XDG_DATA_HOME=str(xdg / "data"), XDG_CACHE_HOME=str(xdg / "cache"))
        env["PATH"] = os.pathsep.join([*map(str, self.path_prefix), env.get("PATH", "")])
        return env

    @property
    def settings_file(self) -> Path:
        """The user settings.json; VS Code applies edits of it while it runs."""
        return self.user_data / "User" / "settings.json"

    def user_settings(self, **changes) -> dict:
        """The full user settings with `changes` applied (what to write to settings_file)."""
        return {**QUIET_SETTINGS, **self.settings, **changes}

    def __enter__(self) -> CodeServer:
        self.settings_file.parent.mkdir(parents=True, exist_ok=True)
        self.settings_file.write_text(json.dumps(self.user_settings(), indent=2))
        self.extensions_dir.mkdir(parents=True, exist_ok=True)
        for vsix in self.extensions:
            run([str(CODE_SERVER), "--install-extension", str(vsix), *self._dirs()], cwd=self.home, env=self.env, timeout=120)
        self.port = free_port()
        with open(self.log, "w") as log:
            # A new session (setsid): stop() kills the whole group, the file watcher child included.
            self.process = subprocess.Popen(
                [str(CODE_SERVER), "--bind-addr", f"127.0.0.1:{self.port}", "--auth", "none", "--disable-telemetry",
                 "--disable-update-check", "--disable-workspace-trust", *self._dirs()],
                cwd=self.home, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._wait_healthy()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _dirs(self) -> list[str]:
        return ["--extensions-dir", str(self.extensions_dir), "--user-data-dir", str(self.user_data)]

    def _wait_healthy(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"code-server exited {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"code-server did not answer /healthz in {timeout} s:\n{self.log.read_text()[-3000:]}")

    def url(self, folder: Path) -> str:
        return f"http://127.0.0.1:{self.port}/?folder={folder}"

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        pgid = self.process.pid  # the session leader: its pid is the group id
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(wait)
                # The group may outlive its leader (extension host, file watcher): make sure.
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            except subprocess.TimeoutExpired:
                continue

    def output_channel(self, name: str) -> str:
        """What an extension wrote to its output channel `name` (VS Code keeps it in a log file)."""
        logs = sorted(self.user_data.glob(f"logs/*/exthost*/output_logging_*/*-{name}.log"))
        return "\n".join(log.read_text(errors="replace") for log in logs)

    def extension_host_logs(self) -> str:
        """The extension host's and our output channel's logs, for failure messages."""
        texts = []
        for log in sorted(self.user_data.glob("logs/**/*.log")):
            if "exthost" in str(log) or "ONNX" in log.name or "onnxlens" in str(log):
                texts.append(f"--- {log.relative_to(self.user_data)}\n{log.read_text(errors='replace')[-3000:]}")
        return "\n".join(texts)


# Bounds the whole driver run (several minutes on a loaded machine; ~2 when not).
DRIVE_TIMEOUT = 900


def drive(config: dict, workdir: Path, timeout: float = DRIVE_TIMEOUT, driver: Path = DRIVER) -> dict:
    """Runs `driver` (drive_vscode.cjs by default) with `config` and returns what it recorded."""
    config_file, result_file = workdir / "drive-config.json", workdir / "drive-result.json"
    config_file.write_text(json.dumps({"playwright": str(PLAYWRIGHT), "chromium": str(CHROMIUM), **config}, indent=2))
    done = subprocess.run(["node", str(driver), str(config_file), str(result_file)],
                          capture_output=True, text=True, timeout=timeout)
    if not result_file.exists():
        raise RuntimeError(f"the driver wrote no result (exit {done.returncode}):\n{done.stderr[-4000:]}")
    result = json.loads(result_file.read_text())
    result["driver_log"] = done.stderr
    return result
