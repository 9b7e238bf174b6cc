/**
 * The "ONNX Lens" output channel and a logger that honours `onnxlens.logLevel`.
 *
 * A plain OutputChannel (not a LogOutputChannel): the level of a LogOutputChannel follows VS
 * Code's global "Set Log Level", while ours follows the extension's own setting, the same one
 * the server gets.
 */
import * as vscode from "vscode";

export type LogLevel = "error" | "warning" | "info" | "debug";

const RANK: Record<LogLevel, number> = { error: 0, warning: 1, info: 2, debug: 3 };

export function parseLogLevel(value: unknown): LogLevel {
  return typeof value === "string" && value in RANK ? (value as LogLevel) : "info";
}

/** Whether a message of `level` is written when the user asked for `threshold`. */
export function shouldLog(level: LogLevel, threshold: LogLevel): boolean {
  return RANK[level] <= RANK[threshold];
}

export function formatLine(level: LogLevel, message: string, now: Date): string {
  return `[${now.toISOString()}] [${level}] ${message}`;
}

export class Logger implements vscode.Disposable {
  readonly channel: vscode.OutputChannel;
  private threshold: LogLevel = "info";

  constructor(name: string) {
    this.channel = vscode.window.createOutputChannel(name);
  }

  setLevel(level: LogLevel): void {
    this.threshold = level;
  }

  error(message: string): void {
    this.write("error", message);
  }
  warning(message: string): void {
    this.write("warning", message);
  }
  info(message: string): void {
    this.write("info", message);
  }
  debug(message: string): void {
    this.write("debug", message);
  }

  show(): void {
    this.channel.show(true);
  }

  dispose(): void {
    this.channel.dispose();
  }

  private write(level: LogLevel, message: string): void {
    if (shouldLog(level, this.threshold)) {
      this.channel.appendLine(formatLine(level, message, new Date()));
    }
  }
}
