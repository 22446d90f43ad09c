#!/usr/bin/env node
// Browser test of ember's interactive SVG flame graphs: headless Chromium
// (Debian's /usr/bin/chromium) driven by playwright-core opens SVGs written by
// `test_svg --write` from file:// and uses them as a person would: search
// (Ctrl-F and the Search button, answering the prompt), the matched
// percentage, click-to-zoom, Reset Zoom, hover details, the legend.  A graph
// taller than the window (`ember convert` of a 150-frame-deep folded profile)
// must open with its root in view and keep its buttons in reach.
//
//   node test_svg_browser.js --test-svg PATH/test_svg --ember PATH/ember [--screenshot FILE.png]
//
// Exit status: 0 passed, 1 failed, 77 skipped (no chromium or no
// node_modules: run `npm ci` in tests/browser).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const tall = require('./tall_graph');

const SKIP = 77;
const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const testSvg = opt('--test-svg');
const ember = opt('--ember');
const screenshot = opt('--screenshot');
const chromiumPath = process.env.EMBER_CHROMIUM || '/usr/bin/chromium';

if (!testSvg || !ember) {
  console.error('usage: test_svg_browser.js --test-svg PATH/test_svg --ember PATH/ember [--screenshot FILE.png]');
  process.exit(2);
}
if (!fs.existsSync(chromiumPath)) {
  console.error(`SKIP: ${chromiumPath} not found (apt-get install chromium)`);
  process.exit(SKIP);
}
let chromium;
try {
  ({ chromium } = require(path.join(__dirname, 'node_modules', 'playwright-core')));
} catch (e) {
  console.error(`SKIP: playwright-core not installed: run "npm ci" in ${__dirname}`);
  process.exit(SKIP);
}

let failures = 0, passes = 0;
function check(cond, what, got) {
  if (cond) { passes++; return; }
  failures++;
  console.error(`FAIL: ${what}${got !== undefined ? ` (got ${JSON.stringify(got)})` : ''}`);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ember-svg-browser-'));
function writeSvg(name, flags) {
  const file = path.join(tmp, name);
  execFileSync(testSvg, ['--write', file, ...flags], { stdio: 'inherit' });
  return file;
}

// Frame facts from the page: rect geometry, classes, visibility, label.
async function frame(page, prefix) {
  return page.evaluate((prefix) => {
    for (const g of document.getElementById('frames').children) {
      if (!g.firstElementChild.textContent.startsWith(prefix)) continue;
      const r = g.querySelector('rect'), t = g.querySelector('text');
      return {
        x: +r.getAttribute('x'), width: +r.getAttribute('width'), fill: r.getAttribute('fill'),
        cls: g.getAttribute('class'), visible: getComputedStyle(g).display !== 'none',
        label: t.textContent, title: g.firstElementChild.textContent,
      };
    }
    return null;
  }, prefix);
}

const text = (page, id) => page.evaluate((id) => document.getElementById(id).textContent, id);
// The rect of the first frame whose tooltip starts with prefix, to hover or click.
async function frameRect(page, prefix) {
  const i = await page.evaluate((prefix) => Array.from(document.getElementById('frames').children)
    .findIndex((g) => g.firstElementChild.textContent.startsWith(prefix)), prefix);
  if (i < 0) throw new Error(`no frame ${prefix}`);
  return page.locator(`#frames > g:nth-child(${i + 1}) > rect`);
}

// Answer the next prompt() with term, then trigger it with action.
async function searchVia(page, term, action) {
  const asked = new Promise((resolve) => page.once('dialog', async (d) => {
    resolve(d.type());
    await d.accept(term);
  }));
  await action();
  check(await asked === 'prompt', `search for ${term} opens a prompt`);
}

async function open(context, file) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('request', (r) => { if (!r.url().startsWith('file:')) errors.push(`network request: ${r.url()}`); });
  await page.goto('file://' + file);
  await page.waitForFunction(() => document.getElementById('frames').firstElementChild &&
                                    document.getElementById('frames').firstElementChild.emberIndex === 0);
  return { page, errors };
}

