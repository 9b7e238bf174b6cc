/**
 * Starting the onnxlens language server (`python -m onnxlens.server`, LSP on stdio) and the
 * client options that connect it to the rest of the extension: settings, progress for the
 * status entry, and window/showDocument for reports.
 */
import * as vscode from "vscode";
import {
  CancellationToken,
  DidChangeConfigurationNotification,
  Executable,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
} from "vscode-languageclient/node";
import { CONFIG_SECTION, EXTENSION_NAME, SERVER_ID, SERVER_MODULE } from "./constants";
import { Logger } from "./logging";
import { ServerSettings } from "./settings";
import { progressToStatusEvent, StatusEvent } from "./status";

/** The documents the server cares about: Python sources and the config files. */
export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "file", pattern: "**/pyproject.toml" },
  { scheme: "file", pattern: "**/onnxlens.toml" },
];

export function serverExecutable(python: string, cwd?: string): Executable {
  return {
    command: python,
    args: ["-m", SERVER_MODULE],
    // PYTHONUNBUFFERED: the server's stderr (tracebacks, warnings) reaches the output channel at once.
    options: { cwd, env: { ...process.env, PYTHONUNBUFFERED: "1" } },
  };
}

export interface ServerHooks {
  /** Every work-done progress notification from the server (the status entry follows them). */
  onStatusEvent(event: StatusEvent): void;
  /** window/showDocument: return true when handled (reports), false to let the client do it. */
  showDocument(uri: vscode.Uri): Promise<boolean>;
  /** The settings as the server should see them now (read at each configuration change). */
  serverSettings(): ServerSettings;
}

export interface ServerStartOptions {
  python: string;
  cwd?: string;
  settings: ServerSettings;
  logger: Logger;
  traceChannel: vscode.OutputChannel;
  hooks: ServerHooks;
}

export async function startServer(options: ServerStartOptions): Promise<LanguageClient> {
  const { logger, hooks } = options;
  let client: LanguageClient | undefined = undefined;
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: logger.channel,
    traceOutputChannel: options.traceChannel,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationOptions: options.settings,
    // A change of any `onnxlens.*` setting sends workspace/didChangeConfiguration (with the
    // payload the middleware below makes).
    synchronize: { configurationSection: CONFIG_SECTION },
    middleware: {
      workspace: {
        // The client would send the raw section (interpreter and trace included, `verify`
        // defaulted); the server gets the same keys as in initializationOptions instead.
        didChangeConfiguration: async () => {
          const settings = { [CONFIG_SECTION]: hooks.serverSettings() };
          await client?.sendNotification(DidChangeConfigurationNotification.type, { settings });
        },
      },
      handleWorkDoneProgress: (token, params, next) => {
        hooks.onStatusEvent(progressToStatusEvent(token, params));
        next(token, params);
      },
      window: {
        showDocument: async (params, next) => {
          if (await hooks.showDocument(vscode.Uri.parse(params.uri))) {
            return { success: true };
          }
          const result = await next(params, CancellationToken.None);
          return result instanceof ResponseError ? { success: false } : result;
        },
      },
    },
  };
  const executable = serverExecutable(options.python, options.cwd);
  client = new LanguageClient(SERVER_ID, EXTENSION_NAME, { run: executable, debug: executable }, clientOptions);
  logger.info(`starting server: ${options.python} -m ${SERVER_MODULE} (cwd ${options.cwd ?? "(none)"})`);
  await client.start();
  logger.info(`server started (${client.initializeResult?.serverInfo?.name ?? "onnxlens"} ${client.initializeResult?.serverInfo?.version ?? ""})`.trimEnd());
  return client;
}
