"""The offer for a workspace without a config, through the language server
with VS Code's recorded capabilities: the server asks with window/showMessageRequest, the client
answers as a user would, the server asks it to apply `onnxlens init`'s edits (workspace/applyEdit),
the client writes them, and the new target exports: the config is picked up from the disk (a
folder without a config is watched for one), without any save in the editor."""

from __future__ import annotations

import tomllib

import pytest
from lsprotocol import types as lsp

from tests.support.edits import apply_workspace_edit
from tests.support.lsp import Client
from tests.support.workspace import write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

MODEL = '''import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))
'''


class AnsweringClient(Client):
    """A client that answers the server's questions with `answer` and applies the edits it is
    asked to, as VS Code does (to disk: VS Code's refactoring auto-save)."""

    answer: str | None = "Add targets"

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[lsp.ShowMessageRequestParams] = []
        self.edits: list[lsp.ApplyWorkspaceEditParams] = []

        @self.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
        def ask(ls: AnsweringClient, params: lsp.ShowMessageRequestParams):
            ls.questions.append(params)
            return next((a for a in params.actions or [] if a.title == ls.answer), None)

        @self.feature(lsp.WORKSPACE_APPLY_EDIT)
        def apply(ls: AnsweringClient, params: lsp.ApplyWorkspaceEditParams):
            ls.edits.append(params)
            apply_workspace_edit(params.edit)
            return lsp.ApplyWorkspaceEditResult(applied=True)


class DecliningClient(AnsweringClient):
    answer = "Not now"


@pytest.mark.asyncio
async def test_a_workspace_without_config_is_offered_targets_and_they_export(tmp_path):
    write(tmp_path / "scorer.py", MODEL)
    write(tmp_path / "README.md", "not python\n")
    client = await AnsweringClient.launch(tmp_path, editor="visual-studio-code", settings={"debounceMs": 100})
    root = tmp_path.resolve()
    try:
        await client.wait_for(lambda: client.edits, "the server's workspace/applyEdit", 60)
        [question] = client.questions
        assert question.message == "This workspace has 1 PyTorch model and no ONNX export targets. Add it?"
        assert [a.title for a in question.actions] == ["Add targets", "Not now"]
        config = tomllib.loads((root / "pyproject.toml").read_text())
        assert config["tool"]["onnxlens"]["target"] == [{"name": "scorer", "model": "scorer.py:Scorer",
                                                        "inputs": "scorer.py:example_inputs_scorer"}]
        await client.exports_finished("scorer", 1)
        await client.wait_for(lambda: (root / ".onnxlens" / "scorer.onnx").is_file(), "scorer.onnx written")
        assert not client.diagnostics_of(root / "scorer.py"), client.describe()
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_not_now_changes_nothing_and_a_configured_workspace_is_not_asked(tmp_path):
    declined, configured = tmp_path / "declined", tmp_path / "configured"
    write(declined / "scorer.py", MODEL)
    write(configured / "scorer.py", MODEL + "\n\ndef example_inputs():\n    return (torch.randn(2, 10),)\n")
    write(configured / "onnxlens.toml", '[[target]]\nmodel = "scorer.py:Scorer"\ninputs = "scorer.py:example_inputs"\n')
    client = await DecliningClient.launch(declined, configured, editor="visual-studio-code")
    try:
        await client.wait_for(lambda: client.questions, "the question", 60)
        await client.exports_finished("scorer", 1)  # the configured folder's target
        await client.wait_idle()
        assert len(client.questions) == 1 and not client.edits  # asked about `declined` only
        assert sorted(p.name for p in declined.iterdir()) == ["scorer.py"]
    finally:
        await client.close()
