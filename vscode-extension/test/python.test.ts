import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { chooseInterpreter, expandPath, findInterpreter } from "../src/common/python";
import { stub, Uri } from "./vscode-stub";

beforeEach(() => stub.reset());

test("the setting wins over the Python extension and PATH", () => {
  assert.deepEqual(chooseInterpreter({ setting: "/opt/venv/bin/python", pythonExtension: "/other/python" }), {
    command: "/opt/venv/bin/python",
    source: "setting",
  });
});

test("without the setting, the Python extension's interpreter is used", () => {
  assert.deepEqual(chooseInterpreter({ setting: "", pythonExtension: "/ws/.venv/bin/python" }), {
    command: "/ws/.venv/bin/python",
    source: "python-extension",
  });
});

test("without either, python3 on PATH (python on Windows)", () => {
  assert.deepEqual(chooseInterpreter({ setting: "", platform: "linux" }), { command: "python3", source: "path" });
  assert.deepEqual(chooseInterpreter({ setting: "", platform: "win32" }), { command: "python", source: "path" });
});

test("the setting's variables, ~ and relative paths are expanded", () => {
  assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", "/ws", "/home/u"), "/ws/.venv/bin/python");
  assert.equal(expandPath("~/envs/t/bin/python", "/ws", "/home/u"), "/home/u/envs/t/bin/python");
  assert.equal(expandPath("${userHome}/py", "/ws", "/home/u"), "/home/u/py");
  assert.equal(expandPath(".venv/bin/python", "/ws", "/home/u"), "/ws/.venv/bin/python");
  assert.equal(expandPath("python3.12", "/ws", "/home/u"), "python3.12"); // a command on PATH stays one
});

function fakePythonExtension(active: string, executable: string | undefined) {
  const calls: string[] = [];
  const api = {
    environments: {
      getActiveEnvironmentPath(resource?: Uri) {
        calls.push(`active ${resource?.fsPath}`);
        return { path: active };
      },
      async resolveEnvironment(env: { path: string }) {
        calls.push(`resolve ${env.path}`);
        return executable ? { executable: { uri: Uri.file(executable) } } : undefined;
      },
      onDidChangeActiveEnvironmentPath: () => ({ dispose() {} }),
    },
  };
  stub.extensions["ms-python.python"] = {
    isActive: false,
    exports: undefined,
    async activate() {
      calls.push("activate");
      return api;
    },
  };
  return calls;
}

const folder = { uri: Uri.file("/ws"), name: "ws", index: 0 };

test("the Python extension's API is asked for the folder's resolved interpreter", async () => {
  const calls = fakePythonExtension("/ws/.venv", "/ws/.venv/bin/python");
  assert.deepEqual(await findInterpreter("", folder as never), { command: "/ws/.venv/bin/python", source: "python-extension" });
  assert.deepEqual(calls, ["activate", "active /ws", "resolve /ws/.venv"]);
});

test("an environment the Python extension cannot resolve falls back to its path", async () => {
  fakePythonExtension("/usr/bin/python3.11", undefined);
  assert.deepEqual(await findInterpreter("", folder as never), { command: "/usr/bin/python3.11", source: "python-extension" });
});

test("with the setting, the Python extension is not even activated", async () => {
  const calls = fakePythonExtension("/ws/.venv", "/ws/.venv/bin/python");
  assert.deepEqual(await findInterpreter("${workspaceFolder}/env/bin/python", folder as never), {
    command: "/ws/env/bin/python",
    source: "setting",
  });
  assert.deepEqual(calls, []);
});

test("without the Python extension installed, python3 on PATH", async () => {
  assert.deepEqual(await findInterpreter("", folder as never), { command: process.platform === "win32" ? "python" : "python3", source: "path" });
});
