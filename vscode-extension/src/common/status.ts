/**
 * The status bar entry: warming up, exporting (target and stage), ok (time, node count) or
 * failed (problem count).
 *
 * The state is a pure function of events (server lifecycle and the server's work-done progress:
 * begin message = target, report message = stage, end message = outcome such as
 * "mlp: exported in 0.21 s" or "spectral: 2 problems"); `renderStatus` turns it into what is
 * shown. Both are unit-tested; `StatusView` only copies the rendering onto a StatusBarItem.
 */
import * as vscode from "vscode";

export type ServerPhase = "idle" | "starting" | "running" | "stopped" | "not-ready";

export type TargetState =
  | { phase: "exporting"; stage?: string; previous?: TargetState } // previous: shown again if cancelled
  | { phase: "ok"; seconds?: string; nodes?: number; summary: string }
  | { phase: "failed"; problems?: number; summary: string };

export interface StatusState {
  server: ServerPhase;
  serverDetail?: string; // why it is stopped / not ready
  warmingUp: boolean; // the server said it is warming up, or nothing has finished yet
  targets: Record<string, TargetState>;
  order: string[]; // target names, most recently changed last
  tokens: Record<string, string>; // progress token -> target
}

export type StatusEvent =
  | { kind: "server"; phase: ServerPhase; detail?: string }
  | { kind: "begin"; token: string; title?: string; message?: string }
  | { kind: "report"; token: string; message?: string }
  | { kind: "end"; token: string; message?: string };

/** The LSP work-done progress values (structurally; this module does not need the client). */
export type ProgressValue =
  | { kind: "begin"; title: string; message?: string }
  | { kind: "report"; message?: string }
  | { kind: "end"; message?: string };

/** A work-done progress notification ($/progress) as a status event. */
export function progressToStatusEvent(token: string | number, value: ProgressValue): StatusEvent {
  const key = String(token);
  switch (value.kind) {
    case "begin":
      return { kind: "begin", token: key, title: value.title, message: value.message };
    case "report":
      return { kind: "report", token: key, message: value.message };
    case "end":
      return { kind: "end", token: key, message: value.message };
  }
}

export const INITIAL_STATUS: StatusState = { server: "idle", warmingUp: false, targets: {}, order: [], tokens: {} };

/** An end message parsed: "mlp: exported in 0.21 s, 42 nodes", "spectral: 2 problems". */
export function parseOutcome(message: string): TargetState {
  const summary = message.replace(/^[^:]*:\s*/, "") || message;
  const problems = /(\d+)\s+problems?/.exec(message);
  const failed = problems !== null || /\b(fail|failed|error|crash|timed out|timeout)/i.test(message);
  if (failed) {
    return { phase: "failed", problems: problems ? Number(problems[1]) : undefined, summary };
  }
  const seconds = /(\d+(?:\.\d+)?)\s*s\b/.exec(message);
  const nodes = /(\d+)\s+(?:onnx\s+)?nodes?/i.exec(message);
  return {
    phase: "ok",
    seconds: seconds ? seconds[1] : undefined, // as the server wrote it ("0.20", not 0.2)
    nodes: nodes ? Number(nodes[1]) : undefined,
    summary,
  };
}

/** The target an end message names ("mlp: ..."), if it names one. */
function targetOfOutcome(message: string | undefined): string | undefined {
  const match = message ? /^([^:\s]+):/.exec(message) : null;
  return match ? match[1] : undefined;
}

const isWarmUp = (text?: string) => text !== undefined && /warm/i.test(text);

function withTarget(state: StatusState, name: string, target: TargetState): StatusState {
  return {
    ...state,
    targets: { ...state.targets, [name]: target },
    order: [...state.order.filter((n) => n !== name), name],
  };
}

function withoutTarget(state: StatusState, name: string): StatusState {
  const targets = { ...state.targets };
  delete targets[name];
  return { ...state, targets, order: state.order.filter((n) => n !== name) };
}

/** The last finished state of a target (an exporting one remembers it). */
function settled(target: TargetState | undefined): TargetState | undefined {
  return target?.phase === "exporting" ? target.previous : target;
}

function withoutToken(state: StatusState, token: string): StatusState {
  const tokens = { ...state.tokens };
  delete tokens[token];
  return { ...state, tokens };
}

export function nextStatus(state: StatusState, event: StatusEvent): StatusState {
  switch (event.kind) {
    case "server":
      if (event.phase === "starting") {
        // A new server process: what the old one said no longer holds.
        return { ...INITIAL_STATUS, server: "starting", warmingUp: true };
      }
      return { ...state, server: event.phase, serverDetail: event.detail, tokens: event.phase === "running" ? state.tokens : {} };
    case "begin": {
      const target = event.message?.trim();
      if (!target || isWarmUp(target) || isWarmUp(event.title)) {
        return { ...state, warmingUp: true, tokens: { ...state.tokens, [event.token]: "" } };
      }
      return withTarget({ ...state, tokens: { ...state.tokens, [event.token]: target } }, target, {
        phase: "exporting",
        previous: settled(state.targets[target]),
      });
    }
    case "report": {
      const target = state.tokens[event.token];
      if (!target) {
        return state; // warm-up progress, or a token we never saw begin
      }
      const current = state.targets[target];
      return withTarget(state, target, {
        phase: "exporting",
        stage: event.message?.trim() || undefined,
        previous: current?.phase === "exporting" ? current.previous : current,
      });
    }
    case "end": {
      const target = state.tokens[event.token] || targetOfOutcome(event.message);
      const rest = { ...withoutToken(state, event.token), warmingUp: false };
      if (!target) {
        return rest;
      }
      if (/\bcancel+ed\b/i.test(event.message ?? "")) {
        // A newer save replaced this export: its own progress (if begun) goes on; else as before.
        const current = rest.targets[target];
        if (Object.values(rest.tokens).includes(target) || current?.phase !== "exporting") {
          return rest;
        }
        return current.previous ? withTarget(rest, target, current.previous) : withoutTarget(rest, target);
      }
      return withTarget(rest, target, parseOutcome(event.message ?? `${target}: done`));
    }
  }
}

