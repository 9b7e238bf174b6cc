/** Names shared by the modules; the package.json contributions use the same strings. */

export const EXTENSION_NAME = "ONNX Lens";
export const SERVER_ID = "onnxlens"; // also the prefix the client reads `onnxlens.trace.server` with
export const CONFIG_SECTION = "onnxlens";

/** Our own commands (package.json `contributes.commands`). */
export const Commands = {
  restartServer: "onnxlens.restartServer",
  exportAllTargets: "onnxlens.exportAllTargets",
  openLastReport: "onnxlens.openLastReport",
  revealOnnxFile: "onnxlens.revealOnnxFile",
  showOutput: "onnxlens.showOutput",
} as const;

/**
 * Commands the server implements (workspace/executeCommand), as server/lsp/features/command_ids.py
 * declares them (tests/lsp/test_command_ids.py checks these strings against it). The language
 * client registers each one the server announces as a VS Code command of the same name, which
 * is why ours above have different names.
 */
export const ServerCommands = {
  exportAll: "onnxlens.exportAll",
  openReport: "onnxlens.openReport",
} as const;

/** The module the interpreter runs: `python -I -m onnxlens.server` speaks LSP on stdio. */
export const SERVER_MODULE = "onnxlens.server";

/**
 * The interpreter runs the server, and the probe that checks it can, isolated (`-I`): neither
 * the working directory (the workspace) nor PYTHONPATH nor the user site is on sys.path, so a
 * workspace module named like a standard or installed one (`json.py`, `logging.py`) is never
 * imported in place of it. onnxlens must be installed in the interpreter's environment (a
 * venv, conda), not only with `pip install --user`. The export worker the server starts gets
 * the environment as it is (PYTHONPATH included): the user's code needs it.
 */
export const ISOLATED = "-I";

/** The interpreter's arguments for the server: isolated, unbuffered (`-I` ignores PYTHONUNBUFFERED). */
export const SERVER_ARGS = [ISOLATED, "-u", "-m", SERVER_MODULE];

/** VS Code's command that shows and changes the workspace's trust. */
export const MANAGE_TRUST_COMMAND = "workbench.trust.manage";

/** What the install action asks pip for. */
export const PIP_PACKAGE = "onnxlens";
