/**
 * The interpreter check runs real interpreters: the project's .venv (has onnxlens and torch),
 * a fresh empty venv (has neither) and a path that does not exist.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { judgeProbe, parseProbeOutput, pipInstallArgs, runProbe } from "../src/common/probe";

// out/test/probe.test.js -> the repository root.
const REPO = path.resolve(__dirname, "..", "..", "..");
const PROJECT_PYTHON = process.env.ONNXLENS_TEST_PYTHON ?? path.join(REPO, ".venv", "bin", "python");

let emptyVenv: string;
before(() => {
  emptyVenv = mkdtempSync(path.join(tmpdir(), "onnxlens-empty-venv-"));
  execFileSync("python3", ["-m", "venv", "--without-pip", emptyVenv]);
});
after(() => rmSync(emptyVenv, { recursive: true, force: true }));

test("the project's interpreter has onnxlens and torch", async () => {
  assert.ok(existsSync(PROJECT_PYTHON), `${PROJECT_PYTHON} is missing: run scripts/setup first`);
  const probe = await runProbe(PROJECT_PYTHON);
  assert.equal(probe.runError, undefined);
  assert.equal(probe.onnxlensError, null);
  assert.equal(probe.torch, true);
  assert.match(probe.version, /^3\.\d+/);
  assert.deepEqual(judgeProbe(PROJECT_PYTHON, probe), { ok: true });
});

test("the probe imports nothing from the workspace it runs in", async () => {
  const workspace = mkdtempSync(path.join(tmpdir(), "onnxlens-shadowing-"));
  try {
    const marker = path.join(workspace, "SHADOW-RAN");
    for (const name of ["json", "importlib", "onnxlens"]) {
      writeFileSync(path.join(workspace, `${name}.py`), `open(${JSON.stringify(marker)}, "a").write("${name}\\n")\nraise SystemExit("shadowed")\n`);
    }
    const probe = await runProbe(PROJECT_PYTHON, workspace);
    assert.deepEqual(judgeProbe(PROJECT_PYTHON, probe), { ok: true });
    assert.ok(!existsSync(marker), `workspace modules ran in the probe: ${existsSync(marker) ? readFileSync(marker, "utf8") : ""}`);
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
});

test("an interpreter without onnxlens and torch is reported with the install action", async () => {
  const python = path.join(emptyVenv, "bin", "python");
  const probe = await runProbe(python);
  assert.match(probe.onnxlensError ?? "", /No module named 'onnxlens'/);
  assert.equal(probe.torch, false);
  const verdict = judgeProbe(python, probe);
  assert.equal(verdict.ok, false);
  assert.ok(!verdict.ok && verdict.canInstall);
  assert.ok(!verdict.ok && verdict.message.includes("needs onnxlens and torch"), !verdict.ok ? verdict.message : "");
  assert.ok(!verdict.ok && verdict.message.includes(emptyVenv), "names the interpreter");
});

test("an interpreter that does not exist is reported as such, without an install action", async () => {
  const python = path.join(emptyVenv, "no-such-python");
  const verdict = judgeProbe(python, await runProbe(python));
  assert.ok(!verdict.ok);
  assert.ok(!verdict.ok && !verdict.canInstall);
  assert.ok(!verdict.ok && verdict.message.includes(`${python}: not found`), !verdict.ok ? verdict.message : "");
});

test("a broken onnxlens install is named with its import error", () => {
  const probe = parseProbeOutput(
    JSON.stringify({ python: "/p", version: "3.12.1", onnxlens: "ImportError: cannot import name 'x' from 'pygls'", torch: true }),
  );
  const verdict = judgeProbe("/p", probe);
  assert.ok(!verdict.ok && verdict.message.includes("onnxlens (ImportError: cannot import name 'x' from 'pygls')"));
  assert.ok(!verdict.ok && !verdict.message.includes("torch"), "torch is there");
});

test("output that is not the probe's JSON is an error, not a crash", () => {
  const probe = parseProbeOutput("Python 2.7 says hi\n");
  assert.match(probe.runError ?? "", /unexpected output: Python 2.7 says hi/);
  assert.equal(judgeProbe("/p", probe).ok, false);
});

test("the install action runs pip of the same interpreter", () => {
  assert.deepEqual(pipInstallArgs(), ["-m", "pip", "install", "onnxlens"]);
});