export interface StatusRendering {
  text: string;
  tooltip: string;
  severity: "info" | "warning" | "error";
  busy: boolean;
}

function describeTarget(name: string, target: TargetState): string {
  switch (target.phase) {
    case "exporting":
      return target.stage ? `${name}: exporting (${target.stage})` : `${name}: exporting`;
    case "ok": {
      const parts = [target.seconds !== undefined ? `${target.seconds} s` : undefined, target.nodes !== undefined ? `${target.nodes} nodes` : undefined].filter(Boolean);
      return parts.length ? `${name}: ok (${parts.join(", ")})` : `${name}: ${target.summary}`;
    }
    case "failed":
      return target.problems !== undefined ? `${name}: ${plural(target.problems, "problem")}` : `${name}: ${target.summary}`;
  }
}

type OkTarget = Extract<TargetState, { phase: "ok" }>;

/** "mlp 0.21 s · 42 nodes" (what the end message told), or "mlp ok". */
function okText(name: string, target: OkTarget): string {
  const parts = [
    target.seconds !== undefined ? `${target.seconds} s` : undefined,
    target.nodes !== undefined ? plural(target.nodes, "node") : undefined,
  ].filter(Boolean);
  return parts.length ? `${name} ${parts.join(" · ")}` : `${name} ok`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function renderStatus(state: StatusState): StatusRendering {
  const names = [...state.order].reverse(); // most recent first
  const lines = names.map((name) => describeTarget(name, state.targets[name]));
  const tooltip = ["ONNX Lens", ...lines, "", "Click to open the last export report."].join("\n");

  if (state.server === "stopped" || state.server === "not-ready") {
    const text = state.server === "stopped" ? "ONNX Lens: stopped" : "ONNX Lens: not ready";
    return { text: `$(error) ${text}`, tooltip: state.serverDetail ? `${text}\n${state.serverDetail}` : text, severity: "error", busy: false };
  }
  const exporting = names.find((name) => state.targets[name].phase === "exporting");
  if (exporting) {
    const target = state.targets[exporting] as { stage?: string };
    const stage = target.stage ? ` · ${target.stage}` : "";
    return { text: `$(sync~spin) ONNX: ${exporting}${stage}`, tooltip, severity: "info", busy: true };
  }
  const failed = names.filter((name) => state.targets[name].phase === "failed");
  if (failed.length > 0) {
    const counts = failed.map((name) => (state.targets[name] as { problems?: number }).problems);
    const text = counts.every((n) => n !== undefined)
      ? `${plural(counts.reduce((a, b) => (a ?? 0) + (b ?? 0), 0) ?? 0, "problem")} (${failed.join(", ")})`
      : `${failed.join(", ")} failed`;
    return { text: `$(error) ONNX: ${text}`, tooltip, severity: "error", busy: false };
  }
  if (names.length > 0) {
    return { text: `$(check) ONNX: ${okText(names[0], state.targets[names[0]] as OkTarget)}`, tooltip, severity: "info", busy: false };
  }
  if (state.server === "starting" || state.warmingUp) {
    return { text: "$(sync~spin) ONNX: warming up", tooltip: "ONNX Lens: starting the server and warming up torch", severity: "info", busy: true };
  }
  return { text: "$(circle-outline) ONNX", tooltip, severity: "info", busy: false };
}

/** Shows the rendering in the status bar; clicking it runs `command` (open the last report). */
export class StatusView implements vscode.Disposable {
  private state: StatusState = INITIAL_STATUS;
  private readonly item: vscode.StatusBarItem;

  constructor(command: string) {
    this.item = vscode.window.createStatusBarItem("onnxlens.status", vscode.StatusBarAlignment.Left, 0);
    this.item.name = "ONNX Lens";
    this.item.command = command;
  }

  get current(): StatusState {
    return this.state;
  }

  apply(event: StatusEvent): void {
    this.state = nextStatus(this.state, event);
    if (this.state.server === "idle") {
      this.item.hide(); // no onnxlens config in this workspace: nothing to show
      return;
    }
    const rendering = renderStatus(this.state);
    this.item.text = rendering.text;
    this.item.tooltip = rendering.tooltip;
    this.item.backgroundColor =
      rendering.severity === "error" && (this.state.server === "stopped" || this.state.server === "not-ready")
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : undefined;
    this.item.show();
  }

  /** The target that finished most recently, if any (for "Open Last Report"). */
  lastFinishedTarget(): string | undefined {
    return [...this.state.order].reverse().find((name) => this.state.targets[name].phase !== "exporting");
  }

  dispose(): void {
    this.item.dispose();
  }
}