async function testFlame(context) {
  const { page, errors } = await open(context, writeSvg('mixed.svg', []));

  // search: Ctrl-F, then the prompt
  await page.mouse.click(600, 20);
  await searchVia(page, 'GaussianBlur', () => page.keyboard.press('Control+f'));
  check(await text(page, 'matched') === 'Matched: 70.0%', 'GaussianBlur matches 70.0%', await text(page, 'matched'));
  check((await frame(page, 'cv::GaussianBlur')).fill === 'rgb(230,0,230)', 'the match is highlighted');
  check((await frame(page, 'cv::hlineSmooth')).fill !== 'rgb(230,0,230)', 'a non-match is not');
  check(await text(page, 'search') === 'Reset Search', 'the button turns into Reset Search');
  await page.locator('#search').click();
  check(await text(page, 'matched') === ' ', 'Reset Search clears the percentage');
  check((await frame(page, 'cv::GaussianBlur')).fill !== 'rgb(230,0,230)', 'Reset Search restores colours');

  // the Search button; nested matches count once (GaussianBlur > hlineSmooth, + relu)
  await searchVia(page, '^cv::|relu', () => page.locator('#search').click());
  check(await text(page, 'matched') === 'Matched: 80.0%', 'nested matches are not double-counted',
        await text(page, 'matched'));
  await page.locator('#search').click();
  await searchVia(page, 'model|pipeline', () => page.keyboard.press('Control+f'));
  check(await text(page, 'matched') === 'Matched: 85.0%', 'a matched chain counts once', await text(page, 'matched'));
  await searchVia(page, '(', () => page.keyboard.press('F3'));
  check(await text(page, 'matched') === 'Invalid regular expression', 'a bad regex is reported');

  // legend: highlight a kind
  await page.locator('#legend > g[k="1"]').click();
  check(await text(page, 'matched') === 'Python: 90.0%', 'the Python legend entry highlights 90%',
        await text(page, 'matched'));
  await page.keyboard.press('Escape');
  check(await text(page, 'matched') === ' ', 'Escape clears the search');

  // hover: the details line and the <title> tooltip
  await (await frameRect(page, 'relu')).hover();
  check(await text(page, 'details') === 'Python: relu (model.py:5) (100 samples, 10.00%)',
        'hover shows the details line', await text(page, 'details'));
  check((await frame(page, 'relu')).title === 'relu (model.py:5) (100 samples, 10.00%)', 'the tooltip title');

  // zoom into Model.forward: full width, children rescaled, siblings hidden, ancestors greyed
  await (await frameRect(page, 'Model.forward')).click();
  const fwd = await frame(page, 'Model.forward');
  check(fwd.x === 10 && fwd.width === 1180, 'the zoomed frame spans the full width', fwd);
  const ev = await frame(page, '_PyEval_EvalFrameDefault');
  check(ev.width === 1032.5 && ev.visible, 'a child is rescaled (700/800 of 1180)', ev);
  const relu = await frame(page, 'relu');
  check(relu.x === 1042.5 && relu.width === 147.5, 'the second child follows it', relu);
  check(!(await frame(page, 'read ')).visible, 'a sibling is hidden');
  check(!(await frame(page, 'start_thread')).visible, 'another branch is hidden');
  const mainf = await frame(page, 'main (');
  check(mainf.visible && / parent/.test(mainf.cls) && mainf.width === 1180, 'an ancestor is greyed, full width', mainf);
  check(!/hide/.test(await page.locator('#unzoom').getAttribute('class')), 'Reset Zoom shows');
  check((await frame(page, 'dgemm')).visible === false, 'frames of other threads are hidden');

  // search while zoomed still measures against the whole profile
  await searchVia(page, 'hlineSmooth', () => page.keyboard.press('Control+f'));
  check(await text(page, 'matched') === 'Matched: 70.0%', 'search while zoomed', await text(page, 'matched'));
  if (screenshot) await page.screenshot({ path: screenshot });

  // clicking an ancestor zooms out to it; Reset Zoom restores everything
  await (await frameRect(page, 'main (')).click();
  check((await frame(page, 'read ')).visible && Math.abs((await frame(page, 'read ')).width - 1180 * 50 / 850) < 0.06,
        'clicking an ancestor zooms out to it', await frame(page, 'read '));
  await page.locator('#unzoom').click();
  const after = await frame(page, 'Model.forward');
  check(after.x === 10 && after.width === 944 && !/parent|hide/.test(after.cls), 'Reset Zoom restores widths', after);
  check((await frame(page, 'read ')).visible && (await frame(page, 'read ')).width === 59, 'and siblings');
  check((await frame(page, 'relu')).label === 'relu (model.py..', 'and labels', (await frame(page, 'relu')).label);
  check(/hide/.test(await page.locator('#unzoom').getAttribute('class')), 'Reset Zoom hides again');
  check(errors.length === 0, 'no script errors or network requests', errors);
  await page.close();
}

async function testIcicleThreads(context) {
  const { page, errors } = await open(context, writeSvg('mixed-icicle.svg', ['--icicle', '--threads']));
  const root = await page.evaluate(() => +document.querySelector('#frames > g > rect').getAttribute('y'));
  check(root === 84, 'icicle: the root is at the top', root);
  await (await frameRect(page, 'cv::GaussianBlur')).click();
  const blur = await frame(page, 'cv::GaussianBlur');
  check(blur.width === 1180 && (await frame(page, 'cv::hlineSmooth')).width === 1180, 'icicle zoom', blur);
  check(!(await frame(page, 'relu')).visible, 'icicle: a sibling branch is hidden');
  check(/parent/.test((await frame(page, 'python3 (4242)')).cls), 'the thread root is an ancestor');
  await page.keyboard.press('Escape');
  await searchVia(page, '^blas-worker', () => page.keyboard.press('Control+f'));
  check(await text(page, 'matched') === 'Matched: 10.0%', 'a thread root is searchable', await text(page, 'matched'));
  check(errors.length === 0, 'no script errors', errors);
  await page.close();
}

