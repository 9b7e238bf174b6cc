// Drives one code-server window in headless Chromium (playwright-core) through "one-click
// targets" and records what a person would see; tests/vscode/test_vscode_targets.py asserts.
//
//   node drive_vscode_targets.cjs CONFIG.json RESULT.json
//
// The workspace has PyTorch code and no onnxlens config. Steps: the server's offer ("This
// workspace has N PyTorch models ...") as a notification, answered with `offer.answer`; after
// "Not now", the cursor put on the model's `class` line, Ctrl+. and the action "Add <Name> as an
// ONNX export target" clicked; then the wait for the status entry of the export and the .onnx file.
// The helpers are vscode_ui.cjs'. Every wait is on state, bounded so a hang ends; the script never
// decides pass or fail.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const resultPath = process.argv[3];
const { chromium } = require(config.playwright);
const {
  LONG, launchBrowser, stepper, openWindow, bell, notificationCenter, clickAt, waitForStatusItem, findNotification,
} = require("./vscode_ui.cjs");
const result = { steps: {}, errors: [] };
const t0 = Date.now();
const log = (message) => process.stderr.write(`[drive-targets ${((Date.now() - t0) / 1000).toFixed(1)}s] ${message}\n`);


async function observe(page) {
  return page.evaluate(() => ({
    statusItems: [...document.querySelectorAll(".statusbar-item")].map((item) => ({
      id: item.id,
      text: item.textContent.replace(/\u00a0/g, " ").trim(),
    })),
    notifications: [...document.querySelectorAll(".notification-toast, .notifications-center .notification-list-item")].map((toast) => ({
      message: toast.querySelector(".notification-list-item-message")?.textContent ?? "",
      buttons: [...toast.querySelectorAll(".monaco-button")].map((button) => button.textContent.trim()),
    })),
    tabs: [...document.querySelectorAll(".tabs-container .tab")].map((tab) => tab.getAttribute("aria-label") ?? tab.textContent),
  }));
}





/** Ctrl+G to `line`, then Ctrl+.; the rows of the action widget (closed again unless `keep`). */
async function actionsOnLine(page, line) {
  await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+g");
  await page.waitForSelector(".quick-input-widget input", { state: "visible" });
  await page.keyboard.type(`${line}:1`);
  await page.keyboard.press("Enter");
  await page.waitForSelector(".quick-input-widget", { state: "hidden" });
  await page.keyboard.press("Control+.");
  // Either the list of actions or VS Code's "No code actions available" hint.
  await page.waitForFunction(
    () => document.querySelector(".action-widget .monaco-list-row") || /No code actions/.test(document.body.innerText),
    null,
    { timeout: LONG, polling: 100 },
  );
  return page.$$eval(".action-widget .monaco-list-row", (rows) => rows.map((row) => row.textContent.trim()));
}

async function main() {
  const browser = await launchBrowser(chromium, config.chromium);
  const step = stepper({ result, observe, artifacts: config.artifacts, prefix: "targets-", log });
  try {
    const page = await openWindow(browser, config.url, config.file);

    // The server, started for a workspace without a config because its Python imports torch,
    // asks whether to add targets: "Add targets" adds them; "Not now" leaves the workspace as it
    // is (the code action below adds the target instead).
    await step("offer", page, async () => {
      const offer = await findNotification(page, config.offer.message, LONG);
      const buttons = await offer.item.locator(".monaco-button").allTextContents();
      const answer = offer.item.locator(".monaco-button", { hasText: config.offer.answer }).first();
      if (!(await answer.isVisible())) {
        await offer.item.locator(".codicon-notifications-expand").first().click();
      }
      await clickAt(page, answer);
      if (await notificationCenter(page).isVisible().catch(() => false)) {
        await bell(page).click();
      }
      return { seenIn: offer.seenIn, buttons: buttons.map((b) => b.trim()) };
    });

    if (config.title) await step("codeAction", page, async () => {
      await page.locator(".tabs-container .tab", { hasText: path.basename(config.file) }).first().click();
      const actions = await actionsOnLine(page, config.classLine);
      const row = page.locator(".action-widget .monaco-list-row", { hasText: config.title }).first();
      if (!(await row.isVisible().catch(() => false))) {
        throw new Error(`no "${config.title}" among the code actions: ${JSON.stringify(actions)}`);
      }
      await clickAt(page, row);
      return { actions };
    });

    await step("export", page, async () => {
      const started = Date.now();
      await waitForStatusItem(page, "onnxlens", config.statusOk, config.exportTimeoutMs);
      const deadline = Date.now() + LONG;
      while (!fs.existsSync(config.onnxFile) && Date.now() < deadline) {
        await page.waitForTimeout(250);
      }
      return { secondsUntilExported: (Date.now() - started) / 1000, onnxFile: fs.existsSync(config.onnxFile) };
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
