import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { CONTAINMENT_ENV, ownCgroupDir } from '../harness/containment.js';
import { spawnTracked } from '../harness/process-registry.js';
import { cliPath, root } from './helpers.js';
import { cgroupsOrFail } from './fixtures/requirements.js';

/**
 * A `setsid env -i` daemon (fixtures/servers/daemon-escape.mjs) leaves the server's session and
 * its process tree at once, so only a kernel mechanism can stop it. With a cgroup per server it
 * dies with its server; with the sweep alone (forced) it is found only when a look at the tree
 * (every 100 ms) happens to fall in the millisecond it spends there, so it almost always survives.
 * The daemon proves it is alive by appending to a ticks file every 50 ms. The server also writes
 * what it saw of itself: its pid, its parent and its environment.
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
interface Seen {
  pid: number;
  ppid: number;
  http: boolean;
  env: Record<string, string>;
}
const seenIn = (dir: string): Seen[] =>
  readdirSync(dir)
    .filter((f) => f.startsWith('seen.'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Seen);

async function run(dir: string, env: NodeJS.ProcessEnv, http: boolean) {
  const args = ['--reporter', 'json', '--only', 'capability/*', '--env', `DAEMON_ESCAPE_DIR=${dir}`];
  if (http) args.push('--http-command', `${process.execPath} ${fixture} --http --port {port}`);
  const child = spawn(process.execPath, [cliPath, ...args, fixture], { env: { ...process.env, NO_COLOR: '1', ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stderr, pid: child.pid!, report: JSON.parse(stdout) as { containment?: { mechanism: string; detail: string } } };
}

/** Whether anything still appends to the ticks files, over a window of 8 ticks. */
async function stillTicking(dir: string): Promise<boolean> {
  const before = bytesIn(dir);
  await sleep(400);
  return bytesIn(dir) > before;
}

/** Names in `env` that mention the suite; only those the test's own environment has may appear (the user's, passed on). */
const suiteNames = (env: Record<string, string | undefined>) => Object.keys(env).filter((name) => /CONFORMANCE|MCP_SANDBOX/i.test(name));

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
  test('a cgroup per server: the setsid env -i daemon does not survive the run, over stdio and HTTP; servers see ordinary pids and nothing of ours', async () => {
    cgroupsOrFail();
    const dir = mkdtempSync(join(scratch, 'kernel-'));
    const { code, report, stderr, pid } = await run(dir, {}, true);
    expect(code).toBe(0);
    expect(report.containment?.mechanism).toBe('cgroup');
    expect(stderr).toMatch(/\ncontainment: cgroup: each server in a cgroup of its own/);
    // The daemon ran (one per server start, each ticked before its server served) ...
    expect(ticksIn(dir).length).toBeGreaterThanOrEqual(2);
    expect(bytesIn(dir)).toBeGreaterThan(0);
    // ... and nothing of it is left, nor the CLI's cgroups.
    expect(await stillTicking(dir)).toBe(false);
    expect(processesNaming(dir)).toEqual([]);
    expect(readdirSync(ownCgroupDir()!).filter((name) => name.startsWith(`tmp-${pid}-`))).toEqual([]);
    // Each server had a pid of its own, the CLI as the parent of a stdio server (as Codex is), and only the environment it was given.
    const seen = seenIn(dir);
    expect(seen.length).toBe(ticksIn(dir).length);
    expect(new Set(seen.map((s) => s.pid)).size).toBe(seen.length);
    expect(seen.every((s) => s.pid > 2)).toBe(true);
    for (const s of seen.filter((s) => !s.http)) expect(s.ppid).toBe(pid);
    for (const s of seen) expect(suiteNames(s.env)).toEqual(suiteNames(process.env));
  });

  test('the sweep alone (forced): the report says so, and the daemon, which left the tree at once, is almost never found', async () => {
    const dir = mkdtempSync(join(scratch, 'sweep-'));
    const { code, report, stderr } = await run(dir, { [CONTAINMENT_ENV]: 'sweep' }, false);
    survivors.push(...processesNaming(dir));
    expect(code).toBe(0);
    expect(report.containment).toEqual({ mechanism: 'sweep', detail: expect.stringContaining(`${CONTAINMENT_ENV}=sweep`) });
    expect(stderr).toMatch(/\ncontainment: sweep: MCP_SANDBOX_CONFORMANCE_CONTAINMENT=sweep; only process groups and the process trees recorded/);
    expect(bytesIn(dir)).toBeGreaterThan(0);
    // Whether a look caught it or not, the observation agrees with itself: a survivor ticks, none does not.
    expect(await stillTicking(dir)).toBe(survivors.length > 0);
  });

  test('spawnTracked with containment: the server is the process spawned, born in a cgroup of its own that goes with it; a missing command fails as Node reports it', async () => {
    cgroupsOrFail();
    const script = [
      "const cgroup = require('fs').readFileSync('/proc/self/cgroup', 'utf8').split('\\n').find((l) => l.startsWith('0::')).slice(3);",
      'process.stdout.write(JSON.stringify({ pid: process.pid, ppid: process.ppid, argv0: process.argv0, env: process.env, cgroup }));',
      "setTimeout(() => process.kill(process.pid, 'SIGKILL'), 50);",
    ].join('\n');
    const { child, stop } = spawnTracked('node', ['-e', script], { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'inherit'], contain: true });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
    // The exit status and signal are the server's own; it was born in the cgroup, with exactly the argv0 and environment given (no wrapper between us).
    expect([code, signal]).toEqual([null, 'SIGKILL']);
    const seen = JSON.parse(out) as { cgroup: string };
    expect(seen).toEqual({
      pid: child.pid,
      ppid: process.pid,
      argv0: 'node',
      env: { PATH: process.env.PATH },
      cgroup: expect.stringMatching(new RegExp(`/tmp-${process.pid}-[0-9a-f]+/\\d+$`)),
    });
    // Below our own cgroup (both paths are from the same cgroup namespace's root).
    const own = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'))!
      .slice(3);
    const cgroup = join(ownCgroupDir()!, seen.cgroup.slice(own.length));
    expect(existsSync(cgroup)).toBe(true);
    await stop();
    expect(existsSync(cgroup)).toBe(false);
    // The parent goes with the last server cgroup.
    expect(existsSync(join(cgroup, '..'))).toBe(false);
    const missing = spawnTracked('no-such-server-xyz', ['a'], { stdio: 'ignore', contain: true });
    const error = await new Promise<Error>((resolve) => missing.child.once('error', resolve));
    expect((error as NodeJS.ErrnoException).code).toBe('ENOENT');
  });
});
