#!/usr/bin/env node
// Browser test of ember's differential SVG flame graph (`ember diff -o X.svg`):
// headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core
// opens the SVGs written by `test_diff --write-svg` from file:// and checks
// that the diff graph keeps the plain graph's interactivity -- hover details,
// tooltips with both runs, zoom, Reset Zoom, search, the kind legend -- and
// that its colours and the reverse view are what the tooltips say.
//
// A differential graph taller than the window (`ember diff` of two 150-frame-
// deep folded profiles) opens on its root like the plain one.
//
//   node test_svg_diff_browser.js --test-diff PATH/test_diff --ember PATH/ember [--screenshot FILE.png]
//
// The graph (tests/unit/test_diff.c, ranking pair + a deep chain in both):
//   BASE 10,500 samples: grow 2000, shrink 4000, steady 2900, gone 1000, jitter 100, deeper 500
//   NEW  20,500 samples: grow 8000, shrink 4000, steady 5800, fresh 1990, jitter 210, deeper 500
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
const testDiff = opt('--test-diff');
const ember = opt('--ember');
const screenshot = opt('--screenshot');
const chromiumPath = process.env.EMBER_CHROMIUM || '/usr/bin/chromium';

if (!testDiff || !ember) {
  console.error('usage: test_svg_diff_browser.js --test-diff PATH/test_diff --ember PATH/ember [--screenshot FILE.png]');
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

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ember-svg-diff-browser-'));
function writeSvg(name, flags) {
  const file = path.join(tmp, name);
  execFileSync(testDiff, ['--write-svg', file, ...flags], { stdio: 'inherit' });
  return file;
}

// Frame facts from the page, by the name before the tooltip's numbers.
async function frame(page, name) {
  return page.evaluate((name) => {
    for (const g of document.getElementById('frames').children) {
      const title = g.firstElementChild.textContent;
      if (title.slice(0, title.lastIndexOf(' (')) !== name) continue;
      const r = g.querySelector('rect'), t = g.querySelector('text');
      return {
        x: +r.getAttribute('x'), width: +r.getAttribute('width'), fill: r.getAttribute('fill'),
        cls: g.getAttribute('class'), visible: getComputedStyle(g).display !== 'none',
        label: t.textContent, title,
      };
    }
    return null;
  }, name);
}

const text = (page, id) => page.evaluate((id) => document.getElementById(id).textContent, id);
async function frameRect(page, name) {
  const i = await page.evaluate((name) => Array.from(document.getElementById('frames').children)
    .findIndex((g) => { const t = g.firstElementChild.textContent; return t.slice(0, t.lastIndexOf(' (')) === name; }),
  name);
  if (i < 0) throw new Error(`no frame ${name}`);
  return page.locator(`#frames > g:nth-child(${i + 1}) > rect`);
}

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

const rgb = (fill) => [1, 3, 5].map((i) => parseInt(fill.slice(i, i + 2), 16));

async function testDiffGraph(context) {
  const { page, errors } = await open(context, writeSvg('diff.svg', []));

  // colours: the largest growth full red, the largest drop full blue, no change white
  const grow = await frame(page, 'grow'), shrink = await frame(page, 'shrink');
  check(grow && grow.fill === '#ff0000', 'grow (largest growth) is full red', grow && grow.fill);
  check(shrink && rgb(shrink.fill)[2] === 255 && rgb(shrink.fill)[0] < 20, 'shrink is (nearly) full blue', shrink && shrink.fill);
  check((await frame(page, 'steady')).fill === '#ffffff', 'steady (within noise) is white');
  check(!(await frame(page, 'gone')), 'gone has no width in NEW: not drawn');
  const fresh = await frame(page, 'fresh');
  check(fresh && rgb(fresh.fill)[0] === 255 && rgb(fresh.fill)[1] > 60 && rgb(fresh.fill)[1] < 200,
        'fresh is a lighter red', fresh && fresh.fill);

  // hover: details line and tooltip with both runs
  await (await frameRect(page, 'grow')).hover();
  const want = 'grow (self 19.05% \u2192 39.02%, \u0394 +19.98 pp; incl 23.81% \u2192 41.46%, \u0394 +17.65 pp; ' +
               '8,500 samples in NEW)';
  check(grow.title === want, 'grow tooltip: self and inclusive in both runs and deltas', grow.title);
  check(await text(page, 'details') === 'native: ' + want, 'hover shows the details line', await text(page, 'details'));
  const jitter = await frame(page, 'jitter');
  check(jitter && /within noise/.test(jitter.title) && jitter.fill === '#ffffff', 'jitter: within noise, white', jitter);

  // zoom into work: full width, grow rescaled, fresh hidden, main greyed
  await (await frameRect(page, 'work')).click();
  const work = await frame(page, 'work');
  check(work.x === 10 && work.width === 1180, 'the zoomed frame spans the full width', work);
  const g2 = await frame(page, 'grow');
  check(Math.abs(g2.width - 1180 * 8500 / 18300) < 0.06 && g2.visible, 'a child is rescaled (8500/18300)', g2);
  check(!(await frame(page, 'fresh')).visible, 'a sibling branch is hidden');
  check(/parent/.test((await frame(page, 'main')).cls), 'an ancestor is greyed');
  check(g2.fill === '#ff0000', 'zoom keeps the diff colours', g2.fill);
  await page.locator('#unzoom').click();
  const g3 = await frame(page, 'grow');
  check(Math.abs(g3.width - 1180 * 8500 / 20500) < 0.06 && (await frame(page, 'fresh')).visible, 'Reset Zoom restores', g3);

  // search: matched share of NEW's samples; Reset Search restores the diff colours
  await page.mouse.click(600, 20);
  await searchVia(page, '^(grow|shrink)$', () => page.keyboard.press('Control+f'));
  check(await text(page, 'matched') === 'Matched: 61.0%', 'grow|shrink match 61.0% of NEW', await text(page, 'matched'));
  check((await frame(page, 'grow')).fill === 'rgb(230,0,230)', 'the match is highlighted');
  await page.locator('#search').click();
  check((await frame(page, 'grow')).fill === '#ff0000' && (await frame(page, 'shrink')).fill === shrink.fill,
        'Reset Search restores the diff colours');

  // the kind legend still works; the colour legend is there with its scale
  await page.locator('#legend > g[k="0"]').click();
  check(await text(page, 'matched') === 'native: 100.0%', 'the native legend entry highlights every frame',
        await text(page, 'matched'));
  await page.keyboard.press('Escape');
  const legend = await page.evaluate(() => ({
    swatches: document.querySelectorAll('#difflegend rect').length,
    text: document.getElementById('difflegend').textContent,
    subtitle: document.getElementById('subtitle').textContent + ' / ' +
              document.getElementById('subtitle2').textContent,
  }));
  check(legend.swatches === 5 && /grew/.test(legend.text) && /shrank/.test(legend.text), 'colour legend', legend);
  check(/full colour \u00b1\d+\.\d\d pp \(largest change\)/.test(legend.subtitle) && /widths: NEW/.test(legend.subtitle),
        'the subtitle states the colour scale and what sets the widths', legend.subtitle);
  if (screenshot) await page.screenshot({ path: screenshot });
  check(errors.length === 0, 'no script errors or network requests', errors);
  await page.close();
}

async function testReverse(context) {
  const { page, errors } = await open(context, writeSvg('diff-reverse.svg', ['--reverse']));
  const gone = await frame(page, 'gone');
  check(gone && rgb(gone.fill)[2] === 255 && rgb(gone.fill)[0] < 255, 'reverse view: the vanished gone shows, blue', gone);
  check(!(await frame(page, 'fresh')), 'reverse view: fresh (not in BASE) has no width');
  check(gone && /1,000 samples in BASE\)$/.test(gone.title), 'reverse view: widths are BASE samples', gone && gone.title);
  await (await frameRect(page, 'gone')).click();
  check((await frame(page, 'gone')).width === 1180, 'zoom in the reverse view');
  check(errors.length === 0, 'no script errors', errors);
  await page.close();
}

