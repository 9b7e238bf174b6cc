/**
 * The command the extension starts the server with, run for real: the project's interpreter
 * in a workspace whose modules shadow the standard library (json.py, logging.py, typing.py)
 * and the server's dependencies (msgpack.py). Each would leave a marker and stop the process;
 * the server must answer `initialize` and none may run (README, "Security").
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { SERVER_ARGS } from "../src/common/constants";

const REPO = path.resolve(__dirname, "..", "..", "..");
const PROJECT_PYTHON = process.env.ONNXLENS_TEST_PYTHON ?? path.join(REPO, ".venv", "bin", "python");
const SHADOWS = ["json", "logging", "typing", "msgpack"];

/** The first LSP message the process writes on stdout, parsed. */
function firstMessage(stdout: NodeJS.ReadableStream): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    stdout.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const text = buffer.toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      const length = /Content-Length: (\d+)/i.exec(text)?.[1];
      if (end >= 0 && length && buffer.length >= end + 4 + Number(length)) {
        resolve(JSON.parse(buffer.subarray(end + 4, end + 4 + Number(length)).toString("utf8")));
      }
    });
    stdout.on("end", () => reject(new Error("the server closed stdout before answering")));
  });
}

test("the server started as the extension starts it imports no workspace module", async () => {
  const workspace = mkdtempSync(path.join(tmpdir(), "onnxlens-shadowing-"));
  const marker = path.join(workspace, "SHADOW-RAN");
  for (const name of SHADOWS) {
    writeFileSync(path.join(workspace, `${name}.py`), `open(${JSON.stringify(marker)}, "a").write("${name}\\n")\nraise SystemExit("shadowed ${name}")\n`);
  }
  const server = spawn(PROJECT_PYTHON, SERVER_ARGS, { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
  try {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { processId: null, rootUri: null, capabilities: {} } });
    server.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    const reply = await firstMessage(server.stdout);
    assert.equal(reply.id, 1);
    assert.ok(reply.result, JSON.stringify(reply));
    assert.ok(!existsSync(marker), `workspace modules ran in the server: ${existsSync(marker) ? readFileSync(marker, "utf8") : ""}`);
  } finally {
    server.kill();
    rmSync(workspace, { recursive: true, force: true });
  }
});
