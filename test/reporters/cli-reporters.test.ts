import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseJunit, type TestCase } from 'junit2json';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { mutantsServer, referenceServer } from '../helpers.js';
import { reportValidator } from '../fixtures/report-validator.js';
import { lastLine, reporterFlags, runCli, type CliRun } from '../fixtures/run-cli.js';

/** The reporters through the built CLI, against the reference server and a mutant. */

const scratch = mkdtempSync(join(tmpdir(), 'msc-cli-reporters-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const mutant = ['--', process.execPath, mutantsServer, 'drops-unknown-fields'];

describe('one run, every format at once (the mutant that drops unknown fields)', () => {
  let run: CliRun;
  const at = (name: string) => join(scratch, 'all', name);
  // The checks that give every kind of result a report shows: passes and the failure with its diff
  // (forwarding/*, capability/*), a check that could not run (forwarding/state-fidelity, blocked by
  // the failure) and checks not applicable, without a scenario or transcript (transport/*,
  // enforcement/*). The rest of the suite would only add more passes.
  const only = ['forwarding/*', 'capability/*', 'transport/*', 'enforcement/*'].flatMap((glob) => ['--only', glob]);
  beforeAll(async () => {
    const reporters = reporterFlags({ human: '', json: 'r.json', junit: 'r.xml', markdown: 's.md', html: 'r.html' });
    run = await runCli([...reporters, '--transcripts', 't/', ...only, ...mutant], {
      cwd: await mkdir(join(scratch, 'all')),
    });
  });

  test('exit 1, every file written, the human report on stdout with the tally last', () => {
    expect(run.code, run.stderr).toBe(1);
    for (const file of ['r.json', 'r.xml', 's.md', 'r.html']) expect(existsSync(at(file)), file).toBe(true);
    expect(run.stdout).toMatch(/FAIL\s+forwarding\/state-unchanged/);
    const { summary } = JSON.parse(readFileSync(at('r.json'), 'utf8'));
    expect(summary.failed).toBeGreaterThanOrEqual(1);
    expect(lastLine(run.stdout)).toMatch(new RegExp(`^${summary.passed} passed, ${summary.failed} failed, ${summary.skipped} skipped(, \\d+ warnings?)?$`));
    expect(run.stderr).toBe('');
  });
  test('the JSON validates against the shipped schema and references the transcript files', () => {
    const doc = JSON.parse(readFileSync(at('r.json'), 'utf8'));
    const validate = reportValidator();
    expect(validate(doc), JSON.stringify(validate.errors, null, 2)).toBe(true);
    expect(doc.exitCode).toBe(1);
    expect(doc.server.serverInfo).toEqual({ name: 'reference-sandbox-server', version: '0.1.0' });
    expect(doc.target.command).toEqual([process.execPath, mutantsServer, 'drops-unknown-fields']);
    const failed = doc.checks.find((c: { id: string }) => c.id === 'forwarding/state-unchanged');
    expect(failed).toMatchObject({ status: 'fail', rule: 'FWD-2', level: 'MUST' });
    expect(failed.diff).toContain('- missing  conformanceCanary (was {"note":"unknown to every server","list":[{"depth":3,"items":[1,"two",{}]},[]]})');
    expect(failed.transcript.file).toBe(join('t', 'forwarding_codex-call.stdio.jsonl'));
    const lines = readFileSync(at(failed.transcript.file), 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(failed.transcript.entries + 1);
    expect(lines[1]).toMatchObject({ dir: 'host->server', message: { method: 'initialize' } });
    expect(lines.some((l) => l.dir === 'host->server' && l.message.method === 'tools/call')).toBe(true);
    // Every referenced transcript exists.
    for (const check of doc.checks) if (check.transcript.file) expect(existsSync(at(check.transcript.file)), check.transcript.file).toBe(true);
  });
  test('the JUnit XML loads in a JUnit consumer: a case per check, the failure with its diff and transcript', async () => {
    const doc = JSON.parse(readFileSync(at('r.json'), 'utf8'));
    const junit = (await parseJunit(readFileSync(at('r.xml'), 'utf8'))) as { tests?: number; failures?: number; testsuite?: { testcase?: TestCase[] }[] };
    const cases = junit.testsuite!.flatMap((s) => s.testcase ?? []);
    expect(cases).toHaveLength(doc.checks.length);
    expect(junit.failures).toBe(doc.summary.failed);
    const failed = cases.find((c) => c.classname === 'forwarding' && c.name?.startsWith('state-unchanged'))!;
    expect(failed.failure![0]!.inner).toContain('- missing  conformanceCanary');
    expect(failed.failure![0]!.inner).toContain(`transcript: ${join('t', 'forwarding_codex-call.stdio.jsonl')}`);
  });
  test('the Markdown summary has the table and the failure section', () => {
    const md = readFileSync(at('s.md'), 'utf8');
    expect(md).toMatch(/^## ❌ MCP sandbox conformance: /);
    expect(md).toMatch(/^#### ❌ FAIL `forwarding\/state-unchanged/m);
    expect(md).toContain('- missing  conformanceCanary');
  });
});

async function mkdir(dir: string): Promise<string> {
  const { mkdirSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe('where the reports go', () => {
  test('a machine format without a file takes stdout; the human report moves to stderr, tally last', async () => {
    const run = await runCli(['--reporter', 'json', '--only', 'capability/*', referenceServer]);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc.summary).toMatchObject({ passed: 2, failed: 0 });
    expect(lastLine(run.stderr)).toBe('2 passed, 0 failed, 0 skipped');
  });
  test('github annotations on stdout: ::error for a MUST failure, the diff in the message', async () => {
    const run = await runCli(['--reporter', 'github', '--only', 'forwarding/*', ...mutant]);
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^::error title=forwarding\/state-unchanged::FWD-2 \(MUST\): (.*: )?the forwarded state differs from the one (this call )?sent \(\d+ paths\)( \(and \d+ more findings? of the sandbox monitor\))?%0A {2}- missing {2}/,
    );
    expect(lastLine(run.stderr)).toMatch(/passed, 1 failed, \d+ skipped$/);
  });
  const deprecatedName = ['--only', 'capability/*', '--', process.execPath, mutantsServer, 'capability-deprecated-name'];
  test('a SHOULD finding is a ::warning (exit 0); with --strict an ::error (exit 1)', async () => {
    const [plain, strict] = await Promise.all([
      runCli(['--reporter', 'github', ...deprecatedName]),
      runCli(['--strict', '--reporter', 'github', ...deprecatedName]),
    ]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^::warning title=capability\/current-name::CAP-2 \(SHOULD\): /);
    expect(lastLine(plain.stderr)).toBe('1 passed, 0 failed, 0 skipped, 1 warning');
    // A warning does not fail the run: no baseline entry is suggested for it (with --strict it is).
    expect(plain.stderr).not.toContain('not in a baseline');
    expect(strict.stderr).toContain('1 failure not in a baseline');
    expect(strict.code).toBe(1);
    expect(strict.stdout).toMatch(/^::error title=capability\/current-name::CAP-2 \(SHOULD\): /);
  });
  test('--trace prints the scenario transcript under the failure; secrets never', async () => {
    const run = await runCli(['--trace', '--only', 'forwarding/state-unchanged', ...mutant]);
    expect(run.code).toBe(1);
    const after = run.stdout.slice(run.stdout.indexOf('FAIL   forwarding/state-unchanged'));
    expect(after).toMatch(
      /transcript of scenario forwarding\/codex-call over stdio \(\d+ entries\):\n\s+\+\d+ms\s+host->server\s+\{"jsonrpc":"2.0","id":0,"method":"initialize"/,
    );
    expect(after).toMatch(/host->server\s+\{"jsonrpc":"2.0","id":2,"method":"tools\/call"/);
    expect(lastLine(run.stdout)).toBe('0 passed, 1 failed, 0 skipped');
  });
  test('every unexpected failure prints a paste-ready baseline entry', async () => {
    const run = await runCli(['--only', 'forwarding/state-unchanged', ...mutant]);
    expect(run.stdout).toContain('1 failure not in a baseline');
    expect(run.stdout).toContain('  - id: forwarding/state-unchanged\n    reason: "TODO: why this is expected"\n');
  });
  test('secrets in the target are redacted in every report', async () => {
    const dir = await mkdir(join(scratch, 'secret'));
    const run = await runCli(['--reporter', 'json=r.json', '--only', 'capability/advertised', '--', process.execPath, referenceServer, '--token=sk-live-abc'], {
      cwd: dir,
    });
    // The reference server refuses the unknown flag, which does not matter here: only the reports do.
    expect(run.stdout).not.toContain('sk-live-abc');
    const doc = JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8'));
    expect(JSON.stringify(doc.target)).not.toContain('sk-live-abc');
    expect(doc.target.command.at(-1)).toBe('--token=[redacted]');
  });
});

describe('results flags that are wrong: exit 2 before anything runs', () => {
  test.each([
    [['--reporter', 'nope'], /unknown reporter "nope"/],
    [['--reporter', 'json', '--reporter', 'junit'], /only one format can write to stdout/],
    [['--reporter', 'github=x'], /github takes no file/],
    [['--update-baseline'], /--update-baseline needs --baseline FILE/],
    [['--baseline', '/nonexistent/b.yml'], /baseline \/nonexistent\/b.yml does not exist/],
  ])('%j', async (flags, message) => {
    const run = await runCli([...flags, referenceServer]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
  });
  test('--help documents the results flags', async () => {
    const run = await runCli(['--help']);
    for (const flag of ['--reporter', '--transcripts', '--trace', '--baseline', '--update-baseline']) expect(run.stdout).toContain(flag);
  });
});
