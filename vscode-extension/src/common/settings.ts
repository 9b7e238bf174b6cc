/**
 * The `onnxlens.*` settings: reading them, and what of them the server gets.
 *
 * The server receives the same keys as `initializationOptions` when it starts, and the whole
 * `onnxlens` section in workspace/didChangeConfiguration when they change (the client's
 * `synchronize.configurationSection`), so a change applies without a restart. Only the
 * interpreter needs a restart: it is the process the server runs in.
 */
import * as vscode from "vscode";
import { CONFIG_SECTION } from "./constants";
import { LogLevel, parseLogLevel } from "./logging";

export interface Settings {
  interpreter: string; // "" = not set
  exportOnSave: boolean;
  verify: boolean;
  jobs: number;
  debounceMs: number;
  logLevel: LogLevel;
}

export const DEFAULTS: Settings = {
  interpreter: "",
  exportOnSave: true,
  verify: true,
  jobs: 1,
  debounceMs: 300,
  logLevel: "info",
};

/** What VS Code's WorkspaceConfiguration offers that we use (a plain object in tests). */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

function positiveInt(value: unknown, fallback: number, min: number): number {
  return typeof value === "number" && Number.isFinite(value) ? Math.max(min, Math.floor(value)) : fallback;
}

function bool(value: unknown, fallback: boolean): boolean {
  return typeof value === "boolean" ? value : fallback;
}

/** Settings from a configuration, with a default for every missing or mistyped value. */
export function readSettings(config: ConfigReader): Settings {
  const interpreter = config.get<unknown>("interpreter");
  return {
    interpreter: typeof interpreter === "string" ? interpreter.trim() : "",
    exportOnSave: bool(config.get("exportOnSave"), DEFAULTS.exportOnSave),
    verify: bool(config.get("verify"), DEFAULTS.verify),
    jobs: positiveInt(config.get("jobs"), DEFAULTS.jobs, 1),
    debounceMs: positiveInt(config.get("debounceMs"), DEFAULTS.debounceMs, 0),
    logLevel: parseLogLevel(config.get("logLevel")),
  };
}

/** The server's view of the settings (initializationOptions): everything but the interpreter. */
export interface ServerSettings {
  exportOnSave: boolean;
  verify: boolean;
  jobs: number;
  debounceMs: number;
  logLevel: LogLevel;
}

export function toServerSettings(settings: Settings): ServerSettings {
  const { exportOnSave, verify, jobs, debounceMs, logLevel } = settings;
  return { exportOnSave, verify, jobs, debounceMs, logLevel };
}

export function getSettings(scope?: vscode.ConfigurationScope): Settings {
  return readSettings(vscode.workspace.getConfiguration(CONFIG_SECTION, scope));
}

/** Whether a configuration change needs a new server process (not just a settings push). */
export function needsRestart(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${CONFIG_SECTION}.interpreter`);
}