// A 2,550 px differential graph in a 1280x800 window opens on its root, its
// buttons in reach; a deep frame zooms and stays in view.
async function testTall(context) {
  const base = path.join(tmp, 'base.folded'), fresh = path.join(tmp, 'new.folded'), file = path.join(tmp, 'tall.svg');
  fs.writeFileSync(base, tall.tallFolded(1));
  fs.writeFileSync(fresh, tall.tallFolded(2));
  execFileSync(ember, ['diff', '-q', base, fresh, '-o', file], { stdio: 'inherit' });
  const { page, errors } = await tall.openTall(context, file);
  await tall.checkOpensAtRoot(page, check, screenshot && screenshot.replace(/(\.png)?$/, '-tall.png'));
  await (await frameRect(page, 'torch/mod117.py:<module>')).click();
  const fr = await frame(page, 'torch/mod117.py:<module>');
  check(fr.x === 10 && fr.width === 1180, 'the deep frame zooms to the full width', fr);
  const box = await tall.boxOf(page, '#frames > g:not(.hide):not(.parent) > rect');
  check(tall.inWindow(box), 'the zoomed frame is in the window', box);
  check(tall.inWindow(await tall.boxOf(page, '#unzoom')), 'Reset Zoom is in the window', await tall.boxOf(page, '#unzoom'));
  check(errors.length === 0, 'no script errors', errors);
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
    await testDiffGraph(context);
    await testReverse(context);
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
