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
 * Commands the server implements (workspace/executeCommand). The language client registers
 * each one the server announces as a VS Code command of the same name, which is why ours above
 * have different names.
 */
export const ServerCommands = {
  exportAll: "onnxlens.exportAll",
  openReport: "onnxlens.openReport",
} as const;

/** The module the interpreter runs: `python -m onnxlens.server` speaks LSP on stdio. */
export const SERVER_MODULE = "onnxlens.server";

/** What the install action asks pip for. */
export const PIP_PACKAGE = "onnxlens";
