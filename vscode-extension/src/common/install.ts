/** The "Install onnxlens into this interpreter" action: pip of that interpreter, in a task. */
import * as vscode from "vscode";
import { PIP_PACKAGE } from "./constants";
import { pipInstallArgs } from "./probe";

/**
 * Runs pip in a task (visible in the terminal panel) and resolves with its exit code, so the
 * caller can restart the server once the install has finished.
 */
export async function installIntoInterpreter(command: string): Promise<number | undefined> {
  const task = new vscode.Task(
    { type: "process", id: "onnxlens-install" },
    vscode.TaskScope.Workspace,
    `install ${PIP_PACKAGE}`,
    "ONNX Lens",
    new vscode.ProcessExecution(command, pipInstallArgs()),
  );
  // Listen before starting: a fast failure (no pip in the interpreter) may end at once.
  return new Promise((resolve) => {
    const listener = vscode.tasks.onDidEndTaskProcess((event) => {
      if (event.execution.task.definition.id === task.definition.id) {
        listener.dispose();
        resolve(event.exitCode);
      }
    });
    vscode.tasks.executeTask(task).then(undefined, (error) => {
      listener.dispose();
      void vscode.window.showErrorMessage(`Could not run pip: ${error}`);
      resolve(undefined);
    });
  });
}
