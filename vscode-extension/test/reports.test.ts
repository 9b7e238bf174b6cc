import assert from "node:assert/strict";
import { test } from "node:test";
import { isReport, pickReport, Reports } from "../src/common/reports";
import { stub, Uri } from "./vscode-stub";

test("markdown files are reports; other documents are left to the client", () => {
  assert.ok(isReport(Uri.parse("file:///ws/.onnxlens/reports/spectral.md")));
  assert.ok(isReport(Uri.parse("file:///ws/notes.MARKDOWN")));
  assert.ok(!isReport(Uri.parse("file:///ws/models/spectral.py")));
  assert.ok(!isReport(Uri.parse("https://pytorch.org/docs/stable/onnx.md")));
});

test("the last report is the target's when known, else the newest", () => {
  const reports = [
    { path: "/ws/.onnxlens/reports/mlp.md", mtime: 30 },
    { path: "/ws/.onnxlens/reports/spectral.md", mtime: 10 },
    { path: "/ws/sub/.onnxlens/reports/spectral.md", mtime: 20 },
  ];
  assert.equal(pickReport(reports, "spectral")?.path, "/ws/sub/.onnxlens/reports/spectral.md");
  assert.equal(pickReport(reports)?.path, "/ws/.onnxlens/reports/mlp.md");
  assert.equal(pickReport(reports, "encoder")?.path, "/ws/.onnxlens/reports/mlp.md");
  assert.equal(pickReport([], "mlp"), undefined);
});

test("a report the server shows opens in the markdown preview beside the code", async () => {
  stub.reset();
  const reports = new Reports();
  const uri = Uri.parse("file:///ws/.onnxlens/reports/spectral.md");
  assert.equal(await reports.showDocument(uri as never), true);
  assert.deepEqual(stub.executedCommands, [{ command: "markdown.showPreviewToSide", args: [uri] }]);
  assert.equal(await reports.showDocument(Uri.parse("file:///ws/models/spectral.py") as never), false);
  assert.equal(stub.executedCommands.length, 1);
  // "Open Last Report" reopens it without asking the workspace.
  await reports.openLast(undefined);
  assert.deepEqual(stub.executedCommands[1], { command: "markdown.showPreviewToSide", args: [uri] });
});

test("Open Last Report asks the server first when a target has finished", async () => {
  stub.reset();
  const reports = new Reports();
  const asked: string[] = [];
  await reports.openLast("spectral", async (target) => {
    asked.push(target);
    return true; // the server showed it (via window/showDocument)
  });
  assert.deepEqual(asked, ["spectral"]);
  assert.deepEqual(stub.executedCommands, []);
});
