import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ExportStatus,
  exportStatusFromWire,
  INITIAL_STATUS,
  nextStatus,
  renderStatus,
  StatusEvent,
  StatusState,
  StatusView,
} from "../src/common/status";
import { stub } from "./vscode-stub";

const run = (events: StatusEvent[], from: StatusState = INITIAL_STATUS) => events.reduce(nextStatus, from);
const text = (events: StatusEvent[]) => renderStatus(run(events)).text;

const started: StatusEvent[] = [
  { kind: "server", phase: "starting" },
  { kind: "server", phase: "running" },
];

/** An `onnxlens/exportStatus` notification, as the server's ExportStatus.to_dict() sends it. */
function status(target: string, state: ExportStatus["state"], fields: Partial<ExportStatus> = {}): StatusEvent {
  const wire: ExportStatus = {
    target, state, stage: null, seconds: null, node_count: null, problems: 0, warnings: 0, cached: false,
    verified: null, summary: "", change: null, ...fields,
  };
  return { kind: "export", status: wire };
}
const begins = (target: string) => status(target, "exporting");
const stage = (target: string, name: string) => status(target, "exporting", { stage: name });
const ok = (target: string, seconds: number, nodes?: number, fields: Partial<ExportStatus> = {}) =>
  status(target, "ok", { seconds, node_count: nodes ?? null, summary: `${target}: exported in ${seconds.toFixed(2)} s`, ...fields });
const failed = (target: string, problems: number, warnings = 0) =>
  status(target, "failed", { problems, warnings, summary: `${target}: ${problems + warnings} problems` });
const cancelled = (target: string) => status(target, "cancelled", { summary: `${target}: cancelled` });

test("warming up from the server's start until the first export or progress ends", () => {
  assert.equal(text([{ kind: "server", phase: "starting" }]), "$(sync~spin) ONNX: warming up");
  assert.equal(text(started), "$(sync~spin) ONNX: warming up");
  assert.equal(renderStatus(run(started)).busy, true);
  // The warm-up's progress ended and nothing was exported (a config without valid targets).
  assert.equal(text([...started, { kind: "progress-ended" }]), "$(circle-outline) ONNX");
  assert.equal(text([...started, begins("mlp"), ok("mlp", 0.2)]), "$(check) ONNX: mlp 0.20 s");
});

test("exporting shows the target, then the stage the server reports", () => {
  const begun = [...started, begins("spectral")];
  assert.equal(text(begun), "$(sync~spin) ONNX: spectral");
  assert.equal(text([...begun, stage("spectral", "capture")]), "$(sync~spin) ONNX: spectral · capture");
  assert.equal(text([...begun, stage("spectral", "capture"), stage("spectral", "scan")]), "$(sync~spin) ONNX: spectral · scan");
});

test("ok shows time and node count of the last export", () => {
  const rendering = renderStatus(run([...started, begins("mlp"), ok("mlp", 0.21, 42)]));
  assert.equal(rendering.text, "$(check) ONNX: mlp 0.21 s · 42 nodes");
  assert.equal(rendering.busy, false);
  assert.match(rendering.tooltip as string, /mlp: ok \(0.21 s, 42 nodes\)/);
  assert.equal(text([...started, begins("mlp"), ok("mlp", 1.5)]), "$(check) ONNX: mlp 1.50 s");
});

test("a cached result and warnings are in the tooltip, not the text", () => {
  const rendering = renderStatus(run([...started, ok("mlp", 0.06, 6, { cached: true, warnings: 1 })]));
  assert.equal(rendering.text, "$(check) ONNX: mlp 0.06 s · 6 nodes");
  assert.match(rendering.tooltip, /mlp: ok \(0.06 s, 6 nodes, 1 warning, cached\)/);
});

test("the graph's change since the last export is in the tooltip, under its target", () => {
  const change = "+3 nodes (Add, Mul, Sqrt), +0 B";
  const rendering = renderStatus(run([...started, ok("mlp", 0.2, 9, { change })]));
  assert.equal(rendering.text, "$(check) ONNX: mlp 0.20 s · 9 nodes");
  assert.match(rendering.tooltip, /mlp: ok \(0.20 s, 9 nodes\)\n  since the last export: \+3 nodes \(Add, Mul, Sqrt\), \+0 B/);
  // The first export has nothing to compare with: no line for it.
  assert.doesNotMatch(renderStatus(run([...started, ok("mlp", 0.2, 9)])).tooltip, /since the last export/);
});

test("failed shows the problem count, and wins over targets that are ok", () => {
  const rendering = renderStatus(run([...started, begins("spectral"), failed("spectral", 2), begins("mlp"), ok("mlp", 0.2)]));
  assert.equal(rendering.text, "$(error) ONNX: 2 problems (spectral)");
  assert.equal(rendering.severity, "error");
  assert.match(rendering.tooltip, /mlp: ok \(0.20 s\)\nspectral: 2 problems/);
  // Every finding of a failed export counts, warnings too (as the server's summary says).
  assert.equal(text([...started, failed("big", 1, 1)]), "$(error) ONNX: 2 problems (big)");
  assert.equal(text([...started, failed("a", 1), failed("b", 3)]), "$(error) ONNX: 4 problems (b, a)");
});

test("the tooltip says what stopped a target when the problem is in another file", () => {
  const summary = "vit: 1 problem — import failed: ModuleNotFoundError: No module named 'torchvision' (dino.py:9)";
  const rendering = renderStatus(run([...started, status("vit", "failed", { problems: 1, summary })]));
  assert.equal(rendering.text, "$(error) ONNX: 1 problem (vit)");
  assert.match(rendering.tooltip, new RegExp(`\\n${summary.replace(/[()]/g, "\\$&")}\\n`));
});

