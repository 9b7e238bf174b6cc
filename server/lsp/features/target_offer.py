"""The offer for a workspace folder without a config: when the folder's own Python files define
PyTorch models (server/fixits/workspace_scan.py, the same scan as `onnxlens init`), the server asks

    This workspace has N PyTorch models and no ONNX export targets. Add them?   [Add targets] [Not now]

(window/showMessageRequest) and on "Add targets" asks the client to apply `onnxlens init`'s edits
(workspace/applyEdit). The new config is then picked up like any config that appears: saved in
the editor (triggers.py), or seen on disk (a folder without a config is watched for one).

Asked once per folder and session, in the background: `initialized` does not wait for the user.
The scan walks directories and parses files, so it runs in a helper process (server/offload.py),
never on the event loop nor a thread of it; it is bounded (server/fixits/workspace_scan.py) and is
killed when the offer is withdrawn (the folder removed, the session ending).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types as lsp

from onnxlens.server.config import find_config
from onnxlens.server.fixits.new_targets import NewTargets
from onnxlens.server.fixits.workspace_scan import MAX_SECONDS, plan_workspace
from onnxlens.server.lsp.features.workspace_edits import workspace_edit
from onnxlens.server.lsp.session import Session
from onnxlens.server.offload import Offload

ADD, LATER = "Add targets", "Not now"
SCAN_TIMEOUT = MAX_SECONDS + 30.0  # the scan stops itself at MAX_SECONDS; then the planning


def question(count: int) -> str:
    models = "1 PyTorch model" if count == 1 else f"{count} PyTorch models"
    return f"This workspace has {models} and no ONNX export targets. Add {'it' if count == 1 else 'them'}?"


class TargetOffer:
    def __init__(self, session: Session) -> None:
        self._session = session
        self._asked: set[str] = set()  # folders asked about in this session
        self._tasks: dict[str, asyncio.Task] = {}  # folder -> its offer, while it runs
        # The scan and the planning run here: bounded, but seconds of parsing that would hold
        # the GIL on a thread of the server; killing the helper cancels them.
        self._helper = Offload(timeout=SCAN_TIMEOUT)

    def consider(self, folder: Path) -> None:
        """Ask about `folder` in the background if it has no config and the client can apply
        the edits."""
        key = str(folder.resolve())
        if key in self._asked or not self._session.client.features.apply_edit:
            return
        self._asked.add(key)
        task = asyncio.ensure_future(self._offer(Path(key)))
        self._tasks[key] = task
        task.add_done_callback(lambda _: self._tasks.pop(key, None))

    def withdraw(self, folder: Path) -> None:
        """Stop the offer for `folder` (removed from the workspace), its scan included."""
        if (task := self._tasks.get(str(folder.resolve()))) is not None:
            task.cancel()

    async def close(self) -> None:
        """Stop every offer and the helper (the session ends)."""
        for task in list(self._tasks.values()):
            task.cancel()
        await self._helper.close()

    async def _offer(self, folder: Path) -> None:
        session = self._session
        try:
            new = await self._plan(folder)
            if new is None:
                return
            answer = await session.client.ask(lsp.MessageType.Info, question(len(new.targets)), [ADD, LATER])
            if answer != ADD:
                return
            new = await self._plan(folder)  # the files may have changed while the question was open
            if new is None:
                return
            applied = await session.client.apply_edit("Add ONNX export targets", workspace_edit(new.insertions))
            session.log(logging.INFO, f"onnxlens: {'added' if applied else 'the editor did not apply'} targets "
                                      f"{', '.join(t.name for t in new.targets)} in {new.config_file}")
        except Exception as error:  # noqa: BLE001 - an offer that fails must not disturb the session
            session.log(logging.WARNING, f"onnxlens: could not offer export targets for {folder}: {error}")
        finally:
            if all(task is asyncio.current_task() for task in self._tasks.values()):
                await self._helper.close()  # the last offer: no helper idles for the session

    async def _plan(self, folder: Path) -> NewTargets | None:
        """`onnxlens init`'s edits for the folder; None when it has a config, no models, or
        edits the client cannot apply (a new file, for a client that does not create files)."""
        session = self._session
        if await asyncio.get_running_loop().run_in_executor(None, find_config, folder) is not None:
            return None
        plan = await self._helper.call(plan_workspace, folder)
        found = len(plan.new_targets.targets) if plan.new_targets else 0
        session.log(logging.INFO, f"onnxlens: searched {folder} for PyTorch models without an export target: {found} "
                                  "found" + (f"; the search stopped early ({plan.stopped})" if plan.stopped else ""))
        if plan.problem:
            session.log(logging.INFO, f"onnxlens: no export targets offered for {folder}: {plan.problem}")
        new = plan.new_targets
        if new is None or (new.fix.creates_files and not session.client.features.create_files):
            return None
        return new
