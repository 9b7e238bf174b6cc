import assert from "node:assert/strict";
import { test } from "node:test";
import { formatLine, Logger, parseLogLevel, shouldLog } from "../src/common/logging";
import { stub } from "./vscode-stub";

test("a message is written when its level is at or above the threshold", () => {
  assert.ok(shouldLog("error", "warning"));
  assert.ok(shouldLog("warning", "warning"));
  assert.ok(!shouldLog("info", "warning"));
  assert.ok(shouldLog("debug", "debug"));
  assert.ok(!shouldLog("debug", "info"));
});

test("unknown levels read as info", () => {
  assert.equal(parseLogLevel("verbose"), "info");
  assert.equal(parseLogLevel(undefined), "info");
  assert.equal(parseLogLevel("debug"), "debug");
});

test("the logger writes to the ONNX Lens channel and follows the level setting", () => {
  stub.reset();
  const logger = new Logger("ONNX Lens");
  const channel = stub.outputChannels[0];
  assert.equal(channel.name, "ONNX Lens");
  logger.debug("hidden at info");
  logger.info("shown at info");
  logger.setLevel("error");
  logger.warning("hidden at error");
  logger.error("always shown");
  assert.equal(channel.lines.length, 2);
  assert.match(channel.lines[0], /^\[\d{4}-\d\d-\d\dT[^\]]+\] \[info\] shown at info$/);
  assert.match(channel.lines[1], /\[error\] always shown$/);
  assert.equal(formatLine("debug", "m", new Date(0)), "[1970-01-01T00:00:00.000Z] [debug] m");
});
