"""The editor's document and settings notifications: didOpen (a file outside every known
project may bring its config, when that lies inside a workspace folder), didSave (a trigger),
didChangeConfiguration (the settings).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from onnxlens.server.config import find_config
from onnxlens.server.lsp.exporting.triggers import Triggers
from onnxlens.server.lsp.handlers import Feature, handles
from onnxlens.server.lsp.uris import path_of


@dataclass(eq=False)
class Documents(Feature):
    """Saves go to the triggers; an opened file may bring a new project; settings apply at once."""

    triggers: Triggers
    _outside: set[str] = field(default_factory=set)  # configs outside the workspace folders, logged

    @handles(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(self, params: lsp.DidOpenTextDocumentParams) -> None:
        """A file outside every known project: its config starts a project when the config lies
        inside a workspace folder (a project nested in the folder). A config elsewhere runs
        nothing — opening a file is no consent to run the code around it — and is logged once."""
        session = self.session
        path = path_of(params.text_document.uri)
        if session.projects_containing(path) or not path.endswith((".py", ".toml")):
            return
        config = find_config(Path(path).parent)
        if config is None:
            return
        if not session.workspace_folders_containing(config):
            if str(config) not in self._outside:
                self._outside.add(str(config))
                session.log(logging.INFO, f"onnxlens: {Path(path).name} belongs to {config}, which is outside the "
                                          "workspace folders: nothing of it is exported (open its folder in the editor)")
            return
        session.add_project(config, export_reason="file opened" if session.service.current is not None else None)

    @handles(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))
    def did_save(self, params: lsp.DidSaveTextDocumentParams) -> None:
        self.triggers.saved(path_of(params.text_document.uri))

    @handles(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(self, params: lsp.DidChangeConfigurationParams) -> None:
        """Settings pushed with the notification, or, when it carries none (the pull model), asked
        for with workspace/configuration (section "onnxlens").

        Pushed settings apply before the next message is handled (a synchronous handler): a save
        sent right after "exportOnSave: false" must not export."""
        if not params.settings and self.session.client.features.configuration:
            asyncio.ensure_future(self._pull_settings())
        else:
            self._apply_settings(params.settings)

    async def _pull_settings(self) -> None:
        try:
            raw = await self.session.client.configuration("onnxlens")
        except Exception as error:  # noqa: BLE001 - keep the current settings
            self.session.log(logging.WARNING, f"onnxlens: could not read the settings: {error}")
            return
        self._apply_settings(raw)

    def _apply_settings(self, raw: Any) -> None:
        session = self.session
        before = session.apply_settings(raw)
        after = session.settings
        if after != before:
            session.log(logging.INFO, f"onnxlens: settings now {after.describe()}")
        if after.jobs != before.jobs:
            session.log(logging.INFO, "onnxlens: `jobs` takes effect at the next worker restart (onnxlens.restartWorker)")
        if after.verify != before.verify:
            session.export_everything(reason="verify setting changed")
        elif after.profile != before.profile:
            session.export_everything(reason="profile setting changed")
        if after.inlay_hints != before.inlay_hints:
            session.client.refresh_inlay_hints()
        if after.cost_lens_threshold != before.cost_lens_threshold:
            session.client.refresh_code_lens()
