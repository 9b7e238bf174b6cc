/**
 * The status bar entry: warming up, exporting (target and stage), ok (time, node count) or
 * failed (problem count); in an untrusted workspace, Restricted Mode (a click manages trust).
 *
 * The state is a pure function of events: the server's lifecycle (from the manager), the
 * server's `onnxlens/exportStatus` notifications (structured: one when an export begins, enters
 * a stage and ends, and when a cached result is shown) and the end of any work-done progress
 * (the server's warm-up is one: once a progress has ended, the server is past its start).
 * `renderStatus` turns the state into what is shown. Both are unit-tested; `StatusView` only
 * copies the rendering onto a StatusBarItem.
 */
import * as vscode from "vscode";
import { MANAGE_TRUST_COMMAND } from "./constants";

/** The notification's method; the extension asks for it with this experimental capability. */
export const EXPORT_STATUS_NOTIFICATION = "onnxlens/exportStatus";
export const EXPORT_STATUS_CAPABILITY = { onnxlens: { exportStatus: true } };

/** `onnxlens/exportStatus` params: the server's ExportStatus.to_dict() (server/lsp/exporting/status.py), snake_case. */
export interface ExportStatus {
  target: string;
  state: "exporting" | "ok" | "failed" | "cancelled";
  stage: string | null; // while exporting: the running stage (null when it begins)
  seconds: number | null; // finished: how long the export took
  node_count: number | null;
  problems: number; // error findings
  warnings: number; // warning findings (a `mismatch`, say)
  cached: boolean;
  verified: boolean | null;
  summary: string; // the progress's end message ("mlp: exported in 0.21 s, 42 nodes")
  change: string | null; // the graph's change since the previous export ("+1 node (LayerNormalization), +0 B"); null: none to compare with
}

const STATES = new Set(["exporting", "ok", "failed", "cancelled"]);
const isNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);

/** The params of an exportStatus notification, checked; undefined for anything else. */
export function exportStatusFromWire(value: unknown): ExportStatus | undefined {
  const data = value as Record<string, unknown> | null;
  if (typeof data !== "object" || data === null || typeof data.target !== "string" || !data.target || !STATES.has(data.state as string)) {
    return undefined;
  }
  return {
    target: data.target,
    state: data.state as ExportStatus["state"],
    stage: typeof data.stage === "string" ? data.stage : null,
    seconds: isNumber(data.seconds) ? data.seconds : null,
    node_count: isNumber(data.node_count) ? data.node_count : null,
    problems: isNumber(data.problems) ? data.problems : 0,
    warnings: isNumber(data.warnings) ? data.warnings : 0,
    cached: data.cached === true,
    verified: typeof data.verified === "boolean" ? data.verified : null,
    summary: typeof data.summary === "string" ? data.summary : "",
    change: typeof data.change === "string" ? data.change : null,
  };
}

/** `restricted`: the workspace is not trusted (Restricted Mode), so nothing is started. */
export type ServerPhase = "idle" | "restricted" | "starting" | "running" | "stopped" | "not-ready";

export type TargetState =
  | { phase: "exporting"; stage?: string; previous?: TargetState } // previous: shown again if cancelled
  | { phase: "ok"; seconds?: number; nodes?: number; warnings: number; cached: boolean; summary: string; change?: string }
  | { phase: "failed"; problems: number; summary: string };

export interface StatusState {
  server: ServerPhase;
  serverDetail?: string; // why it is stopped / not ready
  warmingUp: boolean; // from the server's start until a progress or an export has ended
  targets: Record<string, TargetState>;
  order: string[]; // target names, most recently changed last
}

export type StatusEvent =
  | { kind: "server"; phase: ServerPhase; detail?: string }
  | { kind: "export"; status: ExportStatus }
  | { kind: "progress-ended" };

export const INITIAL_STATUS: StatusState = { server: "idle", warmingUp: false, targets: {}, order: [] };

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

/** A target's state after one of its export statuses. The server runs one export per target at
 * a time, so a target's statuses never interleave: a cancelled export goes back to what was shown. */
