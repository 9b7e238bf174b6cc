/** ONNX Lens: wires the pieces in src/common together. */
import * as vscode from "vscode";
import { Commands, CONFIG_SECTION, EXTENSION_NAME } from "./common/constants";
import { Logger } from "./common/logging";
import { ServerManager } from "./common/manager";
import { onPythonInterpreterChanged } from "./common/python";
import { Reports } from "./common/reports";
import { getSettings, needsRestart } from "./common/settings";
import { StatusView } from "./common/status";
import { CONFIG_GLOB } from "./common/workspace";

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const logger = new Logger(EXTENSION_NAME);
  logger.setLevel(getSettings().logLevel);
  const status = new StatusView(Commands.openLastReport);
  const reports = new Reports();
  manager = new ServerManager(logger, status, reports);
  const server = manager;

  context.subscriptions.push(
    logger,
    status,
    vscode.commands.registerCommand(Commands.restartServer, () => server.restart("requested by the user")),
    vscode.commands.registerCommand(Commands.exportAllTargets, () => server.exportAll()),
    vscode.commands.registerCommand(Commands.openLastReport, () =>
      reports.openLast(status.lastFinishedTarget(), (target) => server.openReport(target)),),
    vscode.commands.registerCommand(Commands.revealOnnxFile, () => reports.revealOnnxFile()),
    vscode.commands.registerCommand(Commands.showOutput, () => logger.show()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(CONFIG_SECTION)) {
        logger.setLevel(getSettings().logLevel);
      }
      if (needsRestart(event)) {
        void server.restart("onnxlens.interpreter changed");
      }
    }),
  );

  // Restricted Mode starts nothing (manager.ts); trusting the workspace starts the server.
  context.subscriptions.push(vscode.workspace.onDidGrantWorkspaceTrust(() => void server.restart("the workspace was trusted")));

  // A config created later (or [tool.onnxlens] added to pyproject.toml) starts the server.
  const configWatcher = vscode.workspace.createFileSystemWatcher(CONFIG_GLOB);
  const startIfNeeded = () => {
    if (!server.running) {
      void server.restart("an onnxlens config appeared");
    }
  };
  context.subscriptions.push(configWatcher, configWatcher.onDidCreate(startIfNeeded), configWatcher.onDidChange(startIfNeeded));

  const pythonListener = await onPythonInterpreterChanged(() => {
    if (!getSettings().interpreter) {
      void server.restart("the Python extension's interpreter changed");
    }
  });
  if (pythonListener) {
    context.subscriptions.push(pythonListener);
  }

  // Not awaited: activation should not wait for the interpreter check and the server's start.
  void server.restart("extension activated");
}

export async function deactivate(): Promise<void> {
  await manager?.dispose();
  manager = undefined;
}
