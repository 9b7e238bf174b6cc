/**
 * The README (what users read in the Extensions view) says what package.json contributes, and
 * package.json what the code does: every setting with its default, every command with its
 * title, every activation event, the VS Code version and where the extension does not run. Each
 * check goes both ways: nothing contributed is left out of the README, nothing the README lists
 * is missing from package.json.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import manifest from "../package.json";
import { DEFAULTS } from "../src/common/settings";

const README = readFileSync(path.resolve(__dirname, "..", "..", "README.md"), "utf8");

/** The text of the README's `## title` section, up to the next `## ` heading. */
function section(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `the README has no "## ${title}" section`);
  const end = README.indexOf("\n## ", start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The rows of the first markdown table in `text`, each as its cells (header and rule left out). */
function tableRows(text: string): string[][] {
  const rows = text.split("\n").filter((line) => line.startsWith("|"));
  return rows.slice(2).map((line) => line.split("|").slice(1, -1).map((cell) => cell.trim()));
}

/** `` `x` `` -> x; the first code span of a cell. */
function code(cell: string): string | undefined {
  return /`([^`]*)`/.exec(cell)?.[1];
}

type Property = { default?: unknown; markdownDescription?: string; description?: string };
const properties = manifest.contributes.configuration.properties as Record<string, Property>;

test("every setting package.json contributes is in the README's table with its default, and only those", () => {
  const documented = new Map(tableRows(section("Settings")).map((cells) => [code(cells[0]) ?? cells[0], cells[1]]));
  assert.deepEqual([...documented.keys()].sort(), Object.keys(properties).sort());
  for (const [name, property] of Object.entries(properties)) {
    const shown = code(documented.get(name) ?? "");
    const expected = typeof property.default === "string" && property.default !== "" ? property.default : JSON.stringify(property.default);
    assert.equal(shown, expected, `${name}: the README says \`${shown}\`, package.json's default is ${JSON.stringify(property.default)}`);
  }
});

test("the defaults package.json declares are the ones the extension uses", () => {
  for (const [key, value] of Object.entries(DEFAULTS)) {
    assert.deepEqual(properties[`onnxlens.${key}`]?.default, value, `onnxlens.${key}`);
  }
});

test("every command package.json contributes is in the README's table under its palette title, and only those", () => {
  const documented = new Map(tableRows(section("Commands")).map((cells) => {
    const [title, id] = [...cells[0].matchAll(/`([^`]*)`/g)].map((match) => match[1]);
    return [id, title] as const;
  }));
  const contributed = manifest.contributes.commands;
  assert.deepEqual([...documented.keys()].sort(), contributed.map((command) => command.command).sort());
  for (const command of contributed) {
    assert.equal(documented.get(command.command), `${command.category}: ${command.title}`, command.command);
  }
});

test("the README's activation section names every activation event, and only those", () => {
  const named = [...section("Activation").matchAll(/`((?:onLanguage|workspaceContains|onCommand|onStartupFinished)[^`]*)`/g)]
    .map((match) => match[1]);
  assert.deepEqual([...new Set(named)].sort(), [...manifest.activationEvents].sort());
});

test("the README's requirements say which VS Code, where the extension does not run and what Restricted Mode ignores", () => {
  const requirements = section("Requirements");
  const version = /^\^(\d+\.\d+)\.\d+$/.exec(manifest.engines.vscode)?.[1];
  assert.ok(version, manifest.engines.vscode);
  assert.match(requirements, new RegExp(`VS Code\\s+${version.replace(".", "\\.")}\\s+or\\s+newer`));
  if (manifest.capabilities.virtualWorkspaces.supported === false) {
    assert.match(requirements, /not\s+in\s+virtual\s+workspaces/);
  }
  for (const setting of manifest.capabilities.untrustedWorkspaces.restrictedConfigurations) {
    assert.match(requirements, new RegExp(`Restricted Mode[^]*\`${setting.replace(".", "\\.")}\``));
  }
});
