import assert from "node:assert/strict";
import { test } from "node:test";
import {
  INITIAL_STATUS,
  nextStatus,
  parseOutcome,
  progressToStatusEvent,
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

test("warming up from the server's start until the first export ends", () => {
  assert.equal(text([{ kind: "server", phase: "starting" }]), "$(sync~spin) ONNX: warming up");
  assert.equal(text(started), "$(sync~spin) ONNX: warming up");
  assert.equal(renderStatus(run(started)).busy, true);
});

test("exporting shows the target, then the stage the server reports", () => {
  const begun = [...started, { kind: "begin", token: "t1", title: "onnxlens", message: "spectral" } as StatusEvent];
  assert.equal(text(begun), "$(sync~spin) ONNX: spectral");
  assert.equal(text([...begun, { kind: "report", token: "t1", message: "capture" }]), "$(sync~spin) ONNX: spectral · capture");
  assert.equal(
    text([...begun, { kind: "report", token: "t1", message: "capture" }, { kind: "report", token: "t1", message: "scan" }]),
    "$(sync~spin) ONNX: spectral · scan",
  );
});

test("ok shows time and node count of the last export", () => {
  const events: StatusEvent[] = [
    ...started,
    { kind: "begin", token: "a", title: "onnxlens", message: "mlp" },
    { kind: "end", token: "a", message: "mlp: exported in 0.21 s, 42 nodes" },
  ];
  const rendering = renderStatus(run(events));
  assert.equal(rendering.text, "$(check) ONNX: mlp 0.21 s · 42 nodes");
  assert.equal(rendering.busy, false);
  assert.match(rendering.tooltip as string, /mlp: ok \(0.21 s, 42 nodes\)/);
  assert.equal(text([...started, { kind: "begin", token: "a", title: "onnxlens", message: "mlp" }, { kind: "end", token: "a", message: "mlp: exported in 1.50 s" }]), "$(check) ONNX: mlp 1.50 s");
});

test("failed shows the problem count, and wins over targets that are ok", () => {
  const events: StatusEvent[] = [
    ...started,
    { kind: "begin", token: "a", title: "onnxlens", message: "spectral" },
    { kind: "end", token: "a", message: "spectral: 2 problems" },
    { kind: "begin", token: "b", title: "onnxlens", message: "mlp" },
    { kind: "end", token: "b", message: "mlp: exported in 0.2 s" },
  ];
  const rendering = renderStatus(run(events));
  assert.equal(rendering.text, "$(error) ONNX: 2 problems (spectral)");
  assert.equal(rendering.severity, "error");
  assert.match(rendering.tooltip, /mlp: ok \(0.2 s\)\nspectral: 2 problems/);
});

test("a fixed target clears its problems", () => {
  const failed: StatusEvent[] = [
    ...started,
    { kind: "begin", token: "a", title: "onnxlens", message: "spectral" },
    { kind: "end", token: "a", message: "spectral: 1 problem" },
  ];
  assert.equal(text(failed), "$(error) ONNX: 1 problem (spectral)");
  assert.equal(
    text([...failed, { kind: "begin", token: "b", title: "onnxlens", message: "spectral" }, { kind: "end", token: "b", message: "spectral: exported in 0.4 s" }]),
    "$(check) ONNX: spectral 0.4 s",
  );
});

test("a concurrent export keeps the spinner until every export has ended", () => {
  const events: StatusEvent[] = [
    ...started,
    { kind: "begin", token: "a", title: "onnxlens", message: "mlp" },
    { kind: "begin", token: "b", title: "onnxlens", message: "encoder" },
    { kind: "end", token: "b", message: "encoder: exported in 0.3 s" },
  ];
  assert.equal(text(events), "$(sync~spin) ONNX: mlp");
});

test("a warm-up progress is not a target", () => {
  const events: StatusEvent[] = [...started, { kind: "begin", token: "w", title: "onnxlens", message: "warming up" }];
  assert.equal(text(events), "$(sync~spin) ONNX: warming up");
  assert.deepEqual(run(events).targets, {});
  assert.equal(text([...events, { kind: "report", token: "w", message: "importing torch" }]), "$(sync~spin) ONNX: warming up");
  assert.equal(text([...events, { kind: "end", token: "w", message: "ready" }]), "$(circle-outline) ONNX");
});

test("failures without a count, and crashes, still read as failed", () => {
  assert.deepEqual(parseOutcome("big: crashed (signal 9)"), { phase: "failed", problems: undefined, summary: "crashed (signal 9)" });
  assert.equal(parseOutcome("big: export failed").phase, "failed");
  assert.equal(parseOutcome("big: timed out after 120 s").phase, "failed");
  assert.deepEqual(parseOutcome("x: exported in 2 s, 7 nodes"), { phase: "ok", seconds: "2", nodes: 7, summary: "exported in 2 s, 7 nodes" });
  assert.deepEqual(parseOutcome("x: exported in 0.06 s (cached)"), { phase: "ok", seconds: "0.06", nodes: undefined, summary: "exported in 0.06 s (cached)" });
});

test("a stopped or unusable server says so", () => {
  const stopped = renderStatus(run([...started, { kind: "server", phase: "stopped", detail: "exit code 1" }]));
  assert.equal(stopped.text, "$(error) ONNX Lens: stopped");
  assert.match(stopped.tooltip, /exit code 1/);
  assert.equal(text([{ kind: "server", phase: "not-ready", detail: "needs torch" }]), "$(error) ONNX Lens: not ready");
});

test("a restarted server forgets what the old one said", () => {
  const before = run([...started, { kind: "begin", token: "a", title: "onnxlens", message: "spectral" }, { kind: "end", token: "a", message: "spectral: 2 problems" }]);
  assert.equal(renderStatus(run(started, before)).text, "$(sync~spin) ONNX: warming up");
});

test("$/progress values map to events with string tokens", () => {
  assert.deepEqual(progressToStatusEvent(7, { kind: "begin", title: "onnxlens", message: "mlp" }), { kind: "begin", token: "7", title: "onnxlens", message: "mlp" });
  assert.deepEqual(progressToStatusEvent("x", { kind: "report", message: "scan" }), { kind: "report", token: "x", message: "scan" });
  assert.deepEqual(progressToStatusEvent("x", { kind: "end", message: "mlp: 1 problem" }), { kind: "end", token: "x", message: "mlp: 1 problem" });
});

test("the view shows the rendering, opens the last report on click, and hides without a config", () => {
  stub.reset();
  const view = new StatusView("onnxlens.openLastReport");
  const item = stub.statusBarItems[0];
  assert.equal(item.command, "onnxlens.openLastReport");
  view.apply({ kind: "server", phase: "starting" });
  assert.equal(item.text, "$(sync~spin) ONNX: warming up");
  assert.equal(item.visible, true);
  view.apply({ kind: "begin", token: "a", title: "onnxlens", message: "mlp" });
  view.apply({ kind: "end", token: "a", message: "mlp: exported in 0.5 s" });
  assert.equal(view.lastFinishedTarget(), "mlp");
  view.apply({ kind: "server", phase: "idle" });
  assert.equal(item.visible, false);
});

test("a cancelled export (a newer save replaced it) shows what was there before, or the newer export", () => {
  const failed: StatusEvent[] = [
    ...started,
    { kind: "begin", token: "a", title: "onnxlens", message: "spectral" },
    { kind: "end", token: "a", message: "spectral: 2 problems" },
    { kind: "begin", token: "b", title: "onnxlens", message: "spectral" },
    { kind: "report", token: "b", message: "capture" },
  ];
  assert.equal(text([...failed, { kind: "end", token: "b", message: "spectral: cancelled" }]), "$(error) ONNX: 2 problems (spectral)");
  const replaced: StatusEvent[] = [
    ...failed,
    { kind: "begin", token: "c", title: "onnxlens", message: "spectral" },
    { kind: "end", token: "b", message: "spectral: cancelled" },
  ];
  assert.equal(text(replaced), "$(sync~spin) ONNX: spectral");
  assert.equal(text([...replaced, { kind: "end", token: "c", message: "spectral: exported in 0.40 s" }]), "$(check) ONNX: spectral 0.40 s");
  // A first export that is cancelled leaves nothing behind.
  assert.deepEqual(
    run([...started, { kind: "begin", token: "a", title: "onnxlens", message: "mlp" }, { kind: "end", token: "a", message: "mlp: cancelled" }]).targets,
    {},
  );
});
