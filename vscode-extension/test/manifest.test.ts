/** package.json promises what the code delivers (and vsce packages it without questions). */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import manifest from "../package.json";
import { Commands } from "../src/common/constants";

const ROOT = path.resolve(__dirname, "..", "..");

test("every command the extension registers is contributed with an ONNX Lens title", () => {
  const contributed = new Map(manifest.contributes.commands.map((c) => [c.command, c]));
  for (const id of Object.values(Commands)) {
    assert.ok(contributed.has(id), `${id} is not in package.json`);
    assert.equal(contributed.get(id)?.category, "ONNX Lens");
  }
  assert.equal(contributed.size, Object.values(Commands).length, "package.json contributes a command nobody registers");
});

test("in untrusted workspaces the extension runs nothing, says why, and ignores the workspace's interpreter", () => {
  const trust = manifest.capabilities.untrustedWorkspaces;
  assert.equal(trust.supported, "limited");
  assert.match(trust.description, /runs the workspace's Python code/);
  // A workspace's settings.json could name a script as the interpreter: VS Code ignores the
  // workspace's value of a restricted setting until the workspace is trusted.
  assert.deepEqual(trust.restrictedConfigurations, ["onnxlens.interpreter"]);
});

test("it targets VS Code 1.100 and has what vsce needs to package without questions", () => {
  assert.equal(manifest.engines.vscode, "^1.100.0");
  assert.ok(manifest.repository.url);
  for (const file of ["LICENSE", "README.md", "CHANGELOG.md", manifest.icon]) {
    assert.ok(existsSync(path.join(ROOT, file)), `${file} is missing`);
  }
});
