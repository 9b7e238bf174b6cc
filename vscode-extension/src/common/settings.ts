/**
 * The `onnxlens.*` settings: reading them, and what of them the server gets.
 *
 * The server receives them as `initializationOptions` when it starts, and again in
 * workspace/didChangeConfiguration whenever the `onnxlens` section changes (the client's
 * `synchronize.configurationSection`), so a change applies without a restart. It gets only the
 * keys it knows (`toServerSettings`): the interpreter and trace settings are the client's own.
 * Only the interpreter needs a restart: it is the process the server runs in.
 */
import * as vscode from "vscode";
import { CONFIG_SECTION } from "./constants";
import { LogLevel, parseLogLevel } from "./logging";

export interface Settings {
  interpreter: string; // "" = not set
  exportOnSave: boolean;
  verify: boolean | null; // null: as the project's config says
  jobs: number;
  debounceMs: number;
  inlayHints: boolean;
  profile: boolean | null; // null: as the project's config says
  costLensThreshold: number; // percent of inference
  logLevel: LogLevel;
}

export const DEFAULTS: Settings = {
  interpreter: "",
  exportOnSave: true,
  verify: null,
  jobs: 1,
  debounceMs: 200,
  inlayHints: true,
  profile: null,
  costLensThreshold: 5,
  logLevel: "info",
};

/** What VS Code's WorkspaceConfiguration offers that we use (a plain object in tests). */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

function clampedInt(value: unknown, fallback: number, min: number, max: number): number {
  return typeof value === "number" && Number.isFinite(value) ? Math.min(max, Math.max(min, Math.floor(value))) : fallback;
}

function clampedNumber(value: unknown, fallback: number, min: number, max: number): number {
  return typeof value === "number" && Number.isFinite(value) ? Math.min(max, Math.max(min, value)) : fallback;
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
    verify: typeof config.get("verify") === "boolean" ? (config.get("verify") as boolean) : null,
    jobs: clampedInt(config.get("jobs"), DEFAULTS.jobs, 1, 64), // the server's bounds
    debounceMs: clampedInt(config.get("debounceMs"), DEFAULTS.debounceMs, 0, 10_000),
    inlayHints: bool(config.get("inlayHints"), DEFAULTS.inlayHints),
    profile: typeof config.get("profile") === "boolean" ? (config.get("profile") as boolean) : null,
    costLensThreshold: clampedNumber(config.get("costLensThreshold"), DEFAULTS.costLensThreshold, 0, 100),
    logLevel: parseLogLevel(config.get("logLevel")),
  };
}

/** The server's view of the settings (initializationOptions): everything but the interpreter. */
export interface ServerSettings {
  exportOnSave: boolean;
  verify: boolean | null;
  jobs: number;
  debounceMs: number;
  inlayHints: boolean;
  profile: boolean | null;
  costLensThreshold: number;
  logLevel: LogLevel;
}

export function toServerSettings(settings: Settings): ServerSettings {
  const { exportOnSave, verify, jobs, debounceMs, inlayHints, profile, costLensThreshold, logLevel } = settings;
  return { exportOnSave, verify, jobs, debounceMs, inlayHints, profile, costLensThreshold, logLevel };
}

export function getSettings(scope?: vscode.ConfigurationScope): Settings {
  return readSettings(vscode.workspace.getConfiguration(CONFIG_SECTION, scope));
}

/** Whether a configuration change needs a new server process (not just a settings push). */
export function needsRestart(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${CONFIG_SECTION}.interpreter`);
}
