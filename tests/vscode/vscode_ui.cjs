// What the VS Code drivers (drive_vscode.cjs, drive_vscode_targets.cjs, drive_vscode_hints.cjs)
// do with the browser and the page: start Chromium, run a step and record it, open a file, click,
// wait for a status bar entry, find a notification as a toast or in the notification center.
// Waits are on state, with generous bounds that are not the assertions.
"use strict";

const path = require("path");

const LONG = 120_000;

/** Headless Chromium as the drivers run it (`config.chromium`: Debian's). */
async function launchBrowser(chromium, executablePath) {
  return chromium.launch({
    executablePath,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
}

/**
 * A driver's step runner: `step(name, page, body)` runs `body` and records what it returned in
 * `result.steps[name]` (`{failed: true}` and the error's first line in `result.errors` if it threw),
 * then what `observe(page)` sees and a screenshot `<prefix><name>.png` in `artifacts`.
 */
function stepper({ result, observe, artifacts, prefix, log }) {
  return async function step(name, page, body) {
    try {
      result.steps[name] = (await body()) ?? {};
      log(`${name}: done`);
    } catch (error) {
      result.errors.push({ step: name, error: String(error && error.message ? error.message.split("\n")[0] : error) });
      log(`${name}: FAILED ${error}`);
      result.steps[name] = { failed: true };
    }
    try {
      result.steps[name].observed = await observe(page);
      await page.screenshot({ path: path.join(artifacts, `${prefix}${name}.png`) });
    } catch (error) {
      result.errors.push({ step: `${name} (observe)`, error: String(error) });
    }
  };
}
const bell = (page) => page.locator('.statusbar-item[id="status.notifications"]').first();
const notificationCenter = (page) => page.locator(".notifications-center.visible");

/**
 * Clicks the middle of an element with the mouse, as a person does. (Playwright's own click
 * waits for the element to be "stable", which the action widget's rows never are.)
 */
async function clickAt(page, locator) {
  await locator.waitFor({ state: "visible", timeout: LONG });
  const box = await locator.boundingBox();
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
}

/** A window on `url` (code-server with a folder), its Explorer shown, `file` opened in the editor. */
async function openWindow(browser, url, file) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
  await page.goto(url, { timeout: LONG });
  await page.waitForSelector(".explorer-folders-view .monaco-list-row", { timeout: LONG });
  await openFile(page, file);
  return page;
}

/** Opens a workspace file with Quick Open (Ctrl+P), as a person would. */
async function openFile(page, relativePath) {
  await page.keyboard.press("Control+p");
  await page.waitForSelector(".quick-input-widget input", { state: "visible" });
  await page.keyboard.type(relativePath);
  const name = path.basename(relativePath);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().click();
  await page.locator(".tabs-container .tab", { hasText: name }).first().waitFor({ timeout: LONG });
  await page.waitForSelector(".editor-instance .view-lines .view-line", { timeout: LONG });
}

/** Waits until the status bar item whose id contains `idPart` has text matching `pattern`. */
async function waitForStatusItem(page, idPart, pattern, timeoutMs) {
  await page.waitForFunction(
    ([part, source]) =>
      [...document.querySelectorAll(".statusbar-item")].some(
        (item) => item.id.includes(part) && new RegExp(source).test(item.textContent.replace(/\u00a0/g, " ").trim()),
      ),
    [idPart, pattern],
    { timeout: timeoutMs, polling: 250 },
  );
}

async function closeNotificationCenter(page) {
  if (await notificationCenter(page).isVisible().catch(() => false)) {
    await bell(page).click();
  }
}

/**
 * A notification containing `text`, on screen: its toast, or — a toast that timed out and was
 * hidden, as VS Code does with notifications that are not sticky (a warning with buttons too), on a
 * loaded machine before anyone looked — its entry in the notification center, which keeps every
 * notification until it is cleared (then the center is left open: closeNotificationCenter).
 * Returns where it was and its locator (its buttons work in either place). A wait on that state,
 * not on a toast being on screen at the right moment.
 */
async function findNotification(page, text, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  const toast = page.locator(".notification-toast", { hasText: text }).first();
  const entry = page.locator(".notifications-center .notification-list-item", { hasText: text }).first();
  let lastCenterLook = 0;
  while (Date.now() < deadline) {
    if (await toast.isVisible().catch(() => false)) {
      return { seenIn: "toast", item: toast };
    }
    if (Date.now() - lastCenterLook > 5_000 && (await bell(page).isVisible().catch(() => false))) {
      lastCenterLook = Date.now();
      if (!(await notificationCenter(page).isVisible().catch(() => false))) {
        await bell(page).click();
      }
      if (await entry.waitFor({ state: "visible", timeout: 1_500 }).then(() => true, () => false)) {
        return { seenIn: "notification center", item: entry };
      }
      await closeNotificationCenter(page);
    }
    await page.waitForTimeout(250);
  }
  throw new Error(`no notification containing ${JSON.stringify(text)} within ${timeoutMs} ms`);
}

module.exports = {
  LONG, launchBrowser, stepper, openWindow, bell, notificationCenter, clickAt, openFile, waitForStatusItem,
  closeNotificationCenter, findNotification,
};
