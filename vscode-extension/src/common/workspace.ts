/**
 * Whether the workspace uses onnxlens at all: the extension activates for any Python project,
 * but starts the server (and asks for packages) only where there is an onnxlens config, i.e. a
 * pyproject.toml with a [tool.onnxlens] table or an onnxlens.toml, or, without one, where
 * Python files import torch: the server then offers to add export targets for their models.
 */
import * as vscode from "vscode";

export const CONFIG_GLOB = "**/{pyproject.toml,onnxlens.toml}";
const EXCLUDE_GLOB = "**/{node_modules,.venv,venv,.git,.tox,site-packages}/**";

/** Whether a file with this name and text configures onnxlens. */
export function isOnnxlensConfig(fileName: string, text: string): boolean {
  const base = fileName.split(/[\\/]/).pop();
  if (base === "onnxlens.toml") {
    return true;
  }
  // [tool.onnxlens], [tool.onnxlens.x] or [[tool.onnxlens.target]], possibly with spaces.
  return base === "pyproject.toml" && /^\s*\[\[?\s*tool\.onnxlens\s*[\].]/m.test(text);
}

/** The first onnxlens config file of the workspace, if any. */
export async function findOnnxlensConfig(): Promise<vscode.Uri | undefined> {
  const uris = await vscode.workspace.findFiles(CONFIG_GLOB, EXCLUDE_GLOB, 100);
  for (const uri of uris) {
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    if (isOnnxlensConfig(uri.path, text)) {
      return uri;
    }
  }
  return undefined;
}

const TORCH_IMPORT = /^[ \t]*(import[ \t]+torch\b|from[ \t]+torch\b)/m;
const PYTHON_GLOB = "**/*.py";
const PYTHON_FILES_READ = 200; // enough to find a model in a project; a huge monorepo is not read whole

/** Whether Python source imports torch (a line starting `import torch...` or `from torch...`). */
export function importsTorch(text: string): boolean {
  return TORCH_IMPORT.test(text);
}

/** The first Python file of the workspace that imports torch, if any. */
export async function findTorchCode(): Promise<vscode.Uri | undefined> {
  const uris = await vscode.workspace.findFiles(PYTHON_GLOB, EXCLUDE_GLOB, PYTHON_FILES_READ);
  for (const uri of uris) {
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    if (importsTorch(text)) {
      return uri;
    }
  }
  return undefined;
}

/** The workspace folder the server runs in: the one holding the config, else the first. */
export function serverFolder(config: vscode.Uri | undefined): vscode.WorkspaceFolder | undefined {
  return (config && vscode.workspace.getWorkspaceFolder(config)) ?? vscode.workspace.workspaceFolders?.[0];
}
