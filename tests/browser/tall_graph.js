// Shared by the browser tests of tall flame graphs (test_svg_browser.js,
// test_svg_diff_browser.js): a folded profile whose graph is far taller than
// a window, a PNG decoder for screenshots, and the checks that the root frame
// is on screen -- in the page's geometry and in the pixels actually painted.
'use strict';
const zlib = require('zlib');

// 150 frames of imports under one wide program: the SVG is about 2,550 px
// tall, its deep tower narrow (15% of the samples) and its root at the bottom.
const TOWER = 150;
function tallFolded(scale = 1) {
  const tower = ['main', '<frozen importlib._bootstrap>:_find_and_load'];
  for (let i = 0; tower.length < TOWER; i++) tower.push(`torch/mod${i}.py:<module>`);
  return [
    `main;run_model;forward;matmul ${600 * scale}`,
    `main;run_model;forward;relu ${150 * scale}`,
    'main;load_data;read 100',
    `${tower.join(';')} 150`,
  ].join('\n') + '\n';
}

// RGB(A) 8-bit non-interlaced PNG, as Chromium's screenshots are, to
// { width, height, at(x, y) -> [r, g, b] }.
function decodePng(buf) {
  let pos = 8, width = 0, height = 0, type = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), kind = buf.toString('latin1', pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (kind === 'IHDR') {
      width = data.readUInt32BE(0); height = data.readUInt32BE(4); type = data[9];
      if (data[8] !== 8 || (type !== 2 && type !== 6) || data[12] !== 0) throw new Error('unsupported PNG');
    } else if (kind === 'IDAT') {
      idat.push(data);
    }
    pos += 12 + len;
  }
  const bpp = type === 6 ? 4 : 3, stride = width * bpp, raw = zlib.inflateSync(Buffer.concat(idat));
  const px = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)], src = y * (stride + 1) + 1, row = y * stride;
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? px[row + i - bpp] : 0, b = y ? px[row + i - stride] : 0;
      const c = i >= bpp && y ? px[row + i - stride - bpp] : 0;
      let p = a;
      if (f === 0) p = 0;
      else if (f === 2) p = b;
      else if (f === 3) p = (a + b) >> 1;
      else if (f === 4) {
        const pa = Math.abs(b - c), pb = Math.abs(a - c), pc = Math.abs(a + b - 2 * c);
        p = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      px[row + i] = (raw[src + i] + p) & 0xff;
    }
  }
  return { width, height, bpp, px, at: (x, y) => Array.from(px.subarray(y * stride + x * bpp, y * stride + x * bpp + 3)) };
}

// Screenshot rows painted in colour [r, g, b] over 95% of the graph's width
// (x 10 .. 1190): where the root frame (full width) shows.
function rowsOfColour(png, colour) {
  const rows = [];
  for (let y = 0; y < png.height; y++) {
    let same = 0;
    for (let x = 10, i = (y * png.width + 10) * png.bpp; x < 1190; x++, i += png.bpp)
      if (png.px[i] === colour[0] && png.px[i + 1] === colour[1] && png.px[i + 2] === colour[2]) same++;
    if (same >= 0.95 * 1180) rows.push(y);
  }
  return rows;
}

// Where an element is in the window, and the window's size.
function boxOf(page, selector) {
  return page.evaluate((selector) => {
    const r = document.querySelector(selector).getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, winH: window.innerHeight,
             scrollY: window.scrollY };
  }, selector);
}
const inWindow = (b) => b.top >= 0 && b.bottom <= b.winH;

// Open file in a 1280x800 window; returns { page, errors }.
async function openTall(context, file) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('file://' + file);
  await page.waitForFunction(() => document.getElementById('frames').firstElementChild.emberIndex === 0);
  return { page, errors };
}

// The checks every tall graph passes as it opens: the root's rectangle in the
// window, painted in its own colour on the screenshot's rows where the page
// says it is, and the Search button in the window.
async function checkOpensAtRoot(page, check, shotFile) {
  const height = await page.evaluate(() => document.documentElement.getBoundingClientRect().height);
  check(height > 2000, 'the tall graph is over 2,000 px tall', height);
  const root = await boxOf(page, '#frames > g:first-child > rect');
  check(inWindow(root), 'the root frame is in the window as the graph opens', root);
  const fill = await page.evaluate(() => document.querySelector('#frames > g:first-child > rect').getAttribute('fill'));
  const colour = [1, 3, 5].map((i) => parseInt(fill.slice(i, i + 2), 16));
  const png = decodePng(await page.screenshot(shotFile ? { path: shotFile } : {}));
  const rows = rowsOfColour(png, colour).filter((y) => y >= root.top && y < root.bottom);
  check(rows.length >= 12, `the screenshot shows the root (${fill}) across the width where its rectangle is`,
        { rows: rows.length, root });
  check(inWindow(await boxOf(page, '#search')), 'the Search button is in the window', await boxOf(page, '#search'));
  return png;
}

module.exports = { tallFolded, decodePng, rowsOfColour, boxOf, inWindow, openTall, checkOpensAtRoot };
