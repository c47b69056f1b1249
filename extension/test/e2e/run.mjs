// Drives real VS Code (code-server) in headless Chromium through what a user does: open a CUDA
// file, read the FlipFlop problem, apply its quick fix, open the energy/time chart.
// Usage: node run.mjs --url URL --workspace DIR --file NAME --artifacts DIR --chromium PATH
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import puppeteer from 'puppeteer-core';

const { values: options } = parseArgs({
  options: {
    url: { type: 'string' },
    workspace: { type: 'string' },
    file: { type: 'string' },
    artifacts: { type: 'string' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
    gpu: { type: 'string', default: 'rtx3070' },
    // A second file whose block shapes tie and whose problem size is a guess: its hover is the
    // README's picture.
    ties: { type: 'string', default: 'softmax_rows.cu' },
  },
});
for (const required of ['url', 'workspace', 'file', 'artifacts']) {
  if (!options[required]) {
    console.error(`missing --${required}`);
    process.exit(2);
  }
}
mkdirSync(options.artifacts, { recursive: true });
const sourcePath = path.join(options.workspace, options.file);
const originalText = readFileSync(sourcePath, 'utf8');

// Generous: the first analysis starts Python, compiles with nvcc and sweeps every block shape.
const ANALYSIS_TIMEOUT_MS = 180_000;
const UI_TIMEOUT_MS = 30_000;

const results = [];
function step(name) {
  console.log(`-- ${name}`);
  results.push({ name, ok: false });
  return results[results.length - 1];
}

const browser = await puppeteer.launch({
  executablePath: options.chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1600,1000'],
  defaultViewport: { width: 1600, height: 1000 },
});
const page = await browser.newPage();
page.on('pageerror', (error) => console.log(`page error: ${error.message}`));

async function screenshot(name) {
  const file = path.join(options.artifacts, `${name}.png`);
  await page.screenshot({ path: file });
  console.log(`   screenshot ${file}`);
  return file;
}

async function runCommand(title) {
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget:not([style*="display: none"]) input', { timeout: UI_TIMEOUT_MS });
  await page.keyboard.type(title, { delay: 10 });
  // Wait until the list shows the command so Enter does not pick a stale entry.
  await page.waitForFunction(
    (wanted) => [...document.querySelectorAll('.quick-input-list .monaco-list-row')]
      .some((row) => row.textContent.includes(wanted)),
    { timeout: UI_TIMEOUT_MS },
    title,
  );
  await page.keyboard.press('Enter');
}

async function textOf(selector) {
  return page.$$eval(selector, (nodes) => nodes.map((node) => node.textContent ?? '').join('\n'));
}

async function focusEditor() {
  await page.waitForSelector('.editor-instance .view-lines', { timeout: UI_TIMEOUT_MS });
  await page.click('.editor-instance .view-lines');
}

/** Scrolls the active editor (Ctrl+Down, the cursor stays) until `line` is its first line. */
async function scrollToTop(line) {
  for (let step = 0; step < 100; step++) {
    const first = await page.$$eval('.editor-instance .margin-view-overlays .line-numbers', (nodes) =>
      Math.min(...nodes.map((node) => Number(node.textContent)).filter((n) => n > 0)));
    if (first >= line) {
      return;
    }
    await page.keyboard.down('Control');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.up('Control');
  }
}

async function openFile(name) {
  await page.keyboard.down('Control');
  await page.keyboard.press('KeyP');
  await page.keyboard.up('Control');
  await page.waitForSelector('.quick-input-widget:not([style*="display: none"]) input', { timeout: UI_TIMEOUT_MS });
  await page.keyboard.type(name, { delay: 10 });
  await page.waitForFunction(
    (file) => [...document.querySelectorAll('.quick-input-list .monaco-list-row')]
      .some((row) => row.textContent.includes(file)),
    { timeout: UI_TIMEOUT_MS },
    name,
  );
  await page.keyboard.press('Enter');
  await page.waitForFunction(
    (file) => [...document.querySelectorAll('.tab.active')].some((tab) => tab.textContent.includes(file)),
    { timeout: UI_TIMEOUT_MS },
    name,
  );
}

async function goTo(line, column) {
  await page.keyboard.down('Control');
  await page.keyboard.press('KeyG');
  await page.keyboard.up('Control');
  await page.waitForSelector('.quick-input-widget:not([style*="display: none"]) input', { timeout: UI_TIMEOUT_MS });
  await page.keyboard.type(`${line}:${column}`);
  await page.keyboard.press('Enter');
}

/** The webview frame that holds the chart; webviews load in nested iframes. */
async function findChartFrame() {
  const deadline = Date.now() + ANALYSIS_TIMEOUT_MS;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      const found = await frame.$('svg.flipflop-chart').catch(() => null);
      if (found) {
        return frame;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  throw new Error('no webview shows svg.flipflop-chart');
}

/** The webview frame whose chart is of the kernel `name` (the view may replace its frame). */
async function chartFrameShowing(name, timeoutMs = ANALYSIS_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      const kernel = await frame.$eval('#kernel', (node) => node.textContent ?? '').catch(() => '');
      if (name.test(kernel)) {
        return frame;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  throw new Error(`no chart shows ${name}`);
}

// The launch's block argument: code actions are offered where the diagnostic is.
const launchLineIndex = originalText.split('\n').findIndex((line) => line.includes('integrate_systems<<<'));
const launchLine = launchLineIndex + 1;
const launchColumn = originalText.split('\n')[launchLineIndex].indexOf('1024>>>') + 2;

let failure;
try {
  let current = step('VS Code loads the workspace');
  await page.goto(`${options.url}/?folder=${encodeURIComponent(options.workspace)}`, {
    waitUntil: 'domcontentloaded',
  });
  await page.waitForSelector('.monaco-workbench .part.editor', { timeout: 120_000 });
  await page.waitForSelector('.explorer-folders-view, .explorer-viewlet, .monaco-workbench', { timeout: UI_TIMEOUT_MS });
  current.ok = true;

  current = step(`open ${options.file}`);
  await page.keyboard.down('Control');
  await page.keyboard.press('KeyP');
  await page.keyboard.up('Control');
  await page.waitForSelector('.quick-input-widget:not([style*="display: none"]) input', { timeout: UI_TIMEOUT_MS });
  await page.keyboard.type(options.file, { delay: 10 });
  await page.waitForFunction(
    (file) => [...document.querySelectorAll('.quick-input-list .monaco-list-row')]
      .some((row) => row.textContent.includes(file)),
    { timeout: UI_TIMEOUT_MS },
    options.file,
  );
  await page.keyboard.press('Enter');
  await page.waitForFunction(
    () => document.querySelector('.editor-instance .view-lines')?.textContent.includes('__global__'),
    { timeout: UI_TIMEOUT_MS },
  );
  current.ok = true;

  current = step('the status bar names the target GPU');
  await page.waitForFunction(
    (gpu) => [...document.querySelectorAll('.statusbar-item')].some((item) => item.textContent.includes(gpu)),
    { timeout: 60_000 },
    options.gpu,
  );
  current.ok = true;

  current = step('the Problems panel shows the FlipFlop diagnostic');
  await page.keyboard.down('Control');
  await page.keyboard.down('Shift');
  await page.keyboard.press('KeyM');
  await page.keyboard.up('Shift');
  await page.keyboard.up('Control');
  await page.waitForFunction(
    () => [...document.querySelectorAll('.markers-panel .monaco-list-row')]
      .some((row) => /flipflop/.test(row.textContent) && /FF0\d\d/.test(row.textContent)),
    { timeout: ANALYSIS_TIMEOUT_MS, polling: 1000 },
  );
  const problems = await textOf('.markers-panel .monaco-list-row');
  console.log(`   problems: ${problems.replace(/\s+/g, ' ').slice(0, 400)}`);
  assert.match(problems, /FF001/, 'the suboptimal launch is reported as FF001');
  // Let inlay hints and the code lens settle for the picture.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await screenshot('01-problems');
  current.ok = true;

  current = step('the energy/time chart opens for the kernel under the cursor');
  await goTo(launchLine, launchColumn);
  await runCommand('FlipFlop: Show Energy/Time Chart');
  const chartFrame = await findChartFrame();
  const chart = await chartFrame.evaluate(() => ({
    kernel: document.querySelector('#kernel')?.textContent ?? '',
    points: document.querySelectorAll('svg.flipflop-chart circle.point').length,
    pareto: document.querySelectorAll('svg.flipflop-chart circle.pareto').length,
    current: document.querySelectorAll('svg.flipflop-chart .current').length,
    heuristic: document.querySelectorAll('svg.flipflop-chart .heuristic').length,
    recommended: document.querySelectorAll('svg.flipflop-chart .recommended').length,
    summary: document.querySelector('.summary')?.textContent ?? '',
  }));
  console.log(`   chart: ${JSON.stringify(chart)}`);
  assert.match(chart.kernel, /integrate_systems/);
  assert.ok(chart.pareto >= 1, 'Pareto points are highlighted');
  assert.ok(chart.points + chart.pareto >= 8, 'one point per candidate block shape');
  assert.equal(chart.current, 1, 'the current launch is marked');
  assert.equal(chart.heuristic, 1, "NVIDIA's choice is marked");
  assert.equal(chart.recommended, 1, 'the recommendation is marked');
  assert.match(chart.summary, /against the current 1024/);
  // Room for the picture in the README: hide the side bar, keep editor, problems and chart.
  await page.keyboard.down('Control');
  await page.keyboard.press('KeyB');
  await page.keyboard.up('Control');
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await screenshot('02-chart');
  current.ok = true;

  current = step('the quick fix rewrites the launch');
  await page.click('.editor-instance .view-lines');
  await goTo(launchLine, launchColumn);
  await page.keyboard.down('Control');
  await page.keyboard.press('Period');
  await page.keyboard.up('Control');
  await page.waitForSelector('.action-widget .monaco-list-row', { timeout: UI_TIMEOUT_MS });
  const offered = await textOf('.action-widget .monaco-list-row');
  console.log(`   quick fixes: ${offered.replace(/\s+/g, ' ').slice(0, 300)}`);
  await screenshot('03-quick-fix-menu');
  // Apply the first (preferred) fix from the menu, as a user would: Enter on the focused row.
  await page.keyboard.press('Enter');
  await page.waitForFunction(
    () => !document.querySelector('.editor-instance .view-lines')?.textContent.includes('1024>>>'),
    { timeout: UI_TIMEOUT_MS },
  );
  await page.keyboard.down('Control');
  await page.keyboard.press('KeyS');
  await page.keyboard.up('Control');
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const fixedText = readFileSync(sourcePath, 'utf8');
  const launch = /integrate_systems<<<systems, (\d+)>>>\(position, velocity, stiffness, 32, 1e-3f\);/.exec(fixedText);
  assert.ok(launch, `the fixed launch keeps its form:\n${fixedText}`);
  const block = Number(launch[1]);
  // 32 threads do the work; the fix must drop the idle ones but keep whole warps.
  assert.ok(block >= 32 && block < 1024 && block % 32 === 0, `the fix picks a smaller whole-warp block, not ${block}`);
  assert.equal(
    fixedText,
    originalText.replace('integrate_systems<<<systems, 1024>>>', `integrate_systems<<<systems, ${block}>>>`),
    'only the block argument changes',
  );
  console.log(`   new launch: integrate_systems<<<systems, ${block}>>>`);
  current.ok = true;

  current = step('the saved file is analysed again without the FF001 finding');
  await page.waitForFunction(
    () => ![...document.querySelectorAll('.markers-panel .monaco-list-row')]
      .some((row) => /FF001/.test(row.textContent)),
    { timeout: ANALYSIS_TIMEOUT_MS, polling: 1000 },
  );
  await screenshot('04-fixed');
  current.ok = true;

  current = step('the hover collapses tied block shapes and ranks the guessed inputs');
  const tiesText = readFileSync(path.join(options.workspace, options.ties), 'utf8').split('\n');
  const tiesLine = tiesText.findIndex((line) => line.includes('<<<')) + 1;
  const tiesColumn = tiesText[tiesLine - 1].search(/\S/) + 3;
  await openFile(options.ties);
  // Until the file is analysed the server has no chart for it: ask again until it has.
  let tiesChart;
  const chartDeadline = Date.now() + ANALYSIS_TIMEOUT_MS;
  while (tiesChart === undefined) {
    await focusEditor();
    await goTo(tiesLine, tiesColumn);
    await runCommand('FlipFlop: Show Energy/Time Chart');
    tiesChart = await chartFrameShowing(/softmax_warp_rows/, 5000).catch((error) => {
      if (Date.now() > chartDeadline) {
        throw error;
      }
      return undefined;
    });
  }
  const tieRows = await tiesChart.evaluate(
    () => [...document.querySelectorAll('tr.tie')].map((row) => row.textContent ?? ''),
  );
  console.log(`   chart tie rows: ${tieRows.join(' | ').slice(0, 300)}`);
  assert.ok(tieRows.some((row) => /shapes tie within 1%/.test(row)), 'the chart table collapses the tie');
  // The hover: the launch's table with the tie on one line, then the guessed inputs. For the
  // picture: no panel, no leftover notifications, the launch near the top so the hover opens
  // below it with room.
  await runCommand('Notifications: Clear All Notifications');
  await runCommand('View: Toggle Panel Visibility');
  let hover = '';
  const hoverDeadline = Date.now() + ANALYSIS_TIMEOUT_MS;
  while (Date.now() < hoverDeadline && !/Guessed inputs/.test(hover)) {
    await focusEditor();
    await goTo(tiesLine, tiesColumn);
    await scrollToTop(tiesLine - 2);
    await runCommand('Show or Focus Hover');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    hover = await textOf('.monaco-hover:not(.hidden) .hover-contents');
  }
  console.log(`   hover: ${hover.replace(/\s+/g, ' ').slice(0, 400)}`);
  assert.match(hover, /shapes tie within 1%/, 'the hover table collapses the tied shapes');
  assert.match(hover, /Guessed inputs/, 'the hover ranks the guessed inputs');
  assert.match(hover, /flipflop: rows=/, 'the hover names the annotation that pins the size, by the variable the grid needs');
  await screenshot('05-hover-ties');
  current.ok = true;
} catch (error) {
  failure = error;
  console.log(`FAILED: ${error instanceof Error ? error.message : String(error)}`);
  await screenshot('failure').catch(() => undefined);
} finally {
  await browser.close();
  writeFileSync(path.join(options.artifacts, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
}

const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed;
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failure === undefined ? 0 : 1);
