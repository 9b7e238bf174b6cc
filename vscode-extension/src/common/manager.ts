/**
 * The server's lifecycle: find the config and the interpreter, check the interpreter, start the
 * client, restart it when the interpreter changes, stop it on deactivate. In an untrusted
 * workspace (Restricted Mode) it starts nothing and the status bar says so. Restarts are
 * serialised: a second request waits for the first to finish.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient, State } from "vscode-languageclient/node";
import { MANAGE_TRUST_COMMAND, ServerCommands } from "./constants";
import { Logger } from "./logging";
import { describeInterpreter, findInterpreter } from "./python";
import { installIntoInterpreter } from "./install";
import { INSTALL_ACTION, judgeProbe, runProbe } from "./probe";
import { Reports } from "./reports";
import { startServer } from "./server";
import { getSettings, toServerSettings } from "./settings";
import { StatusView } from "./status";
import { findOnnxlensConfig, findTorchCode, serverFolder } from "./workspace";

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private queue: Promise<void> = Promise.resolve();
  private readonly traceChannel: vscode.OutputChannel;

  constructor(
    private readonly logger: Logger,
    private readonly status: StatusView,
    private readonly reports: Reports,
  ) {
    this.traceChannel = vscode.window.createOutputChannel("ONNX Lens Trace");
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** (Re)starts the server; resolves when it runs or has failed (the user has been told). */
  restart(reason: string): Promise<void> {
    this.queue = this.queue.then(() =>
      this.stopThenStart(reason).catch((error) => {
        // Keep the queue alive: the next restart must still run.
        this.logger.error(`starting the server failed: ${error instanceof Error ? error.stack : error}`);
        this.status.apply({ kind: "server", phase: "stopped", detail: String(error) });
      }),
    );
    return this.queue;
  }

  async exportAll(): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      const manage = "Manage Workspace Trust";
      void vscode.window.showWarningMessage("ONNX Lens does not export in Restricted Mode: exporting runs the workspace's Python code. Trust the workspace to export.", manage).then((choice) => {
        if (choice) {
          void vscode.commands.executeCommand(MANAGE_TRUST_COMMAND);
        }
      });
      return;
    }
    if (!this.client || !this.running) {
      void vscode.window.showWarningMessage("The ONNX Lens server is not running.", "Show Output").then((choice) => {
        if (choice) {
          this.logger.show();
        }
      });
      return;
    }
    await this.client.sendRequest(ExecuteCommandRequest.type, { command: ServerCommands.exportAll, arguments: [] });
  }

  /** Asks the server to show `target`'s report; false if it cannot (not running, no report yet). */
  async openReport(target: string): Promise<boolean> {
    if (!this.client || !this.running) {
      return false;
    }
    try {
      const result = await this.client.sendRequest(ExecuteCommandRequest.type, { command: ServerCommands.openReport, arguments: [target] });
      return Boolean((result as { shown?: boolean } | null)?.shown);
    } catch (error) {
      this.logger.debug(`${ServerCommands.openReport} ${target}: ${error}`);
      return false;
    }
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.traceChannel.dispose();
  }

  private async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.logger.warning(`stopping the server: ${error}`);
      }
    }
  }

  private async stopThenStart(reason: string): Promise<void> {
    this.logger.info(`${this.client ? "restarting" : "starting"} the server: ${reason}`);
    await this.stop();
    const config = await findOnnxlensConfig();
    if (!config) {
      const torchFile = await findTorchCode();
      if (!torchFile) {
        this.logger.info("no onnxlens config in this workspace (pyproject.toml with [tool.onnxlens], or onnxlens.toml) and no Python file importing torch: not starting the server");
        this.status.apply({ kind: "server", phase: "idle" });
        return;
      }
      // The server offers export targets for the models it finds (and the code action on each).
      this.logger.info(`no onnxlens config in this workspace; ${torchFile.fsPath} imports torch: starting the server, which offers export targets`);
    }
    if (!vscode.workspace.isTrusted) {
      // Exports import and run the workspace's code: nothing starts until the user trusts it
      // (extension.ts restarts on onDidGrantWorkspaceTrust).
      this.logger.info("the workspace is not trusted (Restricted Mode): not starting the server; trust the workspace to export its models");
      this.status.apply({ kind: "server", phase: "restricted" });
      return;
    }
    this.status.apply({ kind: "server", phase: "starting" });
    const folder = serverFolder(config);
    const settings = getSettings(folder?.uri);
    this.logger.setLevel(settings.logLevel);
    const interpreter = await findInterpreter(settings.interpreter, folder);
    this.logger.info(`config: ${config ? config.fsPath : "none yet"}; interpreter: ${describeInterpreter(interpreter)}`);

    const probe = await runProbe(interpreter.command, folder?.uri.fsPath);
    const verdict = judgeProbe(interpreter.command, probe);
    if (!verdict.ok) {
      this.logger.error(verdict.message);
      this.status.apply({ kind: "server", phase: "not-ready", detail: verdict.message });
      void this.offerInstall(verdict.message, verdict.canInstall, interpreter.command);
      return;
    }
    this.logger.info(`interpreter ${probe.python} (Python ${probe.version}) has onnxlens and torch`);

    try {
      const client = await startServer({
        python: interpreter.command,
        cwd: folder?.uri.fsPath,
        settings: toServerSettings(settings),
        logger: this.logger,
        traceChannel: this.traceChannel,
        hooks: {
          onStatusEvent: (event) => this.status.apply(event),
          showDocument: (uri) => this.reports.showDocument(uri),
          serverSettings: () => toServerSettings(getSettings(folder?.uri)),
        },
      });
      this.client = client;
      this.status.apply({ kind: "server", phase: "running" });
      // The client restarts a crashed server by itself (a few times): follow it.
      client.onDidChangeState((event) => {
        if (this.client !== client) {
          return;
        }
        if (event.newState === State.Stopped) {
          this.status.apply({ kind: "server", phase: "stopped", detail: "The server stopped: see the ONNX Lens output." });
        } else if (event.newState === State.Starting) {
          this.status.apply({ kind: "server", phase: "starting" });
        } else {
          this.status.apply({ kind: "server", phase: "running" });
        }
      });
    } catch (error) {
      const message = `The ONNX Lens server did not start: ${error instanceof Error ? error.message : error}`;
      this.logger.error(message);
      this.status.apply({ kind: "server", phase: "stopped", detail: message });
      void vscode.window.showErrorMessage(message, "Show Output").then((choice) => choice && this.logger.show());
    }
  }

  private async offerInstall(message: string, canInstall: boolean, python: string): Promise<void> {
    const actions = canInstall ? [INSTALL_ACTION, "Show Output"] : ["Open Settings", "Show Output"];
    const choice = await vscode.window.showWarningMessage(message, ...actions);
    if (choice === INSTALL_ACTION) {
      const exitCode = await installIntoInterpreter(python);
      if (exitCode === 0) {
        void this.restart("onnxlens was installed into the interpreter");
      } else {
        void vscode.window.showErrorMessage(`pip install exited with code ${exitCode}: see the terminal.`);
      }
    } else if (choice === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "onnxlens.interpreter");
    } else if (choice === "Show Output") {
      this.logger.show();
    }
  }
}
