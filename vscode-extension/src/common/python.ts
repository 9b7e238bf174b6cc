/**
 * Which Python runs the server: the `onnxlens.interpreter` setting if set; otherwise the
 * interpreter selected in the Python extension (ms-python.python) when it is installed;
 * otherwise `python3` on PATH.
 */
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";

export type InterpreterSource = "setting" | "python-extension" | "path";

export interface Interpreter {
  command: string;
  source: InterpreterSource;
}

export interface InterpreterInputs {
  setting: string; // "" = not set
  workspaceFolder?: string; // fs path of the workspace folder, for relative paths and ${workspaceFolder}
  pythonExtension?: string; // the Python extension's active interpreter, if any
  platform?: NodeJS.Platform;
}

/** `~`, `${workspaceFolder}` and `${userHome}` expanded; relative paths made absolute. */
export function expandPath(value: string, workspaceFolder: string | undefined, home = os.homedir()): string {
  let expanded = value
    .replace(/\$\{userHome\}/g, home)
    .replace(/\$\{workspaceFolder\}/g, workspaceFolder ?? "");
  if (expanded === "~" || expanded.startsWith("~/")) {
    expanded = path.join(home, expanded.slice(1));
  }
  // A bare command name ("python3.12") is looked up on PATH; a path with a separator is a file.
  if (workspaceFolder && !path.isAbsolute(expanded) && expanded.includes("/")) {
    expanded = path.join(workspaceFolder, expanded);
  }
  return expanded;
}

export function chooseInterpreter(inputs: InterpreterInputs): Interpreter {
  if (inputs.setting) {
    return { command: expandPath(inputs.setting, inputs.workspaceFolder), source: "setting" };
  }
  if (inputs.pythonExtension) {
    return { command: inputs.pythonExtension, source: "python-extension" };
  }
  return { command: (inputs.platform ?? process.platform) === "win32" ? "python" : "python3", source: "path" };
}

export function describeInterpreter(interpreter: Interpreter): string {
  const from = {
    setting: "the onnxlens.interpreter setting",
    "python-extension": "the Python extension's selected interpreter",
    path: "PATH (no interpreter configured)",
  }[interpreter.source];
  return `${interpreter.command} (from ${from})`;
}

/**
 * The parts of the Python extension's public API we use (its `exports`; typed in the
 * @vscode/python-extension package, which we do not need for three members).
 */
interface PythonExtensionApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(
      environment: { path: string } | string,
    ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

const PYTHON_EXTENSION_ID = "ms-python.python";

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (!extension) {
    return undefined;
  }
  const api = extension.isActive ? extension.exports : await extension.activate();
  return api?.environments ? api : undefined;
}

/** The Python extension's active interpreter for `resource`, or undefined (not installed, none). */
export async function pythonExtensionInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const api = await pythonExtensionApi();
  if (!api) {
    return undefined;
  }
  const active = api.environments.getActiveEnvironmentPath(resource);
  const resolved = await api.environments.resolveEnvironment(active);
  return resolved?.executable.uri?.fsPath ?? active.path;
}

/** Calls `listener` when the user selects another interpreter in the Python extension. */
export async function onPythonInterpreterChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const api = await pythonExtensionApi();
  return api?.environments.onDidChangeActiveEnvironmentPath(() => listener());
}

export async function findInterpreter(setting: string, folder?: vscode.WorkspaceFolder): Promise<Interpreter> {
  const fromExtension = setting ? undefined : await pythonExtensionInterpreter(folder?.uri);
  return chooseInterpreter({ setting, workspaceFolder: folder?.uri.fsPath, pythonExtension: fromExtension });
}
