import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { afterAll, describe, expect, test } from 'vitest';
import { applyBaseline, loadBaseline, PLACEHOLDER_REASON, updatedEntries, type BaselineEntry } from '../cli/baseline.js';
import { UsageError } from '../cli/config.js';
import { blockedByExpectedFailure, exitCodeFor } from '../cli/exit-codes.js';
import type { GradedResult, GradedStatus } from '../cli/grade.js';
import { allChecks } from '../suites/index.js';
import { mutantsServer, referenceConfig, referenceServer } from './helpers.js';
import { lastLine, runCli } from './fixtures/run-cli.js';
import { blockedResults } from './fixtures/synthetic-report.js';

const scratch = mkdtempSync(join(tmpdir(), 'msc-baseline-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const file = (name: string, text?: string) => {
  const path = join(scratch, name);
  if (text !== undefined) writeFileSync(path, text);
  return path;
};

const r = (id: string, status: GradedStatus, transport: 'stdio' | 'http' = 'stdio'): GradedResult => ({
  id,
  rule: 'X-1',
  level: 'MUST',
  title: id,
  status,
  transport,
  scenario: 's',
  ...(status === 'fail' ? { message: 'it failed' } : {}),
});

describe('reading a baseline: anything wrong is a usage error', () => {
  test('YAML and JSON, with globs and an optional transport', () => {
    const yaml = file(
      'ok.yml',
      'version: 1\nexpectedFailures:\n  - id: launcher/*\n    reason: "tracked: #1"\n  - id: capability/advertised\n    reason: r\n    transport: http\n',
    );
    expect(loadBaseline(yaml).entries).toEqual([
      { id: 'launcher/*', reason: 'tracked: #1' },
      { id: 'capability/advertised', reason: 'r', transport: 'http' },
    ]);
    const json = file('ok.json', JSON.stringify({ expectedFailures: [{ id: 'a/b', reason: 'why' }] }));
    expect(loadBaseline(json)).toMatchObject({ format: 'json', entries: [{ id: 'a/b', reason: 'why' }] });
    expect(loadBaseline(file('empty.yml', '')).entries).toEqual([]);
  });
  test.each([
    ['no-reason.yml', 'expectedFailures:\n  - id: launcher/*\n', /entry 1 \(launcher\/\*\) needs a "reason"/],
    ['blank-reason.yml', 'expectedFailures:\n  - id: launcher/*\n    reason: "  "\n', /needs a "reason"/],
    ['bad.yml', 'expectedFailures: [\n  - id: x', /is not valid YAML/],
    ['bad.json', '{"expectedFailures": [', /is not valid JSON/],
    ['unknown-key.yml', 'expectedFailures:\n  - id: a/b\n    reason: r\n    why: x\n', /unknown key "why"/],
    ['bad-transport.yml', 'expectedFailures:\n  - id: a/b\n    reason: r\n    transport: smoke\n', /"transport" must be stdio or http/],
    ['not-a-list.yml', 'expectedFailures: launcher/*\n', /must be a list/],
    ['top-level-list.yml', '- id: a/b\n  reason: r\n', /must hold a mapping/],
  ])('%s', (name, text, message) => {
    const path = file(name, text);
    expect(() => loadBaseline(path)).toThrow(UsageError);
    expect(() => loadBaseline(path)).toThrow(message);
  });
  test('a missing file is an error, unless the run is about to write it', () => {
    expect(() => loadBaseline(join(scratch, 'none.yml'))).toThrow(/does not exist/);
    expect(loadBaseline(join(scratch, 'none.yml'), { mayBeMissing: true }).entries).toEqual([]);
  });
});

describe('applying a baseline', () => {
  const entries: BaselineEntry[] = [
    { id: 'launcher/*', reason: 'glob' },
    { id: 'capability/advertised', reason: 'http only', transport: 'http' },
    { id: 'no-such/check', reason: 'typo' },
  ];
  const results = [
    r('launcher/absent-fails-closed', 'fail'),
    r('launcher/not-an-object', 'warn'),
    r('launcher/missing-file', 'pass'),
    r('launcher/relative-path', 'skip'),
    r('capability/advertised', 'fail', 'stdio'),
    r('capability/advertised', 'fail', 'http'),
  ];
  const outcome = applyBaseline(results, entries, allChecks, 'b.yml');
  test('a listed failure or warning is xfail; a listed pass is xpass; skips stay; unlisted stay', () => {
    expect(outcome.results.map((x) => `${x.id} ${x.transport} ${x.status}`)).toEqual([
      'launcher/absent-fails-closed stdio xfail',
      'launcher/not-an-object stdio xfail',
      'launcher/missing-file stdio xpass',
      'launcher/relative-path stdio skip',
      'capability/advertised stdio fail',
      'capability/advertised http xfail',
    ]);
    expect(outcome.results[1]!.baseline).toEqual({ entry: entries[0], was: 'warn' });
    expect(outcome.results[2]!.message).toMatch(/passes now, but baseline b.yml expects it to fail \("glob"\): remove the entry "launcher\/\*"/);
  });
  test('stale entries and entries that name no check are reported', () => {
    expect(outcome.stale).toEqual([entries[0]]);
    expect(outcome.unknown).toEqual([entries[2]]);
  });
});

describe('grading a check that could not run because another failed', () => {
  const exit = (results: GradedResult[]) => exitCodeFor({ scenarios: [], results, durationMs: 0 });
  test('blocked by an expected failure (directly or in turn): not incomplete, exit 0', () => {
    const results = blockedResults({ baseline: true, unblocked: false });
    expect(results[0]!.status).toBe('xfail');
    expect(results.slice(1).map((r) => blockedByExpectedFailure(r, results))).toEqual([true, true, true]);
    expect(exit(results)).toBe(0);
  });
  test('one with no blocker still makes the run incomplete: exit 3', () => {
    const results = blockedResults({ baseline: true });
    expect(blockedByExpectedFailure(results.at(-1)!, results)).toBe(false);
    expect(exit(results)).toBe(3);
  });
  test('blocked by an unexpected failure: exit 1, the failure', () => {
    const results = blockedResults({ unblocked: false });
    expect(results.slice(1).some((r) => blockedByExpectedFailure(r, results))).toBe(false);
    expect(exit(results)).toBe(1);
  });
  test('a blocker that is a warning, that passed, or that did not run at all excuses nothing', () => {
    const [control, ...blocked] = blockedResults({ unblocked: false });
    for (const status of ['warn', 'pass', 'skip'] as const) expect(exit([{ ...control!, status }, ...blocked]), status).toBe(3);
    expect(exit(blocked)).toBe(3);
  });
  test('a blocker --skip left out is set aside like an expected failure; one merely not selected (--only) is not', () => {
    const blocked = blockedResults({ unblocked: false }).slice(1);
    const skipped = ['launcher/runs-given-executable'];
    expect(blocked.map((r) => blockedByExpectedFailure(r, blocked, skipped))).toEqual([true, true, true]);
    expect(exitCodeFor({ scenarios: [], results: blocked, durationMs: 0, skipped })).toBe(0);
    expect(exitCodeFor({ scenarios: [], results: blocked, durationMs: 0, skipped: ['capability/advertised'] })).toBe(3);
    // Left out, but its result is there all the same (another transport's): that result decides.
    const [control] = blockedResults({ unblocked: false });
    expect(exitCodeFor({ scenarios: [], results: [control!, ...blocked], durationMs: 0, skipped })).toBe(1);
  });
  test('the blocker on the same transport decides; a cycle is not an excuse', () => {
    const [control, argv] = blockedResults({ baseline: true, unblocked: false });
    const httpArgv = { ...argv!, transport: 'http' as const };
    const withHttpControl = [control!, { ...control!, transport: 'http' as const, status: 'warn' as const }, httpArgv];
    expect(blockedByExpectedFailure(httpArgv, withHttpControl)).toBe(false);
    expect(exit(withHttpControl)).toBe(3);
    // No result of the blocker on its own transport: the other transport's decides.
    expect(exit([control!, httpArgv])).toBe(0);
    const a: GradedResult = { ...argv!, id: 'forwarding/argv-shape', blockedBy: 'forwarding/state-unchanged' };
    const b: GradedResult = { ...argv!, id: 'forwarding/state-unchanged', blockedBy: 'forwarding/argv-shape' };
    expect(exit([a, b])).toBe(3);
  });
});

describe('--update-baseline, as a function', () => {
  test('keeps reasons that still apply, narrows a glob that lists a pass, drops stale and unknown entries, adds the new', () => {
    const entries: BaselineEntry[] = [
      { id: 'launcher/*', reason: 'launcher work, #7' },
      { id: 'forwarding/state-unchanged', reason: 'fixed since' },
      { id: 'aliases/*', reason: 'not run this time' },
      { id: 'gone/check', reason: 'renamed' },
    ];
    const results = [
      r('launcher/absent-fails-closed', 'fail'),
      r('launcher/not-an-object', 'pass'),
      r('forwarding/state-unchanged', 'pass'),
      r('capability/advertised', 'fail', 'stdio'),
      r('capability/advertised', 'pass', 'http'),
      r('capability/current-name', 'warn', 'stdio'),
      r('capability/current-name', 'warn', 'http'),
    ];
    const launcherIds = allChecks.filter((c) => c.id.startsWith('launcher/')).map((c) => c.id);
    const updated = updatedEntries(results, entries, allChecks);
    expect(updated).toEqual([
      { id: 'launcher/absent-fails-closed', reason: 'launcher work, #7' },
      // The glob's other checks did not run this time: they keep their reason, now one by one.
      ...launcherIds
        .filter((id) => id !== 'launcher/absent-fails-closed' && id !== 'launcher/not-an-object')
        .map((id) => ({ id, reason: 'launcher work, #7' })),
      { id: 'aliases/*', reason: 'not run this time' },
      { id: 'capability/advertised', reason: PLACEHOLDER_REASON, transport: 'stdio' },
      { id: 'capability/current-name', reason: PLACEHOLDER_REASON },
    ]);
  });
});

describe('the round trip through the CLI', () => {
  // forwarding/state-fidelity is left out: against this mutant it cannot run (exit 3, incomplete).
  const only = ['--only', 'forwarding/*', '--skip', 'forwarding/state-fidelity'];
  const mutant = [...only, '--', process.execPath, mutantsServer, 'drops-unknown-fields'];
  const reference = [...only, referenceServer];
  const baseline = join(scratch, 'trip', 'baseline.yml');

  test('write, rerun green with xfail, keep reasons, then the fixed server makes the entry stale', async () => {
    // 1. Write it from a failing run: the run itself is then green.
    const write = await runCli(['--baseline', baseline, '--update-baseline', ...mutant]);
    expect(write.code, write.stdout + write.stderr).toBe(0);
    expect(write.stdout).toContain(`Baseline ${baseline} rewritten: 1 entry, 1 with the placeholder reason`);
    const written = YAML.parse(readFileSync(baseline, 'utf8'));
    expect(written).toEqual({ version: 1, expectedFailures: [{ id: 'forwarding/state-unchanged', reason: PLACEHOLDER_REASON }] });
    expect(readFileSync(baseline, 'utf8')).toMatch(/^# mcp-sandbox-conformance baseline/);

    // 2. Give the entry its real reason; the rerun passes with an expected failure.
    writeFileSync(baseline, readFileSync(baseline, 'utf8').replace(PLACEHOLDER_REASON, 'waiting on the typed-state rewrite, #42'));
    const rerun = await runCli(['--baseline', baseline, ...mutant]);
    expect(rerun.code).toBe(0);
    expect(rerun.stdout).toMatch(/XFAIL\s+forwarding\/state-unchanged/);
    expect(rerun.stdout).toContain('expected failure, baseline entry "forwarding/state-unchanged": waiting on the typed-state rewrite, #42');
    expect(lastLine(rerun.stdout)).toBe('1 passed, 0 failed, 0 skipped, 1 expected failure');
    expect(rerun.stdout).not.toContain('not in a baseline');

    // 3. Updating again keeps the reason.
    const again = await runCli(['--baseline', baseline, '--update-baseline', ...mutant]);
    expect(again.code).toBe(0);
    expect(YAML.parse(readFileSync(baseline, 'utf8')).expectedFailures).toEqual([
      { id: 'forwarding/state-unchanged', reason: 'waiting on the typed-state rewrite, #42' },
    ]);

    // 4. The reference server passes the check: the entry is stale and the run fails, naming it.
    const stale = await runCli(['--baseline', baseline, ...reference]);
    expect(stale.code).toBe(1);
    expect(stale.stdout).toMatch(/XPASS\s+forwarding\/state-unchanged/);
    expect(stale.stdout).toContain(`Stale baseline entries in ${baseline}: their checks pass now, remove them`);
    expect(stale.stdout).toContain('  - forwarding/state-unchanged: waiting on the typed-state rewrite, #42');
    expect(lastLine(stale.stdout)).toBe('1 passed, 0 failed, 0 skipped, 1 unexpectedly passed');

    // 5. Updating from the fixed server empties the baseline.
    const cleaned = await runCli(['--baseline', baseline, '--update-baseline', ...reference]);
    expect(cleaned.code).toBe(0);
    expect(YAML.parse(readFileSync(baseline, 'utf8')).expectedFailures).toEqual([]);
  });

  test('the JSON report carries the baseline marks and the stale entries', async () => {
    const json = file('trip.json', JSON.stringify({ expectedFailures: [{ id: 'forwarding/state-*', reason: 'known' }] }));
    const run = await runCli(['--baseline', json, '--reporter', 'json', ...reference]);
    expect(run.code).toBe(1);
    const doc = JSON.parse(run.stdout);
    expect(doc.summary).toMatchObject({ xpass: 1, failed: 0 });
    expect(doc.baseline.staleEntries).toEqual([{ id: 'forwarding/state-*', reason: 'known' }]);
    expect(doc.checks.find((c: { id: string }) => c.id === 'forwarding/state-unchanged')).toMatchObject({
      status: 'xpass',
      baseline: { id: 'forwarding/state-*', was: 'pass' },
    });
  });

  test('an entry that names no check fails an otherwise green run', async () => {
    const path = file(
      'unknown.yml',
      'expectedFailures:\n  - id: forwarding/state-unchanged\n    reason: known\n  - id: forwarding/no-such-check\n    reason: typo\n',
    );
    const run = await runCli(['--baseline', path, '--reporter', 'github', ...mutant]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `::error title=baseline ${path.replace(/:/g, '%3A').replace(/,/g, '%2C')}::the entry "forwarding/no-such-check" names no check`,
    );
    expect(run.stderr).toContain(`Baseline entries in ${path} that name no check`);
  });

  test('--update-baseline writes JSON for a .json file', async () => {
    const path = join(scratch, 'new.json');
    const run = await runCli(['--baseline', path, '--update-baseline', ...mutant]);
    expect(run.code).toBe(0);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({
      version: 1,
      expectedFailures: [{ id: 'forwarding/state-unchanged', reason: PLACEHOLDER_REASON }],
    });
  });

  test.each([
    ['no-reason.yml', 'expectedFailures:\n  - id: forwarding/*\n', /needs a "reason"/],
    ['broken.yml', 'expectedFailures: [', /is not valid YAML/],
  ])('an invalid baseline (%s) is exit 2, before anything runs', async (name, text, message) => {
    const run = await runCli(['--baseline', file(`cli-${name}`, text), ...mutant]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
  });
});

describe('a baseline for the control failure: the checks it blocked do not make the run incomplete', () => {
  // The mutant refuses a call that carries both state keys, and the control call (everything Codex
  // sends) carries both: launcher/runs-given-executable fails and most exec checks could not run,
  // blocked by it (the session checks too: opening the session is refused for the same reason).
  // The run keeps each way a check comes to be blocked: by the control directly, from its own
  // scenario (forwarding/*, aliases/both-keys) and from scenarios of their own (launcher/*), in turn
  // (forwarding/state-fidelity, blocked by forwarding/state-unchanged), and the session checks. The
  // other exec checks are blocked the same direct way, and the checks that call no tool (catalog,
  // capability, resources) are never blocked: they would only add server starts.
  const blockable = ['launcher/*', 'forwarding/*', 'aliases/both-keys', 'authority/session-*'].flatMap((glob) => ['--only', glob]);
  const args = (...extra: string[]) => ['--config', referenceConfig, ...blockable, ...extra, '--', process.execPath, mutantsServer, 'rejects-both-keys'];
  const dir = join(scratch, 'blocked');
  const baseline = join(dir, 'b.yml');
  const env = () => ({ TMPDIR: mkdtempSync(join(scratch, 'tmp-')) });
  mkdirSync(dir, { recursive: true });

  test('fails (exit 1); --update-baseline writes the entry; the rerun is green (exit 0)', async () => {
    const first = await runCli(args('--reporter', `json=${join(dir, 'first.json')}`), { env: env() });
    expect(first.code, first.stdout).toBe(1);
    expect(first.stdout).toMatch(/FAIL\s+launcher\/runs-given-executable/);
    expect(first.stdout).toMatch(/SKIP\s+forwarding\/argv-shape[^\n]*\n\s+could not run \(blocked by launcher\/runs-given-executable\): /);
    const firstDoc = JSON.parse(readFileSync(join(dir, 'first.json'), 'utf8'));
    const blocked = firstDoc.checks.filter((c: { blockedBy?: string }) => c.blockedBy);
    expect(blocked.length).toBeGreaterThan(10);
    expect(blocked.every((c: { blockedByExpectedFailure: boolean }) => c.blockedByExpectedFailure === false)).toBe(true);

    const write = await runCli(args('--baseline', baseline, '--update-baseline'), { env: env() });
    expect(write.code, write.stdout).toBe(0);
    expect(YAML.parse(readFileSync(baseline, 'utf8')).expectedFailures).toEqual([{ id: 'launcher/runs-given-executable', reason: PLACEHOLDER_REASON }]);

    const tmp = env();
    const rerun = await runCli(args('--baseline', baseline, '--reporter', `json=${join(dir, 'rerun.json')}`), { env: tmp });
    expect(rerun.code, rerun.stdout).toBe(0);
    expect(rerun.stdout).toMatch(/XFAIL\s+launcher\/runs-given-executable/);
    expect(rerun.stdout).toContain('could not run (blocked by launcher/runs-given-executable, an expected failure): ');
    expect(rerun.stdout).toContain('could not run (blocked by forwarding/state-unchanged, itself blocked by an expected failure): ');
    expect(lastLine(rerun.stdout)).toMatch(/^\d+ passed, 0 failed, \d+ skipped, 1 expected failure$/);
    const doc = JSON.parse(readFileSync(join(dir, 'rerun.json'), 'utf8'));
    expect(doc.exitCode).toBe(0);
    expect(doc.checks.filter((c: { blockedBy?: string }) => c.blockedBy).every((c: { blockedByExpectedFailure: boolean }) => c.blockedByExpectedFailure)).toBe(
      true,
    );
    expect(readdirSync(tmp.TMPDIR)).toEqual([]);
  }, 600_000);
});