async function testHostile(context) {
  const { page, errors } = await open(context, writeSvg('hostile.svg', ['--hostile', '--threads']));
  check(await page.evaluate(() => document.querySelectorAll('script').length) === 1, 'no injected script');
  await searchVia(page, '<script>', () => page.keyboard.press('Control+f'));
  check(/^Matched: \d+\.\d%$/.test(await text(page, 'matched')), 'searching markup works', await text(page, 'matched'));
  await (await frameRect(page, 'a&b:c')).click();
  check((await frame(page, 'a&b:c')).width === 1180, 'zoom on a hostile name');
  check(errors.length === 0, 'no script errors', errors);
  await page.close();
}

// A 2,550 px graph in a 1280x800 window: it opens on its root; a click on a
// frame 120 deep (brought into view by scrolling) zooms with that frame still
// in view; Reset Zoom and the search result are in the window wherever it is
// scrolled.
async function testTall(context) {
  const folded = path.join(tmp, 'tall.folded'), file = path.join(tmp, 'tall.svg');
  fs.writeFileSync(folded, tall.tallFolded());
  execFileSync(ember, ['convert', '-q', folded, '-o', file], { stdio: 'inherit' });
  const { page, errors } = await tall.openTall(context, file);
  await tall.checkOpensAtRoot(page, check, screenshot && screenshot.replace(/(\.png)?$/, '-tall.png'));

  const deep = await frameRect(page, 'torch/mod117.py');
  await deep.click();
  const fr = await frame(page, 'torch/mod117.py');
  check(fr.x === 10 && fr.width === 1180, 'the deep frame zooms to the full width', fr);
  const box = await tall.boxOf(page, '#frames > g:not(.hide):not(.parent) > rect');
  check(tall.inWindow(box), 'the zoomed frame is in the window', box);
  check(!(await frame(page, 'matmul')).visible, 'a frame outside it is hidden');
  const unzoom = await tall.boxOf(page, '#unzoom');
  check(tall.inWindow(unzoom), 'Reset Zoom is in the window after scrolling up', unzoom);
  await searchVia(page, '^torch/', () => page.keyboard.press('Control+f'));
  check(await text(page, 'matched') === 'Matched: 15.0%', 'search in the tall graph', await text(page, 'matched'));
  check(tall.inWindow(await tall.boxOf(page, '#matched')), 'the matched share is in the window',
        await tall.boxOf(page, '#matched'));
  await page.mouse.click((unzoom.left + unzoom.right) / 2, (unzoom.top + unzoom.bottom) / 2);
  check((await frame(page, 'matmul')).visible && (await frame(page, 'torch/mod117.py')).width < 200,
        'Reset Zoom, clicked where it shows, restores the graph');
  check(errors.length === 0, 'no script errors', errors);
  await page.close();
  await testTallEmbedded(context, file);
}

// The tall graph inside an HTML page: an <iframe> smaller than it scrolls to
// its root; an <object> (which scales it to fit) shows the root with no row
// pinned; drawn inline, the page is not scrolled nor anything pinned.
async function testTallEmbedded(context, file) {
  const svg = fs.readFileSync(file, 'utf8');
  const html = path.join(tmp, 'embed.html');
  fs.writeFileSync(html, '<!DOCTYPE html><html><body><p>intro</p>' +
    '<iframe src="tall.svg" width="1240" height="600"></iframe><object data="tall.svg" type="image/svg+xml" ' +
    'width="1220" height="600"></object>' + svg.slice(svg.indexOf('<svg')) + '</body></html>');
  const page = await context.newPage();
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('file://' + html);
  const inner = page.frames().filter((f) => f.url().endsWith('/tall.svg'));
  check(inner.length === 2, 'the iframe and the object load the graph', inner.length);
  const facts = [];
  for (const f of inner) {
    await f.waitForFunction(() => document.getElementById('frames').firstElementChild.emberIndex === 0);
    facts.push(await f.evaluate(() => {
      const r = document.querySelector('#frames > g > rect').getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, winH: window.innerHeight, scrollY: window.scrollY,
               footer: document.getElementById('footer') ? document.getElementById('footer').getAttribute('transform')
                                                        : 'no footer' };
    }));
  }
  check(facts.every((b) => tall.inWindow(b)), 'the root is in view in the iframe and the object', facts);
  check(facts.some((b) => b.scrollY > 0) && facts.some((b) => b.scrollY === 0 && b.footer === null),
        'the iframe scrolls, the scaled object pins nothing', facts);
  const host = await page.evaluate(() => {
    const header = document.querySelector('body > svg #header');
    return { y: window.scrollY, pinned: header ? header.getAttribute('transform') : 'no header' };
  });
  check(host.y === 0 && host.pinned === null, 'inline in a page: no scrolling, nothing pinned', host);
  await page.close();
}

(async () => {
  const profileDir = path.join(tmp, 'profile');
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1220, height: 420 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  try {
    await testFlame(context);
    await testIcicleThreads(context);
    await testHostile(context);
    await testTall(context);
  } finally {
    await context.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  console.log(`${passes} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
})().catch((e) => {
  console.error(`FAIL: ${e.stack || e}`);
  fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(1);
});
