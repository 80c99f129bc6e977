// Opens a pyebpf --flamegraph page in headless Chromium the way a user would
// (a file:// URL, nothing else) and reports what it shows and how it reacts,
// as one JSON line, for the e2e test to judge against the run's folded files:
//   errors    console errors, exceptions, alerts
//   requests  every request other than the page itself (there must be none)
//   graphs    per flame graph: its heading, root width and value, the root's
//             children (label, value, width in px)
//   zoom      the first graph's widest frame under 90% of its width clicked:
//             its depth, width before and after, frames drawn above it
//   search    QUERY typed in the search box: frames highlighted, weight
//             summed (first graph), the text shown
//   tooltip   the text shown when hovering the first root child
//   thread    the first graph's first thread selected: option text, root value
// Usage: node check_flamegraph.mjs PAGE.html SCREENSHOT.png QUERY
import path from 'node:path';
import { chromium } from 'playwright-core';

const [page_path, screenshot, query] = process.argv.slice(2);
const url = `file://${path.resolve(page_path)}`;
const report = { errors: [], requests: [], graphs: [], zoom: null, search: null, tooltip: null, thread: null };

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  context.on('request', (r) => { if (r.url() !== url) report.requests.push(r.url()); });
  const page = await context.newPage();
  page.on('pageerror', (e) => report.errors.push(`exception: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') report.errors.push(`console: ${m.text()}`); });
  page.on('dialog', async (d) => { report.errors.push(`alert: ${d.message()}`); await d.dismiss(); });
  await page.goto(url);
  await page.waitForLoadState('load');

  const rootChildren = (index) => page.evaluate((i) => {
    const flame = document.querySelectorAll('section.graph .flame')[i];
    const root = flame.querySelector('.frame[data-depth="0"]');
    const px = (d) => d.getBoundingClientRect().width;
    return {
      heading: flame.parentElement.querySelector('h2').textContent,
      flame_width: px(flame),
      root_width: px(root),
      root_value: Number(root.dataset.value),
      children: [...flame.querySelectorAll('.frame[data-depth="1"]')].map((d) => (
        { label: d.dataset.label, value: Number(d.dataset.value), width: px(d) })),
    };
  }, index);
  const count = await page.evaluate(() => document.querySelectorAll('section.graph').length);
  for (let i = 0; i < count; i++) report.graphs.push(await rootChildren(i));

  if (count > 0 && report.graphs[0].children.length > 0) {
    const first = page.locator('section.graph').first();
    // Tooltip over the first root child.
    const child = first.locator('.frame[data-depth="1"]').first();
    await child.hover();
    report.tooltip = await page.evaluate(() => {
      const t = document.getElementById('tooltip');
      return t.style.display === 'block' ? t.textContent : null;
    });
    // Search.
    await page.fill('#search', query);
    report.search = await first.evaluate((s) => ({
      highlighted: s.querySelectorAll('.frame.match').length,
      weight: Number(s.querySelector('.matched').dataset.weight),
      text: s.querySelector('.matched').textContent,
    }));
    await page.screenshot({ path: screenshot, fullPage: true });
    await page.fill('#search', '');
    // Zoom: click the widest frame below the root narrower than 90% of the graph.
    const pick = await first.evaluate((s) => {
      const flame = s.querySelector('.flame').getBoundingClientRect().width;
      const frames = [...s.querySelectorAll('.frame')];
      let best = -1;
      frames.forEach((d, i) => {
        const w = d.getBoundingClientRect().width;
        if (Number(d.dataset.depth) >= 1 && w < 0.9 * flame && (best < 0 || w > frames[best].getBoundingClientRect().width))
          best = i;
      });
      if (best < 0) return null;
      window.pyebpfZoomed = frames[best].node;
      return { index: best, label: frames[best].dataset.label, depth: Number(frames[best].dataset.depth),
               before_width: frames[best].getBoundingClientRect().width };
    });
    if (pick) {
      await first.locator('.frame').nth(pick.index).click();
      report.zoom = await first.evaluate((s, pick) => {
        const d = [...s.querySelectorAll('.frame')].find((e) => e.node === window.pyebpfZoomed);
        return { ...pick,
          after_width: d ? d.getBoundingClientRect().width : null,
          flame_width: s.querySelector('.flame').getBoundingClientRect().width,
          ancestors: s.querySelectorAll('.frame.ancestor').length };
      }, pick);
    }
    // Thread selector.
    await first.locator('select.thread').selectOption({ index: 1 });
    report.thread = await first.evaluate((s) => ({
      option: s.querySelector('select.thread').selectedOptions[0].textContent,
      root_value: Number(s.querySelector('.frame[data-depth="0"]').dataset.value),
    }));
  }
} catch (e) {
  report.errors.push(`check: ${e.message}`);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
process.exit(report.errors.length === 0 ? 0 : 1);
