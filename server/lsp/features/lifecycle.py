"""initialize / initialized / shutdown, and workspace folders coming and going.

`initialize` answers at once (no config reading, no worker): the editor waits on it. It resolves
what the client can do, once. After `initialized` the server finds the config of every workspace
folder, starts watching the disk, starts the export service in the background, saying so
("onnxlens: warming up"), and watches the directories its interpreter imports from. A folder
without a config whose code defines PyTorch models is offered export targets (target_offer.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from onnxlens.server.lsp.exporting.triggers import Triggers
from onnxlens.server.lsp.features.target_offer import TargetOffer
from onnxlens.server.lsp.handlers import Feature, handles


@dataclass(eq=False)
class Lifecycle(Feature):
    """The session's start (the disk watched, the projects found, the worker started) and end."""

    triggers: Triggers

    def __post_init__(self) -> None:
        self.offer = TargetOffer(self.session)
        self.started = False  # `initialized` was handled: the session runs


    @handles(lsp.INITIALIZE)
    def initialize(self, params: lsp.InitializeParams) -> None:
        self.session.client.initialize(params.capabilities)
        self.session.apply_settings(params.initialization_options)

    @handles(lsp.INITIALIZED)
    async def initialized(self, params: lsp.InitializedParams) -> None:
        """The session's start, once: the client sends `initialized` once (LSP 3.17); a repeated
        one is logged and changes nothing (no second watcher, worker or export)."""
        session = self.session
        if self.started:
            session.log(logging.WARNING, "onnxlens: `initialized` was sent again; ignored")
            return
        self.started = True
        self.triggers.start_watching()
        for folder in session.client.folders():
            if session.add_folder(Path(folder), export=False) is None:
                self.offer.consider(Path(folder))  # it asks only if no config governs the folder
        # Cached results need no worker: show them before it has warmed up; misses wait for it.
        session.service.create(jobs=session.settings.jobs)
        session.export_everything(reason="workspace opened")
        await session.start_service()
        await self.triggers.watch_installed()

    @handles(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(self, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
        session = self.session
        for folder in params.event.removed:
            if path := to_fs_path(folder.uri):
                self.offer.withdraw(Path(path))
                session.remove_folder(Path(path))
        for folder in params.event.added:
            if path := to_fs_path(folder.uri):
                if session.add_folder(Path(path), export=True) is None:
                    self.offer.consider(Path(path))

    @handles(lsp.SHUTDOWN)
    async def shutdown(self, params: None) -> None:
        await self.offer.close()
        await self.session.stop()
