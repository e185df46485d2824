import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { containedLaunch, CONTAINMENT_ENV } from '../harness/process-group.js';
import { cliPath, root } from './helpers.js';
import { pidNamespacesOrFail } from './fixtures/requirements.js';

/**
 * A `setsid env -i` daemon (fixtures/servers/daemon-escape.mjs) leaves the server's session and
 * drops the run marker, so only a kernel mechanism can stop it. With a PID namespace per server it
 * dies with its server; with the sweep alone (forced) it survives, which shows the observation can
 * fail. The daemon proves it is alive by appending to a ticks file every 50 ms.
 */

const fixture = join(root, 'fixtures/servers/daemon-escape.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'containment-test-'));

/** Live processes whose command line names `dir` (the daemon's does: its ticks file is an argument). */
function processesNaming(dir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(dir) && !/\) Z /.test(readFileSync(`/proc/${name}/stat`, 'latin1'))) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

const ticksIn = (dir: string) => readdirSync(dir).filter((f) => f.startsWith('ticks.'));
const bytesIn = (dir: string) => ticksIn(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function run(dir: string, env: NodeJS.ProcessEnv, http: boolean) {
  const args = ['--reporter', 'json', '--only', 'capability/*', '--env', `DAEMON_ESCAPE_DIR=${dir}`];
  if (http) args.push('--http-command', `${process.execPath} ${fixture} --http --port {port}`);
  const child = spawn(process.execPath, [cliPath, ...args, fixture], { env: { ...process.env, NO_COLOR: '1', ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stderr, report: JSON.parse(stdout) as { containment?: { mechanism: string; detail: string } } };
}

/** Whether anything still appends to the ticks files, over a window of 8 ticks. */
async function stillTicking(dir: string): Promise<boolean> {
  const before = bytesIn(dir);
  await sleep(400);
  return bytesIn(dir) > before;
}

const survivors: number[] = [];
afterAll(() => {
  // Only the daemons the sweep test let live (ours, by PID).
  for (const pid of survivors) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(scratch, { recursive: true, force: true });
});

describe('containment', () => {
  test('a PID namespace per server: the setsid env -i daemon does not survive the run, over stdio and HTTP', async () => {
    pidNamespacesOrFail();
    const dir = mkdtempSync(join(scratch, 'kernel-'));
    const { code, report, stderr } = await run(dir, {}, true);
    expect(code).toBe(0);
    expect(report.containment?.mechanism).toBe('pid-namespace');
    expect(stderr).toMatch(/\ncontainment: pid-namespace: each server in a PID namespace of its own/);
    // The daemon ran (one per server start, each ticked before its server served) ...
    expect(ticksIn(dir).length).toBeGreaterThanOrEqual(2);
    expect(bytesIn(dir)).toBeGreaterThan(0);
    // ... and nothing of it is left.
    expect(await stillTicking(dir)).toBe(false);
    expect(processesNaming(dir)).toEqual([]);
  });

  test('the sweep alone (forced): the same daemon survives, and the report says so', async () => {
    const dir = mkdtempSync(join(scratch, 'sweep-'));
    const { code, report, stderr } = await run(dir, { [CONTAINMENT_ENV]: 'sweep' }, false);
    survivors.push(...processesNaming(dir));
    expect(code).toBe(0);
    expect(report.containment).toEqual({ mechanism: 'sweep', detail: expect.stringContaining(`${CONTAINMENT_ENV}=sweep`) });
    expect(stderr).toMatch(/\ncontainment: sweep: MCP_SANDBOX_CONFORMANCE_CONTAINMENT=sweep; only process groups/);
    expect(await stillTicking(dir)).toBe(true);
    expect(survivors.length).toBeGreaterThan(0);
  });

  test('in a namespace, a server killed by a signal is reported as killed by it; a missing command spawns as given', () => {
    pidNamespacesOrFail();
    const launch = containedLaunch(process.execPath, ['-e', '0'], process.env, undefined);
    expect(launch.command).toMatch(/unshare$/);
    expect(launch.args).toContain(process.execPath);
    // The shell that is PID 1 exits 128+N when the server dies of signal N.
    expect(launch.exit(137, null)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(launch.exit(3, null)).toEqual({ code: 3, signal: null });
    expect(launch.exit(null, 'SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    const missing = containedLaunch('no-such-server-xyz', ['a'], process.env, undefined);
    expect(missing).toMatchObject({ command: 'no-such-server-xyz', args: ['a'] });
  });
});
