"""The commands the server implements (workspace/executeCommand), declared once.

commands.py answers them; code lenses and code actions name them from here (features do not
import each other). The VS Code extension sends some of them itself (`ServerCommands` in
vscode-extension/src/common/constants.ts) and contributes commands of its own under other names
(package.json): the language client registers every command the server announces as a VS Code
command of the same name, so the two sets must not meet. TypeScript cannot import this module:
tests/lsp/test_command_ids.py checks both sides against it.
"""

from __future__ import annotations

EXPORT = "onnxlens.export"
EXPORT_ALL = "onnxlens.exportAll"
OPEN_REPORT = "onnxlens.openReport"
SHOW_EXPORTED_PROGRAM = "onnxlens.showExportedProgram"
RESTART_WORKER = "onnxlens.restartWorker"
OPEN_TRANSLATION = "onnxlens.openTranslation"  # the translation quick fix's follow-up: open the stub

ALL = (EXPORT, EXPORT_ALL, OPEN_REPORT, SHOW_EXPORTED_PROGRAM, RESTART_WORKER, OPEN_TRANSLATION)
