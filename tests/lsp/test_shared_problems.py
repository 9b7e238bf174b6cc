"""Through the real language server (VS Code's recorded capabilities): a problem several targets
share is one diagnostic on its line, naming them, and each target's status and code lens say
what stopped it; a callable the config names and its module does not define is a diagnostic on
the config's value, with the callable meant.

The workspace is a user's clone of vit-pytorch without torchvision installed
(tests/support/repositories.py): `vit_pytorch/__init__.py` imports `dino.py`, whose
`from torchvision import transforms as T` fails, for each of the three targets in the package.
Ruled out: three identical diagnostics on that line (one per target), the lens "✗ 1 problem", and
the `Nett` typo on line 1 of nets.py; a line added above the typo in the config left its
diagnostic where it was.
"""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.support.data import action_commands
from tests.support.lsp import Client
from tests.support.repositories import VIT_TARGETS, broken_import_repository
from tests.support.workspace import line_of, lsp_line

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]  # the language server and the export worker as processes


async def test_a_shared_import_error_is_one_diagnostic_and_each_target_says_it_stopped_it(tmp_path):
    root = broken_import_repository(tmp_path)
    dino = root / "vit_pytorch" / "dino.py"
    config = root / "pyproject.toml"
    client = await Client.launch(root, experimental={"onnxlens": {"exportStatus": True}})
    try:
        for target in (*VIT_TARGETS, "typo"):
            await client.exports_finished(target, 1)
        import_line = lsp_line(dino, "from torchvision import transforms as T")
        [shared] = await client.wait_for(lambda: client.diagnostics_of(dino), "the import error in dino.py")
        assert (shared.code, shared.range.start.line) == ("import", import_line)
        assert shared.message.startswith("import failed: ModuleNotFoundError: No module named 'torchvision'")
        assert f"(the same in 3 targets: " in shared.message
        assert sorted(shared.data["targets"]) == sorted(VIT_TARGETS)

        # The typo: on the config's value, with the callable meant.
        typo_line = lsp_line(config, 'model = "nets.py:Nett"')
        [typo] = await client.wait_for(lambda: client.diagnostics_of(config), "the typo in the config")
        text = config.read_text().splitlines()[typo_line]
        assert (typo.range.start.line, typo.range.start.character, typo.range.end.character) == (
            typo_line, text.index('"nets.py:Nett"'), len(text))
        assert typo.message.endswith("nets.py has no `Nett`; did you mean `Net`?")
        assert not client.diagnostics_of(root / "nets.py")
        # A line added above it in the config (no target changes, nothing re-exports): it follows.
        client.save(config, "# the targets of this clone\n" + config.read_text())
        await client.wait_for(lambda: [d for d in client.diagnostics_of(config) if d.range.start.line == typo_line + 1],
                              "the typo's diagnostic on its line after the edit", 30)

        # Each target's status and lens say what stopped it, and where.
        place = f"(dino.py:{line_of(dino, 'from torchvision import transforms as T')})"
        for target in VIT_TARGETS:
            status = [s for s in client.statuses if s["target"] == target and s["state"] == "failed"][-1]
            assert status["summary"] == (f"{target}: 1 problem — import failed: ModuleNotFoundError: No module named "
                                         f"'torchvision' {place}")
        vit = root / "vit_pytorch" / "vit.py"
        lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(
            text_document=lsp.TextDocumentIdentifier(uri=vit.as_uri())))
        titles = [lens.command.title for lens in lenses or []]
        assert any(title.startswith("onnxlens: vit ✗ 1 problem — import failed") and place in title for title in titles), titles

        # The actions on the shared diagnostic say whose they are.
        actions = await client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=dino.as_uri()), range=shared.range,
            context=lsp.CodeActionContext(diagnostics=[shared])))
        commands = action_commands(actions)
        for target in VIT_TARGETS:
            assert commands[f"Re-export {target}"] == ("onnxlens.export", [target])
            assert commands[f"Open export report of {target}"][0] == "onnxlens.openReport"
    finally:
        await client.close()
