import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { beforeEach, test } from "node:test";
import { DEFAULTS, getSettings, needsRestart, readSettings, toServerSettings } from "../src/common/settings";
import manifest from "../package.json";
import { stub } from "./vscode-stub";

beforeEach(() => stub.reset());

test("every setting has its default when nothing is configured", () => {
  assert.deepEqual(readSettings({ get: () => undefined }), DEFAULTS);
});

test("configured values are read from the onnxlens section", () => {
  stub.configuration = {
    "onnxlens.interpreter": "  /opt/py/bin/python  ",
    "onnxlens.exportOnSave": false,
    "onnxlens.verify": false,
    "onnxlens.jobs": 3,
    "onnxlens.debounceMs": 50,
    "onnxlens.inlayHints": false,
    "onnxlens.profile": true,
    "onnxlens.costLensThreshold": 2.5,
    "onnxlens.logLevel": "debug",
  };
  assert.deepEqual(getSettings(), {
    interpreter: "/opt/py/bin/python",
    exportOnSave: false,
    verify: false,
    jobs: 3,
    debounceMs: 50,
    inlayHints: false,
    profile: true,
    costLensThreshold: 2.5,
    logLevel: "debug",
  });
});

test("mistyped or out-of-range values fall back or are clamped, never passed on", () => {
  const values: Record<string, unknown> = { jobs: 0, debounceMs: -5, verify: "yes", logLevel: "loud", interpreter: 42,
    profile: 1, costLensThreshold: 250 };
  const settings = readSettings({ get: <T>(key: string) => values[key] as T });
  assert.equal(settings.jobs, 1);
  assert.equal(settings.debounceMs, 0);
  assert.equal(settings.verify, null);
  assert.equal(settings.logLevel, "info");
  assert.equal(settings.interpreter, "");
  assert.equal(settings.profile, null);
  assert.equal(settings.costLensThreshold, 100);
  assert.equal(readSettings({ get: <T>(key: string) => (key === "jobs" ? 2.7 : undefined) as T }).jobs, 2);
  assert.equal(readSettings({ get: <T>(key: string) => (key === "jobs" ? 1000 : undefined) as T }).jobs, 64);
  assert.equal(readSettings({ get: <T>(key: string) => (key === "debounceMs" ? 1e9 : undefined) as T }).debounceMs, 10_000);
});

test("the server gets every setting but the interpreter, under the names it expects", () => {
  const server = toServerSettings({ ...DEFAULTS, interpreter: "/x/python", jobs: 4, verify: false });
  assert.deepEqual(server, { exportOnSave: true, verify: false, jobs: 4, debounceMs: 200, inlayHints: true, profile: null,
    costLensThreshold: 5, logLevel: "info" });
  // Unset, verify is null: the server then follows the project's config.
  assert.equal(toServerSettings(DEFAULTS).verify, null);
  assert.ok(!("interpreter" in server));
});

test("package.json contributes every setting the extension reads, with a description", () => {
  const properties: Record<string, { default?: unknown; description?: string; markdownDescription?: string }> =
    manifest.contributes.configuration.properties;
  const read = Object.keys(DEFAULTS).map((key) => `onnxlens.${key}`);
  for (const key of [...read, "onnxlens.trace.server"]) {
    assert.ok(properties[key], `${key} is not contributed`);
    assert.ok(properties[key].description || properties[key].markdownDescription, `${key} has no description`);
  }
  for (const key of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
    assert.deepEqual(properties[`onnxlens.${key}`].default, DEFAULTS[key], `default of onnxlens.${key}`);
  }
});

// The other side of the contract: the server's own settings parser, in the project's Python.
const PROJECT_PYTHON = process.env.ONNXLENS_TEST_PYTHON ?? path.resolve(__dirname, "..", "..", "..", ".venv", "bin", "python");
const PARSE = `
import json, sys
from onnxlens.server.lsp.settings import parse_settings
settings, problems = parse_settings(json.loads(sys.argv[1]))
print(json.dumps({"problems": problems, "verify": settings.verify, "jobs": settings.jobs, "debounce_ms": settings.debounce_ms,
                  "inlay_hints": settings.inlay_hints}))
`;

test("the server accepts what the extension sends, without a single complaint", () => {
  const check = (sent: unknown) => JSON.parse(execFileSync(PROJECT_PYTHON, ["-c", PARSE, JSON.stringify(sent)], { encoding: "utf8" }));
  const defaults = check(toServerSettings(DEFAULTS)); // initializationOptions
  assert.deepEqual(defaults, { problems: [], verify: null, jobs: 1, debounce_ms: 200, inlay_hints: true });
  const changed = check({ onnxlens: toServerSettings({ ...DEFAULTS, verify: false, jobs: 3, debounceMs: 0, inlayHints: false, logLevel: "debug" }) }); // didChangeConfiguration
  assert.deepEqual(changed, { problems: [], verify: false, jobs: 3, debounce_ms: 0, inlay_hints: false });
});

test("only an interpreter change restarts the server; the rest is pushed to the running one", () => {
  const change = (...keys: string[]) => ({ affectsConfiguration: (section: string) => keys.some((k) => k === section || k.startsWith(`${section}.`)) });
  assert.equal(needsRestart(change("onnxlens.interpreter") as never), true);
  assert.equal(needsRestart(change("onnxlens.verify") as never), false);
  assert.equal(needsRestart(change("onnxlens.jobs", "editor.fontSize") as never), false);
});
