import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseJunit, type TestCase } from 'junit2json';
import { afterAll, describe, expect, test } from 'vitest';
import { hostCheckDefs } from '../suites/host/index.js';
import { root } from './helpers.js';
import { reportValidator } from './fixtures/report-validator.js';
import { lastLine, runCli } from './fixtures/run-cli.js';

/**
 * Host mode through the same results pipeline as server mode: every reporter, --transcripts and
 * the baseline, against the broken-host fixture (deterministic, no real Codex needed).
 */

const brokenHost = join(root, 'fixtures/hosts/broken-host.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'msc-host-reports-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
// The host runs' temp dirs go here, not where test/host-mode.test.ts checks that none is left.
const hostTmp = join(scratch, 'tmp');
mkdirSync(hostTmp);
const cli = (args: string[], cwd?: string) => runCli(args, { cwd, env: { TMPDIR: hostTmp } });

/**
 * The fixture with only Codex 0.171.0's defect: host/state-follows-policy-change fails on both
 * transports (its fixed script shows it; exploration, which test/host-mode.test.ts covers, is off).
 */
const lagging = ['host', '--codex', brokenHost, '--env', 'BROKEN_HOST_DEFECTS=state-lags-policy-change', '--policy-changes', '3', '--no-explore'];
const BASELINE = [
  'version: 1',
  'expectedFailures:',
  '  - id: host/state-follows-policy-change',
  '    reason: "the host sends the previous policy\'s state after a change"',
  '',
].join('\n');

function workdir(name: string): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'b.yml'), BASELINE);
  return dir;
}