test("a fixed target clears its problems", () => {
  const broken = [...started, begins("spectral"), failed("spectral", 1)];
  assert.equal(text(broken), "$(error) ONNX: 1 problem (spectral)");
  assert.equal(text([...broken, begins("spectral"), ok("spectral", 0.4)]), "$(check) ONNX: spectral 0.40 s");
});

test("a concurrent export keeps the spinner until every export has ended", () => {
  assert.equal(text([...started, begins("mlp"), begins("encoder"), ok("encoder", 0.3)]), "$(sync~spin) ONNX: mlp");
});

test("the end of the warm-up's progress does not end an export", () => {
  const events = [...started, begins("mlp"), { kind: "progress-ended" } as StatusEvent];
  assert.equal(text(events), "$(sync~spin) ONNX: mlp");
  assert.equal(run(events).warmingUp, false);
});

test("notifications are read by their fields; anything else is ignored", () => {
  const wire = {
    target: "mlp", state: "ok", stage: null, seconds: 0.21, node_count: 42, problems: 0, warnings: 0, cached: false,
    verified: true, summary: "mlp: exported in 0.21 s, 42 nodes", from_a_newer_server: 1,
  };
  assert.deepEqual(exportStatusFromWire(wire), {
    target: "mlp", state: "ok", stage: null, seconds: 0.21, node_count: 42, problems: 0, warnings: 0, cached: false,
    verified: true, summary: "mlp: exported in 0.21 s, 42 nodes", change: null,
  });
  assert.deepEqual(exportStatusFromWire({ target: "x", state: "exporting", stage: "scan" }), {
    target: "x", state: "exporting", stage: "scan", seconds: null, node_count: null, problems: 0, warnings: 0,
    cached: false, verified: null, summary: "", change: null,
  });
  assert.equal(exportStatusFromWire({ ...wire, change: "+1 node (LayerNormalization), +0 B" })?.change,
    "+1 node (LayerNormalization), +0 B");
  for (const bad of [null, "mlp: ok", [], { target: "x" }, { target: "", state: "ok" }, { target: "x", state: "done" }]) {
    assert.equal(exportStatusFromWire(bad), undefined, JSON.stringify(bad));
  }
});

test("a stopped or unusable server says so", () => {
  const stopped = renderStatus(run([...started, { kind: "server", phase: "stopped", detail: "exit code 1" }]));
  assert.equal(stopped.text, "$(error) ONNX Lens: stopped");
  assert.match(stopped.tooltip, /exit code 1/);
  assert.equal(text([{ kind: "server", phase: "not-ready", detail: "needs torch" }]), "$(error) ONNX Lens: not ready");
});

test("an untrusted workspace shows Restricted Mode, and a click manages trust", () => {
  const shown = renderStatus(run([{ kind: "server", phase: "restricted" }]));
  assert.equal(shown.text, "$(workspace-untrusted) ONNX: Restricted Mode");
  assert.match(shown.tooltip, /runs the workspace's Python code/);
  assert.equal(shown.command, "workbench.trust.manage");
  assert.equal(shown.busy, false);
  stub.reset();
  const view = new StatusView("onnxlens.openLastReport");
  const item = stub.statusBarItems[0];
  view.apply({ kind: "server", phase: "restricted" });
  assert.equal(item.visible, true);
  assert.equal(item.command, "workbench.trust.manage");
  view.apply({ kind: "server", phase: "starting" }); // trusted: the server starts
  assert.equal(item.command, "onnxlens.openLastReport");
  assert.equal(item.text, "$(sync~spin) ONNX: warming up");
});

test("a restarted server forgets what the old one said", () => {
  const before = run([...started, begins("spectral"), failed("spectral", 2)]);
  assert.equal(renderStatus(run(started, before)).text, "$(sync~spin) ONNX: warming up");
});

test("the view shows the rendering, opens the last report on click, and hides without a config", () => {
  stub.reset();
  const view = new StatusView("onnxlens.openLastReport");
  const item = stub.statusBarItems[0];
  assert.equal(item.command, "onnxlens.openLastReport");
  view.apply({ kind: "server", phase: "starting" });
  assert.equal(item.text, "$(sync~spin) ONNX: warming up");
  assert.equal(item.visible, true);
  view.apply(begins("mlp"));
  view.apply(ok("mlp", 0.5));
  assert.equal(view.lastFinishedTarget(), "mlp");
  view.apply({ kind: "server", phase: "idle" });
  assert.equal(item.visible, false);
});

test("a cancelled export (a newer save replaced it) shows what was there before, then the newer export", () => {
  const replaced = [...started, begins("spectral"), failed("spectral", 2), begins("spectral"), stage("spectral", "capture"), cancelled("spectral")];
  assert.equal(text(replaced), "$(error) ONNX: 2 problems (spectral)");
  // The server runs the newer export once the cancelled one has gone.
  assert.equal(text([...replaced, begins("spectral")]), "$(sync~spin) ONNX: spectral");
  assert.equal(text([...replaced, begins("spectral"), ok("spectral", 0.4)]), "$(check) ONNX: spectral 0.40 s");
  // A first export that is cancelled leaves nothing behind.
  assert.deepEqual(run([...started, begins("mlp"), cancelled("mlp")]).targets, {});
});
