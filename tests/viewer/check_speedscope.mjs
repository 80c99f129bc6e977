// Checks a speedscope file the way a user would meet it:
//   1. against speedscope's own file-format schema (shipped in the npm package);
//   2. opened in the real speedscope viewer (the npm package's build, loaded
//      exactly as its `speedscope FILE` command does) in headless Chromium:
//      the profile must load and draw with no error shown, no alert, no
//      exception and no console error.
// Usage: node check_speedscope.mjs PROFILE.json [SCREENSHOT.png]
// Prints one JSON line; exit 0 only if both checks pass.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const release = path.join(here, 'node_modules', 'speedscope', 'dist', 'release');
const [profilePath, screenshot] = process.argv.slice(2);
const report = { schema_ok: false, viewer_ok: false, schema_errors: [], viewer_errors: [], shown: null };

function finish(code) {
  console.log(JSON.stringify(report));
  process.exit(code);
}

let doc;
try {
  doc = JSON.parse(fs.readFileSync(profilePath, 'utf8'));
} catch (e) {
  report.schema_errors.push(`not JSON: ${e.message}`);
  finish(2);
}
const schema = JSON.parse(fs.readFileSync(path.join(release, 'file-format-schema.json'), 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile({ ...schema, $ref: '#/definitions/FileFormat.File' });
report.schema_ok = validate(doc);
if (!report.schema_ok) report.schema_errors = validate.errors.slice(0, 10).map((e) => `${e.instancePath} ${e.message}`);

// What `speedscope FILE` does: a script that hands the file to the viewer.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pyebpf-speedscope-'));
const loader = path.join(tmp, 'load.js');
fs.writeFileSync(loader, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(profilePath))}, ${JSON.stringify(
  fs.readFileSync(profilePath).toString('base64'))})`);
const url = `file://${path.join(release, 'index.html')}#localProfilePath=${loader}`;

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--enable-unsafe-swiftshader', '--use-angle=swiftshader',
         '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
         '--disable-sync', '--allow-file-access-from-files'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('pageerror', (e) => report.viewer_errors.push(`exception: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') report.viewer_errors.push(`console: ${m.text()}`); });
  page.on('dialog', async (d) => { report.viewer_errors.push(`alert: ${d.message()}`); await d.dismiss(); });
  await page.goto(url);
  const first = Array.isArray(doc.profiles) && doc.profiles.length ? doc.profiles[0].name : null;
  // Loaded = the first profile's name is in the toolbar; failed = the error panel.
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    const text = await page.evaluate(() => document.body.innerText);
    if (text.includes('Something went wrong')) { report.viewer_errors.push('viewer: Something went wrong'); break; }
    if (first && text.includes(first)) { report.shown = first; break; }
    if (report.viewer_errors.length) break;
    await page.waitForTimeout(250);
  }
  if (!report.shown && report.viewer_errors.length === 0) report.viewer_errors.push('viewer: profile never shown');
  // The flame chart is drawn on canvases; give it a frame, then keep a picture.
  await page.waitForTimeout(500);
  report.canvases = await page.evaluate(() => document.querySelectorAll('canvas').length);
  if (screenshot) await page.screenshot({ path: screenshot });
  report.viewer_ok = report.shown !== null && report.viewer_errors.length === 0 && report.canvases > 0;
} finally {
  await browser.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
finish(report.schema_ok && report.viewer_ok ? 0 : 1);
