import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse as parseJunit } from 'junit2json';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bundled } from './fixtures/bundles.js';
import { reportValidator } from './fixtures/report-validator.js';
import { runCli, type CliRun } from './fixtures/run-cli.js';

/**
 * A hostile server (fixtures/servers/hostile.mjs) puts escape sequences, a fake tally, lone CRs,
 * GitHub workflow commands, a markdown heading and secrets in its serverInfo, capabilities, tool
 * list, tool results and stderr; the user plants one more secret with --env. Every artifact of the
 * run (stdout, stderr, each report, each transcript) is searched for what must not get through.
 */

const hostile = bundled('fixtures/servers/hostile.mjs');
const SECRETS = ['sk-live-1234567890abcdef', 'hunter2', 'abc.def.ghi', 'letmein', 's3cr3t-value'];
const scratch = mkdtempSync(join(tmpdir(), 'msc-hostile-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Artifacts {
  run: CliRun;
  dir: string;
  /** Every text the run produced, by name: stdout, stderr, each file it wrote. */
  texts: Map<string, string>;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/**
 * The checks through which the server's text reaches the artifacts: the header (serverInfo, the
 * tool list's exec tool), the capability checks, the control call whose refusal is the failure
 * (the tool result in its diff, its transcript under --trace), the resource checks (the listing in
 * their reason), the catalog checks (the tool list at each startup, one overlapping startup being
 * enough: each lists the same). The other exec checks only repeat the same refused call, and are
 * blocked by the control, with reasons of our own.
 */
const CHECKS = ['capability/*', 'launcher/runs-given-executable', 'forwarding/*', 'resources/*', 'catalog/*'].flatMap((glob) => ['--only', glob]);

async function runHostile(name: string, variant: string, env: NodeJS.ProcessEnv): Promise<Artifacts> {
  const dir = join(scratch, name);
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp, { recursive: true });
  const out = join(dir, 'out');
  mkdirSync(out);
  const run = await runCli(
    [
      '--env',
      'API_KEY=s3cr3t-value',
      '--reporter',
      'json=r.json',
      '--reporter',
      'junit=r.xml',
      '--reporter',
      'markdown=r.md',
      '--reporter',
      'html=r.html',
      '--reporter',
      'github',
      '--transcripts',
      'transcripts',
      '--trace',
      ...CHECKS,
      '--catalog-startups',
      '1',
      '--',
      process.execPath,
      hostile,
      variant,
    ],
    // A private TMPDIR, and no inherited GITHUB_ACTIONS unless the case sets it.
    { cwd: out, env: { TMPDIR: tmp, GITHUB_ACTIONS: '', ...env } },
  );
  const texts = new Map<string, string>([
    ['stdout', run.stdout],
    ['stderr', run.stderr],
  ]);
  for (const file of filesUnder(out)) texts.set(relative(out, file), readFileSync(file, 'utf8'));
  return { run, dir: out, texts };
}

/** Lines outside `::stop-commands::T` … `::T::` pairs; fails on a block that is never closed. */
function linesOutsideStopCommands(text: string): string[] {
  const outside: string[] = [];
  let token: string | undefined;
  for (const line of text.split('\n')) {
    if (token === undefined) {
      const start = /^::stop-commands::(.+)$/.exec(line);
      if (start) token = start[1];
      else outside.push(line);
    } else if (line === `::${token}::`) token = undefined;
  }
  expect(token, 'a ::stop-commands:: block is never closed').toBeUndefined();
  return outside;
}

/** Our own annotations: `::error title=<check>::<data>` with the data encoded (no raw CR/LF possible by construction). */
const OUR_ANNOTATION = /^::(error|warning) title=[\w/.%() -]+::/;

function expectSafe(artifacts: Artifacts, inActions: boolean): void {
  for (const [name, text] of artifacts.texts) {
    // No raw control character but LF and TAB, and no C1 control (UTF-8 encoded or not).
    const control = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/.exec(text);
    expect(
      control,
      `${name}: raw control U+${control?.[0].charCodeAt(0).toString(16).padStart(4, '0')} at ${control?.index}: ${JSON.stringify(text.slice(Math.max(0, (control?.index ?? 0) - 40), (control?.index ?? 0) + 40))}`,
    ).toBeNull();
    for (const secret of SECRETS) expect(text.includes(secret), `${name} leaks ${secret}`).toBe(false);
    // The runner's older syntax is found anywhere in a line: nowhere, in any artifact.
    expect(text.includes('##['), `${name} holds "##["`).toBe(false);
    const lines = inActions && (name === 'stdout' || name === 'stderr') ? linesOutsideStopCommands(text) : text.split('\n');
    for (const line of lines) {
      if (name === 'stdout' && OUR_ANNOTATION.test(line)) continue;
      // The runner trims leading blanks before it looks for "::".
      expect(line.trimStart().startsWith('::'), `${name}: a workflow command outside a stop-commands block: ${line.slice(0, 120)}`).toBe(false);
    }
  }
}

function expectReportsParse(artifacts: Artifacts): void {
  const json = JSON.parse(artifacts.texts.get('r.json')!);
  const validate = reportValidator();
  expect(validate(json), JSON.stringify(validate.errors)).toBe(true);
  const junit = parseJunit(artifacts.texts.get('r.xml')!);
  return void expect(junit).toBeTruthy();
}

describe('a hostile server that starts and refuses every call', () => {
  let plain: Artifacts;
  let actions: Artifacts;
  beforeAll(async () => {
    [plain, actions] = await Promise.all([runHostile('plain', 'behaves', {}), runHostile('actions', 'behaves', { GITHUB_ACTIONS: 'true' })]);
  });

  test('its checks fail (it opted in, it ran nothing), the reports and transcripts are written', () => {
    for (const { run, texts } of [plain, actions]) {
      expect(run.code, run.stderr).toBe(1);
      expect([...texts.keys()].some((name) => name.startsWith('transcripts/'))).toBe(true);
      expect(run.stderr).toMatch(/^FAIL\s+launcher\//m);
    }
  });

  test('the JSON report parses and validates, the JUnit parses', () => {
    expectReportsParse(plain);
    expectReportsParse(actions);
  });

  test('no raw control byte, no workflow command, no planted secret in any output, outside GitHub Actions', () => {
    expectSafe(plain, false);
  });

  test('the same in GitHub Actions, where server-derived blocks of the human report are in stop-commands pairs', () => {
    expectSafe(actions, true);
    expect(actions.run.stderr).toMatch(/^::stop-commands::msc-[0-9a-f]{32}$/m);
  });

  test('the tally is not forged: the server line is one line, and the real tally is the last line', () => {
    const lines = plain.run.stderr.trimEnd().split('\n');
    const serverLines = lines.filter((line) => line.startsWith('server: '));
    expect(serverLines).toHaveLength(1);
    expect(serverLines[0]).toContain('\\n35 passed, 0 failed');
    expect(lines.filter((line) => /^\d+ passed, \d+ failed/.test(line))).toEqual([lines.at(-1)]);
    expect(lines.at(-1)).toMatch(/^\d+ passed, [1-9]\d* failed/);
  });

  test('markdown: no heading, quote or list the server wrote; the table stays a table', () => {
    const md = plain.texts.get('r.md')!;
    const headings = md.split('\n').filter((line) => /^#{1,6}\s/.test(line));
    expect(headings.some((h) => /All checks passed/.test(h))).toBe(false);
    expect(md.split('\n')[0]).toMatch(/^## ❌ MCP sandbox conformance: /);
    expect(md).not.toMatch(/\r/);
    expect(md).toMatch(/^\| ❌ fail \| `launcher\//m);
  });

  test('html: server text is escaped, not markup', () => {
    const html = plain.texts.get('r.html')!;
    expect(html).not.toMatch(/<script>[^<]*::error/);
    expect(html.match(/<script/g)).toHaveLength(2);
  });

  test('annotations carry the server text encoded, inside their own message', () => {
    const annotations = plain.run.stdout.split('\n').filter(Boolean);
    expect(annotations.length).toBeGreaterThan(0);
    for (const line of annotations) expect(line).toMatch(OUR_ANNOTATION);
  });
});

describe('a hostile server that fails to start after printing secrets to stderr', () => {
  let plain: Artifacts;
  let actions: Artifacts;
  beforeAll(async () => {
    [plain, actions] = await Promise.all([runHostile('crash-plain', 'crash', {}), runHostile('crash-actions', 'crash', { GITHUB_ACTIONS: 'true' })]);
  });

  test('exit 4 (the target failed to start), its stderr tail shown, redacted', () => {
    for (const { run } of [plain, actions]) {
      expect(run.code, run.stderr).toBe(4);
      expect(run.stderr).toContain('last lines of its stderr:');
      expect(run.stderr).toMatch(/API_TOKEN=\[redacted\] --token \[redacted\] Authorization: \[redacted\]/);
    }
    expect(JSON.parse(plain.texts.get('r.json')!).startFailure.stderrTail).toContain('PASSWORD=[redacted]');
  });

  test('the reports parse; nothing unsafe or secret anywhere', () => {
    expectReportsParse(plain);
    expectSafe(plain, false);
    expectSafe(actions, true);
  });
});
