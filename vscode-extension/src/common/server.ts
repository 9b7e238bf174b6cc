/**
 * Starting the onnxlens language server (`python -I -m onnxlens.server`, LSP on stdio) and the
 * client options that connect it to the rest of the extension: settings, the export status
 * notifications (and the end of progress) for the status entry, and window/showDocument for
 * reports.
 */
import * as vscode from "vscode";
import {
  CancellationToken,
  ClientCapabilities,
  DidChangeConfigurationNotification,
  Executable,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  StaticFeature,
} from "vscode-languageclient/node";
import { CONFIG_SECTION, EXTENSION_NAME, SERVER_ARGS, SERVER_ID } from "./constants";
import { Logger } from "./logging";
import { ServerSettings } from "./settings";
import { EXPORT_STATUS_CAPABILITY, EXPORT_STATUS_NOTIFICATION, exportStatusFromWire, StatusEvent } from "./status";

/** The documents the server cares about: Python sources and the config files. */
export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "file", pattern: "**/pyproject.toml" },
  { scheme: "file", pattern: "**/onnxlens.toml" },
];

export function serverExecutable(python: string, cwd?: string): Executable {
  return {
    command: python,
    args: SERVER_ARGS,
    // The worker processes the server starts inherit the environment (PYTHONUNBUFFERED: their
    // stderr reaches the output channel at once).
    options: { cwd, env: { ...process.env, PYTHONUNBUFFERED: "1" } },
  };
}

export interface ServerHooks {
  /** The server's export statuses and the end of its progress (the status entry follows them). */
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

/** Announces that the extension wants `onnxlens/exportStatus` (the server sends it only then). */
const exportStatusFeature: StaticFeature = {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = { ...(capabilities.experimental as object | undefined), ...EXPORT_STATUS_CAPABILITY };
  },
  initialize(): void {},
  getState: () => ({ kind: "static" }),
  clear(): void {},
};

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
        if (params.kind === "end") {
          hooks.onStatusEvent({ kind: "progress-ended" });
        }
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
  client.registerFeature(exportStatusFeature);
  client.onNotification(EXPORT_STATUS_NOTIFICATION, (params: unknown) => {
    const status = exportStatusFromWire(params);
    if (status) {
      hooks.onStatusEvent({ kind: "export", status });
    }
  });
  logger.info(`starting server: ${options.python} ${SERVER_ARGS.join(" ")} (cwd ${options.cwd ?? "(none)"})`);
  await client.start();
  logger.info(`server started (${client.initializeResult?.serverInfo?.name ?? "onnxlens"} ${client.initializeResult?.serverInfo?.version ?? ""})`.trimEnd());
  return client;
}
