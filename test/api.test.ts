import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test, vi } from 'vitest';
import { checkServer, TargetNotFound, UsageError, type CheckServerOptions } from '../cli/api.js';
import { runCli } from './fixtures/run-cli.js';
import { taggedProcesses } from './fixtures/processes.js';
import { reportValidator } from './fixtures/report-validator.js';
import { referenceServer } from './helpers.js';

/**
 * checkServer (cli/api.ts) is the CLI's server mode from code: the same options (the flags,
 * camelCased) with the same errors, the JSON report as the result, no output unless asked, and an
 * AbortSignal that ends the run as Ctrl-C would. (test/package.test.ts runs it from the packed
 * tarball, and compares its verdicts with the CLI's.)
 */

const scratch = mkdtempSync(join(tmpdir(), 'msc-api-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

test.each<[string, CheckServerOptions, string[], number]>([
  ['a count out of range', { command: [referenceServer], jobs: 0 }, ['--jobs', '0', referenceServer], 2],
  [
    'a flag given twice',
    { command: [referenceServer], startupTimeout: [1, 2] as unknown as number },
    ['--startup-timeout', '1', '--startup-timeout', '2', referenceServer],
    2,
  ],
  ['a value not among the choices', { command: [referenceServer], failOn: 'may' as 'must' }, ['--fail-on', 'may', referenceServer], 2],
  ['a non-loopback URL', { url: 'http://192.0.2.1/mcp' }, ['--url', 'http://192.0.2.1/mcp'], 2],
  ['an empty value', { command: [referenceServer], envVar: '' }, ['--env-var=', referenceServer], 2],
  ['an option the CLI does not have', { command: [referenceServer], ['exploreHarder' as 'explore']: 1 }, ['--exploreHarder', '1', referenceServer], 2],
  ['no server', {}, [], 2],
  ['a server file that does not exist', { command: ['no-such-server.mjs'] }, ['no-such-server.mjs'], 4],
])('%s: rejects with the message the CLI prints, the error class telling its exit code', async (_name, options, argv, exitCode) => {
  const error = (await checkServer(options).then(
    () => undefined,
    (e: unknown) => e,
  )) as Error;
  expect(error).toBeInstanceOf(exitCode === 2 ? UsageError : TargetNotFound);
  const cli = await runCli(argv);
  expect(cli.code).toBe(exitCode);
  expect(cli.stderr).toBe(`mcp-sandbox-conformance: ${error.message}\n`);
});

test('resolves to the JSON report, and writes nothing to stdout or stderr unless given them', async () => {
  const stdout = vi.spyOn(process.stdout, 'write');
  const stderr = vi.spyOn(process.stderr, 'write');
  let terminal = '';
  try {
    const report = await checkServer({
      command: [referenceServer],
      only: ['capability/*'],
      explore: 0,
      stdout: { write: (text: string) => (terminal += text) },
    });
    expect(stdout).not.toHaveBeenCalled();
    expect(stderr).not.toHaveBeenCalled();
    const validate = reportValidator();
    expect(validate(report), JSON.stringify(validate.errors)).toBe(true);
    expect(report.exitCode).toBe(0);
    expect(report.checks.map((c) => `${c.transport} ${c.id} ${c.status}`)).toEqual(['stdio capability/advertised pass', 'stdio capability/current-name pass']);
    // What the CLI prints, colors off when the sink is no terminal: the human report, ending with its tally.
    expect(terminal).toMatch(/^PASS +capability\/advertised/m);
    expect(terminal.trimEnd().split('\n').at(-1)).toBe('2 passed, 0 failed, 0 skipped');
    expect(terminal).not.toMatch(/\x1b\[/);
  } finally {
    stdout.mockRestore();
    stderr.mockRestore();
  }
});

test('aborting ends every server the run started and removes its temp files, then rejects with the reason', async () => {
  // The run's temp dir goes under TMPDIR (os.tmpdir() reads it at each call): a private one, to be found empty.
  const privateTmp = mkdtempSync(join(scratch, 'tmp-'));
  const tag = `api-abort-${process.pid}`;
  const savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = privateTmp;
  const controller = new AbortController();
  let started = false;
  const run = checkServer({
    command: [referenceServer],
    env: [`MSC_API_TAG=${tag}`],
    explore: 0,
    // Unaborted, the run would last over a minute.
    soak: 60,
    signal: controller.signal,
    onProgress: (event) => (started ||= event.kind === 'scenario-start'),
  }).then(
    () => 'resolved',
    (error: unknown) => error,
  );
  try {
    // Abort while servers run (seen by their environment), not before anything started.
    for (let waited = 0; !(started && taggedProcesses('MSC_API_TAG', tag).length > 0) && waited < 30_000; waited += 50)
      await new Promise((r) => setTimeout(r, 50));
    expect(taggedProcesses('MSC_API_TAG', tag).length).toBeGreaterThan(0);
    expect(readdirSync(privateTmp).length).toBeGreaterThan(0);
    const abortedAt = Date.now();
    controller.abort(new Error('stop now'));
    const outcome = await run;
    expect(outcome).toEqual(new Error('stop now'));
    // The registry stops a server with SIGTERM, then SIGKILL after a grace of 1 s; the run waits at most 2 s for its scenarios.
    expect(Date.now() - abortedAt).toBeLessThan(10_000);
    expect(taggedProcesses('MSC_API_TAG', tag)).toEqual([]);
    expect(readdirSync(privateTmp)).toEqual([]);
  } finally {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
    controller.abort();
    await run;
  }
});

test('an AbortSignal already aborted: rejects before anything starts', async () => {
  await expect(checkServer({ command: [referenceServer], signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
});
