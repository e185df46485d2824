import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { root } from './helpers.js';
import { reporterFlags, runCli, type CliRun } from './fixtures/run-cli.js';

/**
 * Bounded whatever the server sends: correct servers that write a lot (large results, floods of
 * notifications and stderr, one huge message) get the verdicts the same server gets when it says
 * little, and the CLI's own peak RSS stays under 250 MB. Before the bounds these runs took 0.5 to
 * 2 GB. The checks chosen make many calls (each result is kept by its probe record and transcript).
 * Results of 10 MB each, and the whole run's memory with the servers', are measured by the bench
 * (bench/whole-run-memory.mjs; README, "The whole run's memory"): under load, with every call that
 * slow, the resident's core calls may not finish in a run this short, which is not what is measured here.
 */

const CHATTY = join(root, 'fixtures/servers/chatty.mjs');
const CONFIG = join(root, 'fixtures/servers/mutant-base/mcp-sandbox-conformance.json');
const ONLY = ['--only', 'execution/*', '--only', 'forwarding/*'];
const PEAK_RSS_MB = 250;
/** Each run moves tens to hundreds of MB through the CLI: 15 to 40 s on an idle 2-core machine, more under load. */
const HEAVY_MS = 300_000;
const scratch = mkdtempSync(join(tmpdir(), 'bounded-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let runs = 0;
/** The selected checks on chatty.mjs with `serverArgs`, over stdio (and HTTP, started by --http-command, when `http`). */
async function run(serverArgs: string[], options: { http?: boolean; only?: string[] } = {}): Promise<{ cli: CliRun; verdicts: string[] }> {
  const report = join(scratch, `r${++runs}.json`);
  const http = options.http ? ['--http-command', `${process.execPath} ${CHATTY} ${serverArgs.join(' ')} --http --port {port}`] : [];
  const cli = await runCli(
    ['--config', CONFIG, ...(options.only ?? ONLY), ...reporterFlags({ json: report }), ...http, '--', process.execPath, CHATTY, ...serverArgs],
    {
      cwd: scratch,
      peakRss: true,
    },
  );
  const checks = (JSON.parse(readFileSync(report, 'utf8')) as { checks: { id: string; transport: string; status: string }[] }).checks;
  return { cli, verdicts: checks.map((c) => `${c.id} ${c.transport} ${c.status}`).sort() };
}

describe('a correct server that says a lot gets the verdicts it gets saying little, in bounded memory', () => {
  let ordinary: { stdio: string[]; both: string[] };
  beforeAll(async () => {
    const [stdio, both] = await Promise.all([run([]), run([], { http: true })]);
    expect(stdio.cli.code, stdio.cli.stdout).toBe(0);
    expect(both.cli.code, both.cli.stdout).toBe(0);
    ordinary = { stdio: stdio.verdicts, both: both.verdicts };
  }, HEAVY_MS);

  test.each([
    ['every result carries 2 MB of build log, stdio and HTTP', ['--result-bytes', '2000000'], true],
    ['each call first sends 5,000 notifications/message and writes 1 MB to stderr', ['--notifications', '5000', '--stderr-bytes', '1000000'], false],
  ])(
    '%s',
    async (_, serverArgs, http) => {
      const { cli, verdicts } = await run(serverArgs, { http });
      expect(cli.code, cli.stdout).toBe(0);
      expect(verdicts).toEqual(http ? ordinary.both : ordinary.stdio);
      expect(cli.peakRssMb).toBeLessThan(PEAK_RSS_MB);
    },
    HEAVY_MS,
  );

  test(
    'one result of 60 MB (under the 64 MB message cap): judged, in bounded memory',
    async () => {
      const only = ['--only', 'execution/*'];
      const [huge, plain] = await Promise.all([run(['--first-result-bytes', '60000000'], { only }), run([], { only })]);
      expect(huge.cli.code, huge.cli.stdout).toBe(0);
      expect(huge.verdicts).toEqual(plain.verdicts);
      expect(huge.cli.peakRssMb).toBeLessThan(PEAK_RSS_MB);
    },
    HEAVY_MS,
  );
});
