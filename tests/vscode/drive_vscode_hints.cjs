// Drives one code-server window in headless Chromium (playwright-core) through the inlay hints and
// the change lenses, and records what a person would see; tests/vscode/test_vscode_hints.py asserts.
//
//   node drive_vscode_hints.cjs CONFIG.json RESULT.json
//
// Steps: open the model file and wait until the editor shows the hint `config.hintText` (the
// export has ended and VS Code asked for the hints); then go to `config.edit.line`, add a line
// below it as a person types it, save, and wait for a code lens containing `config.edit.lens`.
// After each step: the text of the editor's lines (inlay hints are rendered into them), the code
// lenses, the status bar, and a screenshot. Every wait is on state, bounded so a hang ends; the
// script never decides pass or fail.
"use strict";
const fs = require("node:fs");

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const resultPath = process.argv[3];
const { chromium } = require(config.playwright);
const { LONG, launchBrowser, stepper, openWindow } = require("./vscode_ui.cjs");
const result = { steps: {}, errors: [] };
const t0 = Date.now();
const log = (message) => process.stderr.write(`[drive-hints ${((Date.now() - t0) / 1000).toFixed(1)}s] ${message}\n`);

async function observe(page) {
  return page.evaluate(() => {
    const editor = document.querySelector(".editor-instance .monaco-editor");
    const lines = [...(editor?.querySelectorAll(".view-lines .view-line") ?? [])]
      // A hint's padding is a hair space: read as a space.
      .map((line) => ({ top: parseFloat(line.style.top), text: line.textContent.replace(/[\u00a0\u200a]/g, " ") }))
      .sort((a, b) => a.top - b.top)
      .map((line) => line.text);
    return {
      lines,
      hints: [...(editor?.querySelectorAll(".view-lines [class*='dyn-rule']") ?? [])]
        .map((span) => span.textContent.replace(/\u00a0/g, " ").trim()).filter(Boolean),
      lenses: [...(editor?.querySelectorAll(".codelens-decoration") ?? [])].map((lens) => lens.textContent.replace(/\u00a0/g, " ").trim()),
      statusItems: [...document.querySelectorAll(".statusbar-item")].map((item) => ({
        id: item.id,
        text: item.textContent.replace(/\u00a0/g, " ").trim(),
      })),
    };
  });
}

/** Waits until some editor line's text (hints included) contains `text`. */
async function waitForLineText(page, text, timeoutMs) {
  await page.waitForFunction(
    (wanted) => [...document.querySelectorAll(".editor-instance .view-lines .view-line")]
      .some((line) => line.textContent.replace(/[\u00a0\u200a]/g, " ").includes(wanted)),
    text,
    { timeout: timeoutMs, polling: 250 },
  );
}

async function main() {
  const browser = await launchBrowser(chromium, config.chromium);
  const step = stepper({ result, observe, artifacts: config.artifacts, prefix: "hints-", log });
  try {
    const page = await openWindow(browser, config.url, config.file);

    await step("hints", page, async () => {
      const started = Date.now();
      await waitForLineText(page, config.hintText, config.exportTimeoutMs);
      return { secondsUntilShown: (Date.now() - started) / 1000 };
    });

    await step("change", page, async () => {
      await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+g");
      await page.waitForSelector(".quick-input-widget input", { state: "visible" });
      await page.keyboard.type(`${config.edit.line}`);
      await page.keyboard.press("Enter");
      await page.waitForSelector(".quick-input-widget", { state: "hidden" });
      await page.keyboard.press("End");
      await page.keyboard.press("Enter"); // the editor indents the new line as the one above
      await page.keyboard.type(config.edit.text);
      // Before the save: the lines below the new one keep their hints, moved down with them.
      await waitForLineText(page, config.edit.movedHint, LONG);
      const unsaved = await observe(page);
      await page.keyboard.press("Control+s");
      await page.waitForFunction(
        (wanted) => [...document.querySelectorAll(".editor-instance .codelens-decoration")]
          .some((lens) => lens.textContent.replace(/\u00a0/g, " ").includes(wanted)),
        config.edit.lens,
        { timeout: config.exportTimeoutMs, polling: 250 },
      );
      return { unsaved };
    });
  } finally {
    await browser.close();
    fs.writeFileSync(resultPath, JSON.stringify(result, null, 2));
  }
}

main().catch((error) => {
  result.errors.push({ step: "driver", error: String(error) });
  fs.writeFileSync(resultPath, JSON.stringify(result, null, 2));
  process.exit(1);
});