describe('host --reporter json --reporter junit --baseline --transcripts', () => {
  test('the expected failure is xfail (exit 0), the JSON validates, the JUnit parses, transcripts are written', async () => {
    const cwd = workdir('xfail');
    const run = await cli(
      [...lagging, '--reporter', 'json=h.json', '--reporter', 'junit=h.xml', '--reporter', 'html=h.html', '--baseline', 'b.yml', '--transcripts', 't'],
      cwd,
    );
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^mcp-sandbox-conformance \S+ · host mode · recording servers watch: /);
    expect(run.stdout).not.toMatch(/exec tool/);
    expect(run.stdout).toMatch(/XFAIL\s+host\/state-follows-policy-change\s+stdio\s/);
    expect(run.stdout).toMatch(/XFAIL\s+host\/state-follows-policy-change\s+http\s/);
    expect(lastLine(run.stdout)).toMatch(/^\d+ passed, 0 failed, 0 skipped, 2 expected failures$/);

    const doc = JSON.parse(readFileSync(join(cwd, 'h.json'), 'utf8'));
    const validate = reportValidator();
    expect(validate(doc), JSON.stringify(validate.errors, null, 2)).toBe(true);
    expect(doc).toMatchObject({ exitCode: 0, target: { display: brokenHost }, server: {}, summary: { xfail: 2, failed: 0 } });
    expect(doc.exec).toBeUndefined();
    // The servers' PID-namespace containment is not what runs a host: the report does not claim it.
    expect(doc.containment).toBeUndefined();
    expect(run.stdout).not.toMatch(/^containment:/m);
    const xfail = doc.checks.filter((c: { id: string }) => c.id === 'host/state-follows-policy-change');
    expect(xfail.map((c: { status: string; rule: string }) => [c.status, c.rule])).toEqual([
      ['xfail', 'HOST-2'],
      ['xfail', 'HOST-2'],
    ]);
    expect(xfail[0].baseline).toMatchObject({ id: 'host/state-follows-policy-change', was: 'fail' });
    // Each check names the transcript of its host scenario, and it holds what the host sent.
    for (const check of doc.checks) {
      expect(check.transcript.file, check.id).toBeDefined();
      expect(existsSync(join(cwd, check.transcript.file)), check.transcript.file).toBe(true);
    }
    const lines = readFileSync(join(cwd, xfail[0].transcript.file), 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines[0]).toMatchObject({ dir: 'meta', scenario: 'host' });
    expect(lines.some((l) => l.dir === 'host->server' && l.message.method === 'tools/call')).toBe(true);

    const junit = (await parseJunit(readFileSync(join(cwd, 'h.xml'), 'utf8'))) as {
      tests?: number;
      failures?: number;
      testsuite?: { testcase?: TestCase[] }[];
    };
    const cases = junit.testsuite!.flatMap((s) => s.testcase ?? []);
    expect(cases).toHaveLength(doc.checks.length);
    expect(junit.failures).toBe(0);
    const skipped = cases.filter((c) => c.classname === 'host' && c.name?.startsWith('state-follows-policy-change'));
    expect(skipped).toHaveLength(2);
    for (const c of skipped) expect(JSON.stringify(c.skipped)).toContain("the host sends the previous policy's state after a change");
    expect(readFileSync(join(cwd, 'h.html'), 'utf8')).not.toContain('exec tool');
    expect(readdirSync(hostTmp)).toEqual([]);
  }, 120_000);

  // Only the check the baseline is about: it is judged from the app-server session alone, so the
  // exec run (which host/state-* would add, for host/state-keys-identical) has nothing to show here.
  test('without the baseline the failure fails the run (exit 1) with an entry to paste; a stale entry is xpass (exit 1)', async () => {
    const failing = await cli([...lagging, '--transport', 'stdio', '--only', 'host/state-follows-policy-change', '--reporter', 'json=h.json'], workdir('fail'));
    expect(failing.code, failing.stdout).toBe(1);
    expect(failing.stdout).toMatch(/FAIL\s+host\/state-follows-policy-change\s/);
    expect(failing.stdout).toContain('  - id: host/state-follows-policy-change');
    const doc = JSON.parse(readFileSync(join(scratch, 'fail', 'h.json'), 'utf8'));
    expect(doc.unexpectedFailures).toEqual([{ id: 'host/state-follows-policy-change', reason: 'TODO: why this is expected' }]);

    const fixed = await cli(
      [
        'host',
        '--codex',
        brokenHost,
        '--env',
        'BROKEN_HOST_DEFECTS=none',
        '--policy-changes',
        '3',
        '--no-explore',
        '--transport',
        'stdio',
        '--only',
        'host/state-follows-policy-change',
        '--baseline',
        'b.yml',
      ],
      workdir('stale'),
    );
    expect(fixed.code, fixed.stdout).toBe(1);
    expect(fixed.stdout).toMatch(/XPASS\s+host\/state-follows-policy-change\s/);
    expect(fixed.stdout).toContain('Stale baseline entries');
  }, 120_000);

  test('a host that exits at once failed to start (exit 4): the JSON report says so, with its stderr', async () => {
    const dead = join(scratch, 'dead-host.mjs');
    writeFileSync(dead, "process.stderr.write('refusing to run\\n'); process.exit(3);\n");
    const cwd = workdir('dead');
    // One transport: the host is started the same way for each, and it dies the same way on both.
    const run = await cli(['host', '--codex', dead, '--transport', 'stdio', '--reporter', 'json=h.json'], cwd);
    expect(run.code, run.stdout).toBe(4);
    expect(run.stdout).toContain('The target failed to start');
    const doc = JSON.parse(readFileSync(join(cwd, 'h.json'), 'utf8'));
    expect(reportValidator()(doc)).toBe(true);
    expect(doc.exitCode).toBe(4);
    expect(doc.startFailure.stderrTail).toContain('refusing to run');
  }, 60_000);

  test('results flags are checked before the host starts (exit 2)', async () => {
    expect((await cli(['host', '--codex', brokenHost, '--reporter', 'yaml'])).code).toBe(2);
    expect((await cli(['host', '--codex', brokenHost, '--update-baseline'])).code).toBe(2);
    writeFileSync(join(scratch, 'a-file'), '');
    const unwritable = await cli(['host', '--codex', brokenHost, '--reporter', `json=${join(scratch, 'a-file', 'h.json')}`]);
    expect(unwritable.code).toBe(2);
    expect(unwritable.stderr).toContain('--reporter json=');
    expect(unwritable.stdout).toBe('');
  });
});

describe('list and explain cover the host checks', () => {
  test('list shows every host check with its transports; explain <id> and explain HOST-3 explain them', async () => {
    const list = await cli(['list']);
    expect(list.code).toBe(0);
    for (const check of hostCheckDefs)
      expect(list.stdout).toMatch(new RegExp(`^${check.id}\\s+${check.rule}\\s+${check.level}\\s+(stdio\\+http|stdio|http)\\s`, 'm'));
    const one = await cli(['explain', 'host/no-launcher-over-http']);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('How hosts get it wrong: ');
    const rule = await cli(['explain', 'HOST-3']);
    expect(rule.code).toBe(0);
    expect(rule.stdout).toMatch(/^HOST-3 \(CONTRACT\.md §4\): 4 checks/);
  });
});
