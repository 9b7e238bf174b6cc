"""How the language server is put together (server/lsp/app.py): features that get what they need
and never reach for the server or each other, command handlers pygls can still read, client
capabilities resolved once, and diagnostics placed without touching the stored results. No
server process: the pieces are built in this interpreter."""

from __future__ import annotations

import ast
import inspect
import sys
import typing
from pathlib import Path

import attrs
import pytest
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pygls.protocol.language_server import _prepare_command_arguments
from pytest_lsp import client_capabilities

from onnxlens.exporter.types import ExportResult, Finding, Location
from onnxlens.server.lsp.app import create_language_server, default_features
from onnxlens.server.lsp.capabilities import ClientFeatures
from onnxlens.server.lsp.client import Client
from onnxlens.server.lsp.connection.server import OnnxlensServer
from onnxlens.server.lsp.diagnostics import Diagnostics, SourceLines, fallback_location
from onnxlens.server.lsp.exporting.project import Project, norm
from onnxlens.server.lsp.features import command_ids
from onnxlens.server.lsp.session import Session

from tests.support.workspace import copy_examples, lsp_line


def _feature_modules() -> set[str]:
    return {type(feature).__module__ for feature in default_features(Session(Client(OnnxlensServer())))}


def _imports(module: str) -> set[str]:
    """The onnxlens.server.lsp modules `module` imports (relative imports resolved; typing-only too)."""
    tree = ast.parse(Path(sys.modules[module].__file__).read_text())
    package = module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = f"{package}.{node.module}" if node.level == 1 and node.module else node.module or package
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("onnxlens.server.lsp")}


def test_features_import_neither_the_server_nor_each_other():
    features = _feature_modules()
    assert len(features) == 8, features
    for module in features:
        reached = _imports(module)
        assert not reached & {"onnxlens.server.lsp.connection.server", "onnxlens.server.lsp.app"}, module
        assert not reached & (features - {module}), f"{module} imports {reached & features}"


def test_every_handler_is_registered_and_none_asks_for_the_server():
    server = create_language_server()
    features, commands = server.protocol.fm.features, server.protocol.fm.commands
    assert {lsp.INITIALIZE, lsp.TEXT_DOCUMENT_DID_SAVE, lsp.TEXT_DOCUMENT_HOVER, lsp.TEXT_DOCUMENT_INLAY_HINT,
            "onnxlens/stats"} <= set(features)
    assert set(commands) == set(command_ids.ALL)
    for handler in [*features.values(), *commands.values()]:
        assert "ls" not in inspect.signature(handler).parameters
    assert inspect.iscoroutinefunction(commands[command_ids.OPEN_REPORT])  # answered without blocking the loop


@pytest.mark.parametrize("arguments", [["mlp"], [{"target": "mlp"}], [], ["mlp", "encoder"]])
def test_command_arguments_reach_the_handlers_as_sent(arguments):
    """pygls converts command arguments by the handler's type hints (a hint it cannot resolve
    fails every call with InvalidParams); the handlers' own checks then say what is wrong."""
    for name, handler in create_language_server().protocol.fm.commands.items():
        assert typing.get_type_hints(handler), name
        args, kwargs = _prepare_command_arguments(
            handler, lsp.ExecuteCommandParams(command=name, arguments=arguments), default_converter())
        assert (list(args), kwargs) == (arguments, {}), name


def test_client_capabilities_are_resolved_into_one_value():
    vscode = ClientFeatures.of(client_capabilities("visual-studio-code"))
    assert vscode == ClientFeatures(related_information=True, code_description=True, show_document=True,
                                    work_done_progress=True, code_lens_refresh=True, configuration=True,
                                    create_files=True, apply_edit=True)
    neovim_07 = ClientFeatures.of(client_capabilities("neovim@v0.7.0"))
    assert not (neovim_07.show_document or neovim_07.code_description or neovim_07.code_lens_refresh)
    # Inlay hints came with LSP 3.17: the recorded VS Code 1.65 has none, Neovim 0.10+ refreshes them.
    assert not vscode.inlay_hint_refresh and not neovim_07.inlay_hint_refresh
    assert ClientFeatures.of(client_capabilities("neovim")).inlay_hint_refresh
    # Neovim (its recorded capabilities) announces resource operations but not documentChanges,
    # which carry them: no fixes that create files.
    assert not ClientFeatures.of(client_capabilities("neovim")).create_files
    assert ClientFeatures.of(lsp.ClientCapabilities()) == ClientFeatures()
    # The status notification is for clients that ask for it (the VS Code extension does).
    asking = attrs.evolve(client_capabilities("visual-studio-code"), experimental={"onnxlens": {"exportStatus": True}})
    assert ClientFeatures.of(asking).export_status
    assert ClientFeatures.of(lsp.ClientCapabilities(), "utf-8").encoding == "utf-8"


class _Recorder:
    """A stand-in for Client: what would have been published, per URI."""

    def __init__(self) -> None:
        self.features = ClientFeatures(related_information=True)
        self.published: dict[str, list[lsp.Diagnostic]] = {}

    def publish_diagnostics(self, uri: str, diagnostics: list[lsp.Diagnostic]) -> None:
        self.published[uri] = diagnostics


def test_findings_are_placed_on_copies_and_without_location_on_the_model_definition(tmp_path):
    ws = copy_examples(tmp_path)
    project = Project(ws / "pyproject.toml")
    project.load()
    spectral = ws / "models/spectral.py"
    spelled_otherwise = str(ws / "models" / ".." / "models" / "spectral.py")  # not the normalised path
    located = Finding(code="unsupported-op", message="eig", stage="scan", location=Location(spelled_otherwise, 3))
    nowhere = Finding(code="translation", message="no line", stage="translate")
    project.targets["spectral"].record(ExportResult(target="spectral", status="failed", findings=[located, nowhere]))
    client = _Recorder()
    Diagnostics(client, SourceLines()).publish_target(project, "spectral")

    published = client.published[Path(norm(spectral)).as_uri()]
    # 0-based on the wire: line 3, and the line of the model's `class` statement.
    assert sorted(d.range.start.line for d in published) == sorted([2, lsp_line(spectral, "class SpectralNet")])
    assert all(d.data == {"config": project.key, "target": "spectral"} for d in published)
    # The stored result is as the worker sent it.
    assert located.location.file == spelled_otherwise and nowhere.location is None


def test_without_a_model_file_the_fallback_is_the_targets_config_line(tmp_path):
    ws = copy_examples(tmp_path)
    project = Project(ws / "pyproject.toml")
    project.load()
    (ws / "models/mlp.py").unlink()
    project.load()  # the config now has a `config` finding for the missing file, and no mlp target
    unplaced = Finding(code="crash", message="the worker died", stage="load")
    assert fallback_location(project, "mlp", unplaced) == Location(
        file=str(project.config_file), line=project.config.target_lines["mlp"])
    spectral = fallback_location(project, "spectral", unplaced)
    assert (spectral.file, spectral.line) == (norm(ws / "models/spectral.py"),
                                              lsp_line(ws / "models/spectral.py", "class SpectralNet") + 1)