function nextTarget(current: TargetState | undefined, status: ExportStatus): TargetState | undefined {
  switch (status.state) {
    case "exporting":
      return { phase: "exporting", stage: status.stage ?? undefined, previous: settled(current) };
    case "cancelled":
      return settled(current);
    case "ok":
      return {
        phase: "ok",
        seconds: status.seconds ?? undefined,
        nodes: status.node_count ?? undefined,
        warnings: status.warnings,
        cached: status.cached,
        summary: status.summary,
        change: status.change ?? undefined,
      };
    case "failed":
      // Every finding counts, as in the summary ("spectral: 3 problems") and the code lens.
      return { phase: "failed", problems: status.problems + status.warnings, summary: status.summary };
  }
}

export function nextStatus(state: StatusState, event: StatusEvent): StatusState {
  switch (event.kind) {
    case "server":
      if (event.phase === "starting") {
        // A new server process: what the old one said no longer holds.
        return { ...INITIAL_STATUS, server: "starting", warmingUp: true };
      }
      return { ...state, server: event.phase, serverDetail: event.detail };
    case "progress-ended":
      return { ...state, warmingUp: false };
    case "export": {
      const { status } = event;
      const rest = status.state === "ok" || status.state === "failed" ? { ...state, warmingUp: false } : state;
      const target = nextTarget(state.targets[status.target], status);
      return target ? withTarget(rest, status.target, target) : withoutTarget(rest, status.target);
    }
  }
}

export interface StatusRendering {
  text: string;
  tooltip: string;
  severity: "info" | "warning" | "error";
  busy: boolean;
  command?: string; // what a click runs, when not the default (open the last report)
}

export const RESTRICTED_TOOLTIP =
  "ONNX Lens: Restricted Mode\nExporting a model imports and runs the workspace's Python code, so ONNX Lens " +
  "starts nothing in a workspace you have not trusted.\nClick to manage workspace trust; once trusted, it starts.";

function describeTarget(name: string, target: TargetState): string {
  switch (target.phase) {
    case "exporting":
      return target.stage ? `${name}: exporting (${target.stage})` : `${name}: exporting`;
    case "ok": {
      const parts = [
        target.seconds !== undefined ? `${seconds(target.seconds)} s` : undefined,
        target.nodes !== undefined ? `${target.nodes} nodes` : undefined,
        target.warnings > 0 ? plural(target.warnings, "warning") : undefined,
        target.cached ? "cached" : undefined,
      ].filter(Boolean);
      const text = parts.length ? `${name}: ok (${parts.join(", ")})` : `${name}: ${target.summary}`;
      return target.change ? `${text}\n  since the last export: ${target.change}` : text;
    }
    case "failed":
      // The server's summary also says what stopped a target when it is not in the model's own
      // file ("vit: 1 problem — import failed: … (dino.py:9)").
      return target.summary.startsWith(`${name}: `) ? target.summary : `${name}: ${plural(target.problems, "problem")}`;
  }
}

type OkTarget = Extract<TargetState, { phase: "ok" }>;

/** "mlp 0.21 s · 42 nodes", or "mlp ok". */
function okText(name: string, target: OkTarget): string {
  const parts = [
    target.seconds !== undefined ? `${seconds(target.seconds)} s` : undefined,
    target.nodes !== undefined ? plural(target.nodes, "node") : undefined,
  ].filter(Boolean);
  return parts.length ? `${name} ${parts.join(" · ")}` : `${name} ok`;
}

const seconds = (value: number) => value.toFixed(2); // as the server's summary writes them
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function renderStatus(state: StatusState): StatusRendering {
  const names = [...state.order].reverse(); // most recent first
  const lines = names.map((name) => describeTarget(name, state.targets[name]));
  const tooltip = ["ONNX Lens", ...lines, "", "Click to open the last export report."].join("\n");

  if (state.server === "restricted") {
    return { text: "$(workspace-untrusted) ONNX: Restricted Mode", tooltip: RESTRICTED_TOOLTIP, severity: "warning", busy: false, command: MANAGE_TRUST_COMMAND };
  }
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
    const problems = failed.reduce((sum, name) => sum + (state.targets[name] as { problems: number }).problems, 0);
    return { text: `$(error) ONNX: ${plural(problems, "problem")} (${failed.join(", ")})`, tooltip, severity: "error", busy: false };
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

  constructor(private readonly command: string) {
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
    this.item.command = rendering.command ?? this.command;
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
