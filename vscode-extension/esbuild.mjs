// Builds the extension into one file (dist/extension.js), or, with --tests, each unit test into
// out/test/ with the `vscode` module replaced by the stand-in in test/vscode-stub.ts (the real
// module only exists inside VS Code).
import * as esbuild from "esbuild";
import { readdirSync } from "node:fs";

const production = process.argv.includes("--production");
const tests = process.argv.includes("--tests");

const common = {
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  logLevel: "warning",
};

if (tests) {
  const entryPoints = readdirSync("test")
    .filter((name) => name.endsWith(".test.ts"))
    .map((name) => `test/${name}`);
  await esbuild.build({
    ...common,
    entryPoints,
    outdir: "out/test",
    sourcemap: "inline",
    alias: { vscode: "./test/vscode-stub.ts" },
  });
} else {
  await esbuild.build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    external: ["vscode"],
    minify: production,
    sourcemap: !production,
  });
}
