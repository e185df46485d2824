import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseJunit } from 'junit2json';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { mutantsServer, root } from './helpers.js';
import { bundledChromium, CHROMIUM_ARGS } from './fixtures/browser.js';
import { reportValidator } from './fixtures/report-validator.js';
import { reporterFlags, runCli } from './fixtures/run-cli.js';

/**
 * The HTML report in a real browser: the Chromium of the @sparticuz/chromium devDependency
 * (test/fixtures/browser.ts), headless, driven by playwright-core. The report comes from a real run against a mutant, so it has failing, warning,
 * skipped and passing rows. A screenshot is kept in test-results/ (git-ignored).
 */

const scratch = mkdtempSync(join(tmpdir(), 'msc-html-'));
const artifacts = join(root, 'test-results');

let browser: Browser;
let page: Page;
let doc: { checks: { id: string; status: string; transport: string }[] };
const requests: string[] = [];
const consoleErrors: string[] = [];

beforeAll(async () => {
  const run = await runCli(
    // The run of the "done when": every format at once, and the transcripts.
    [
      ...reporterFlags({ human: '', json: 'r.json', junit: 'r.xml', markdown: 's.md', html: 'r.html' }),
      '--transcripts',
      't/',
      '--only',
      'capability/*',
      '--only',
      'forwarding/*',
      '--only',
      'aliases/*',
      '--',
      process.execPath,
      mutantsServer,
      'drops-unknown-fields',
    ],
    { cwd: scratch },
  );
  expect(run.code, run.stderr).toBe(1);
  doc = JSON.parse(readFileSync(join(scratch, 'r.json'), 'utf8'));
  browser = await chromium.launch({ executablePath: await bundledChromium(), args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => message.type() === 'error' && consoleErrors.push(message.text()));
  page.on('pageerror', (error) => consoleErrors.push(error.message));
  await page.goto(pathToFileURL(join(scratch, 'r.html')).href);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const rows = (status?: string) => page.locator(status ? `tr.check[data-status="${status}"]` : 'tr.check');

describe('the other files of the same run', () => {
  test('the JSON validates against the schema, the JUnit loads, the Markdown and transcripts are there', async () => {
    const validate = reportValidator();
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    const junit = (await parseJunit(readFileSync(join(scratch, 'r.xml'), 'utf8'))) as { tests?: number; failures?: number };
    expect(junit).toMatchObject({ tests: doc.checks.length, failures: doc.checks.filter((c) => c.status === 'fail').length });
    expect(readFileSync(join(scratch, 's.md'), 'utf8')).toMatch(/^#### ❌ FAIL `forwarding\/state-unchanged`/m);
    expect(readdirSync(join(scratch, 't'))).toContain('forwarding_codex-call.stdio.jsonl');
  });
});

describe('the HTML report in headless Chromium', () => {
  test('a row per check, colored by status; nothing fetched from anywhere; no script error', async () => {
    expect(await rows().count()).toBe(doc.checks.length);
    expect(await rows('fail').count()).toBe(doc.checks.filter((c) => c.status === 'fail').length);
    const failBadge = rows('fail').first().locator('.badge');
    expect(await failBadge.textContent()).toBe('FAIL');
    expect(await failBadge.evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(207, 34, 46)');
    expect(
      await rows('pass')
        .first()
        .locator('.badge')
        .evaluate((el) => getComputedStyle(el).backgroundColor),
    ).toBe('rgb(26, 127, 55)');
    expect(requests).toEqual([pathToFileURL(join(scratch, 'r.html')).href]);
    expect(consoleErrors).toEqual([]);
  });

  test('the page opens on the problems, the failing row with its diff unfolded', async () => {
    const failing = page.locator('tr.check[data-id="forwarding/state-unchanged"]');
    await expect.poll(() => failing.isVisible()).toBe(true);
    expect(await rows('pass').first().isVisible()).toBe(false);
    const diff = failing.locator('details.diff pre');
    expect(await diff.isVisible()).toBe(true);
    expect(await diff.innerText()).toContain('- missing  conformanceCanary');
    await failing.locator('details.values summary').click();
    expect(await failing.locator('details.values pre').first().innerText()).toContain('conformanceCanary');
  });

  test('the transcript unfolds, filled from the embedded data', async () => {
    const failing = page.locator('tr.check[data-id="forwarding/state-unchanged"]');
    const transcript = failing.locator('details.transcript pre');
    await failing.locator('details.transcript summary').click();
    expect(await transcript.isVisible()).toBe(true);
    // The page fills the transcript when it is opened: wait for it rather than race it.
    await expect.poll(() => transcript.innerText()).toContain('"method":"tools/call"');
    const text = await transcript.innerText();
    expect(text).toMatch(/host->server\s+\{"jsonrpc":"2.0","id":0,"method":"initialize"/);
    expect(text).toContain('"method":"tools/call"');
    expect(await failing.locator('details.transcript summary').innerText()).toContain('forwarding_codex-call.stdio.jsonl');
  });

  test('the status filter hides and shows rows', async () => {
    await page.locator('#show-all').click();
    const total = await rows().count();
    const passing = await rows('pass').count();
    expect(passing).toBeGreaterThan(0);
    await page.locator('#filters input[value="pass"]').uncheck();
    expect(await rows('pass').first().isVisible()).toBe(false);
    expect(await rows('fail').first().isVisible()).toBe(true);
    expect(await page.locator('#shown').innerText()).toBe(`${total - passing} of ${total} checks shown`);

    await page.locator('#only-problems').click();
    const visible = await page.locator('tr.check:visible').evaluateAll((els) => els.map((el) => (el as HTMLElement).dataset.status));
    const problems = doc.checks.filter((c) => ['fail', 'warn', 'xpass', 'error'].includes(c.status)).map((c) => c.status);
    expect(visible.sort()).toEqual(problems.sort());
    expect(await page.locator('#filters input[value="skip"]').isChecked()).toBe(false);

    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'html-report-problems.png'), fullPage: true });

    await page.locator('#show-all').click();
    expect(await page.locator('tr.check:visible').count()).toBe(total);
    await page.screenshot({ path: join(artifacts, 'html-report.png'), fullPage: true });
  });
});
