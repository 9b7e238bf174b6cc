import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { importsTorch, isOnnxlensConfig } from "../src/common/workspace";

const EXAMPLES = path.resolve(__dirname, "..", "..", "..", "examples");

test("the example workspace's pyproject.toml configures onnxlens", () => {
  const file = path.join(EXAMPLES, "pyproject.toml");
  assert.ok(isOnnxlensConfig(file, readFileSync(file, "utf8")));
});

test("a pyproject.toml configures onnxlens only with a [tool.onnxlens] table", () => {
  assert.ok(isOnnxlensConfig("/ws/pyproject.toml", '[project]\nname = "x"\n\n[[tool.onnxlens.target]]\nmodel = "m.py:M"\n'));
  assert.ok(isOnnxlensConfig("/ws/pyproject.toml", "[ tool.onnxlens ]\nverify = false\n"));
  assert.ok(!isOnnxlensConfig("/ws/pyproject.toml", '[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n'));
  assert.ok(!isOnnxlensConfig("/ws/pyproject.toml", '# [tool.onnxlens] would go here\n[tool.onnxlensish]\n'));
  assert.ok(!isOnnxlensConfig("/ws/setup.cfg", "[tool.onnxlens]\n"));
});

test("an onnxlens.toml always configures onnxlens", () => {
  assert.ok(isOnnxlensConfig("C:\\ws\\onnxlens.toml", ""));
});

test("PyTorch code is told by its imports of torch", () => {
  assert.ok(importsTorch("import torch\n"));
  assert.ok(importsTorch('"""Models."""\nfrom torch import nn\n'));
  assert.ok(importsTorch("import os\n    import torch.nn as nn\n"));
  assert.ok(!importsTorch("import torchvision_stub\n"));
  assert.ok(!importsTorch("# uses torch\nimport numpy\n"));
  assert.ok(!importsTorch('text = "from torchaudio"\n'));
});
