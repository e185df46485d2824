import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createProgress, inCI, progressLine } from '../cli/progress.js';
import { CONTROL_PATIENCE_MS } from '../suites/engine/jobs.js';
import { DEFAULT_SLOW_COMMAND_MS } from '../suites/server/lifetime.js';
import { bundledCli, chaosServer, cliPath, referenceServer } from './helpers.js';
import { exploring } from './fixtures/run-cli.js';
import { cgroupsOrFail, scriptOrFail } from './fixtures/requirements.js';
import { taggedProcesses } from './fixtures/processes.js';

/**
 * Hostile and broken targets (fixtures/servers/chaos.mjs, and tiny HTTP servers started here).
 * For each: the run ends within a stated bound, the affected checks are `error` or "could not
 * run" with the cause (never `pass`), the exit code is 3 or 4, and afterwards no process of the
 * run is left (every process the server started carries CHAOS_TAG=<tag> in its environment, and
 * the leftover children are also logged by pid) and the private TMPDIR is empty.
 */

// Node + yargs + our imports, on a loaded 2-core machine: what a wall-clock bound allows on top
// of the run itself (the run's own duration, from the JSON report, is held to the tight bound).
const CLI_OVERHEAD_MS = 4000;

/**
 * The bound on how long a run may go on after a budget of `budgetMs` expires: a second on an idle
 * machine, or three times what a run that ends at once (its target exits at start) takes right
 * now, whichever is more, so the bound is a ratio to a time measured beside it on a loaded machine.
 */
async function afterBudget(budgetMs: number): Promise<number> {
  const yardstick = await cli(['--jobs', '4', chaosServer, 'exits-at-once']);
  return budgetMs + Math.max(1000, 3 * yardstick.report!.durationMs);
}
/** "no answer within the startup timeout (N ms)": N is what was left of the budget, at most all of it. */
const leftOfBudget = (message: string | undefined, budgetMs: number) => {
  const left = Number(/no answer within the startup timeout \((\d+) ms\)/.exec(message ?? '')?.[1]);
  return left > budgetMs / 2 && left <= budgetMs;
};

const scratch = mkdtempSync(join(tmpdir(), 'msc-chaos-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let counter = 0;

interface CheckRecord {
  id: string;
  transport: string;
  status: string;
  skipReason?: string;
  message?: string;
  needs?: string[];
}
interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  report?: { durationMs: number; exitCode: number; startFailure?: { message: string }; checks: CheckRecord[] };
  /** The CLI's own peak RSS in MB (not its servers'). */
  peakRssMb: number;
  tag: string;
  /** The pids chaos servers and their leftover children logged. */
  logged: { servers: number[]; children: number[] };
  tmp: string;
}

/** Live processes whose environment carries CHAOS_TAG=<tag>: the processes of that run. */
const tagged = (tag: string): number[] => taggedProcesses('CHAOS_TAG', tag);
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const rssProbe = `data:text/javascript,${encodeURIComponent(
  "import { writeSync } from 'node:fs'; process.on('exit', () => writeSync(2, `\\nCHAOS_TEST_MAXRSS_KB=${process.resourceUsage().maxRSS}\\n`));",
)}`;

interface CliOptions {
  env?: Record<string, string>;
  /** Environment for the server (passed with --env), on top of CHAOS_TAG and CHAOS_LOG. */
  serverEnv?: Record<string, string>;
  /** Called once the run is under way, with the child (for signal tests). */
  during?: (child: ReturnType<typeof spawn>, run: { tag: string; log: string }) => Promise<void>;
  json?: boolean;
}

/** Runs the built CLI (bundled, see test/fixtures/run-cli.ts) with a private TMPDIR, a fresh tag, the JSON report on stdout and the human one on stderr. */
async function cli(args: string[], options: CliOptions = {}): Promise<Run> {
  const n = ++counter;
  const tag = `chaos${process.pid}x${n}`;
  const tmp = mkdtempSync(join(scratch, `tmp-${n}-`));
  const log = join(scratch, `log-${n}`);
  const serverEnv = { CHAOS_TAG: tag, CHAOS_LOG: log, ...options.serverEnv };
  const envFlags = Object.entries(serverEnv).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
  const json = options.json ?? true;
  expect(tagged(tag)).toEqual([]);
  expect(readdirSync(tmp)).toEqual([]);
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', rssProbe, bundledCli, ...exploring([...(json ? ['--reporter', 'json'] : []), ...envFlags, ...args])], {
    env: { ...process.env, NO_COLOR: '1', TMPDIR: tmp, ...options.env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const closed = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (code, signal) => resolve([code, signal])));
  if (options.during) await options.during(child, { tag, log });
  const [code, signal] = await closed;
  const ms = Date.now() - started;
  const rss = Number(/CHAOS_TEST_MAXRSS_KB=(\d+)/.exec(stderr)?.[1] ?? 0);
  stderr = stderr.replace(/\nCHAOS_TEST_MAXRSS_KB=\d+\n/, '');
  let logText = '';
  try {
    logText = readFileSync(log, 'utf8');
  } catch {
    // no chaos server started
  }
  const pids = (kind: string) =>
    logText
      .split('\n')
      .filter((l) => l.endsWith(` ${kind}`))
      .map((l) => Number(l.split(' ')[0]));
  let report: Run['report'];
  if (json && stdout.trim().startsWith('{')) report = JSON.parse(stdout);
  return { code, signal, stdout, stderr, ms, report, peakRssMb: rss / 1024, tag, logged: { servers: pids('server'), children: pids('child') }, tmp };
}

/** Nothing of the run is left: no tagged process, no logged pid alive, the private TMPDIR empty. */
function expectNoSurvivors(run: Run): void {
  expect(tagged(run.tag)).toEqual([]);
  expect([...run.logged.servers, ...run.logged.children].filter(alive)).toEqual([]);
  expect(readdirSync(run.tmp)).toEqual([]);
}

/** No check passes, and every check that applies is an error or could not run. */
function expectNothingPassed(run: Run, ids?: RegExp): CheckRecord[] {
  const checks = run.report!.checks.filter((c) => !ids || ids.test(c.id));
  expect(checks.length).toBeGreaterThan(0);
  expect(checks.filter((c) => c.status === 'pass')).toEqual([]);
  for (const check of checks) {
    expect(check.status === 'error' || (check.status === 'skip' && (check.skipReason === 'could-not-run' || check.skipReason === 'not-applicable'))).toBe(true);
  }
  return checks;
}

/** Checks that run a command through the server (they all need an exec tool and the opt-in). */
const EXEC_CHECKS = /^(forwarding|aliases|launcher|authority)\//;
/**
 * Only the checks that call a tool, for targets that break on a call: the others (capability,
 * catalog, resources) make no call, so they would only add server starts that show nothing here.
 */
const ONLY_CALLS = ['forwarding', 'aliases', 'launcher', 'authority', 'execution'].flatMap((family) => ['--only', `${family}/*`]);

describe('a target dead at startup: exit 4 within the startup timeout + 1 s, nothing queued starts', () => {
  const STARTUP_S = 2;

  test('never answers initialize (--jobs 4)', async () => {
    const bound = await afterBudget(STARTUP_S * 1000);
    const run = await cli(['--startup-timeout', String(STARTUP_S), '--jobs', '4', chaosServer, 'never-initializes']);
    expect(run.code).toBe(4);
    expect(run.report!.startFailure!.message).toBe(`initialize failed: no answer within the startup timeout (${STARTUP_S * 1000} ms)`);
    expect(run.stderr).toMatch(/The target failed to start: initialize failed: no answer within the startup timeout \(2000 ms\)\n/);
    expect(run.stderr).toContain('chaos: waiting forever');
    const checks = expectNothingPassed(run);
    expect(checks.filter((c) => c.skipReason === 'could-not-run').length).toBeGreaterThan(20);
    // Only the first wave of scenarios (one per job) ever started a server.
    expect(run.logged.servers.length).toBeLessThanOrEqual(4);
    expect(run.report!.durationMs).toBeLessThan(bound);
    expect(run.ms).toBeLessThan(bound + CLI_OVERHEAD_MS);
    expectNoSurvivors(run);
  });

  test('prints non-JSON to stdout: the first such line is named', async () => {
    const bound = await afterBudget(STARTUP_S * 1000);
    const run = await cli(['--startup-timeout', String(STARTUP_S), '--jobs', '4', chaosServer, 'non-json-stdout']);
    expect(run.code).toBe(4);
    expect(run.report!.startFailure!.message).toMatch(
      /^initialize failed: no answer within the startup timeout \(2000 ms\); meanwhile \d+ stdout lines? that (is|are) not JSON, the first: "chaos server v0 listening on stdio"$/,
    );
    expectNothingPassed(run);
    expect(run.report!.durationMs).toBeLessThan(bound);
    expect(run.ms).toBeLessThan(bound + CLI_OVERHEAD_MS);
    expectNoSurvivors(run);
  });

  test('answers with the wrong id: the stray id is named', async () => {
    const bound = await afterBudget(STARTUP_S * 1000);
    const run = await cli(['--startup-timeout', String(STARTUP_S), '--jobs', '4', chaosServer, 'wrong-id']);
    expect(run.code).toBe(4);
    expect(run.report!.startFailure!.message).toBe(
      'initialize failed: no answer within the startup timeout (2000 ms); meanwhile the server sent 1 response with an id the host never used (1000)',
    );
    expectNothingPassed(run);
    expect(run.report!.durationMs).toBeLessThan(bound);
    expectNoSurvivors(run);
  });

  test('takes 5 s to start, over a 2 s startup timeout', async () => {
    const bound = await afterBudget(STARTUP_S * 1000);
    const run = await cli(['--startup-timeout', String(STARTUP_S), '--jobs', '4', chaosServer, 'slow-start']);
    expect(run.code).toBe(4);
    expect(run.report!.startFailure!.message).toBe('initialize failed: no answer within the startup timeout (2000 ms)');
    expectNothingPassed(run);
    expect(run.logged.servers.length).toBeLessThanOrEqual(4);
    expect(run.report!.durationMs).toBeLessThan(bound);
    expectNoSurvivors(run);
  });

  test('exits at once: stops at the first failure, long before any timeout', async () => {
    const run = await cli(['--jobs', '4', chaosServer, 'exits-at-once']);
    expect(run.code).toBe(4);
    expect(run.report!.startFailure!.message.split('\n')[0]).toBe('initialize failed: server exited (code 3)');
    // One wave (a job for each of the four), then one start for the environment diagnosis
    // (cli/diagnose.ts: it ended before initialize; with the full environment it fails too, so no search).
    expect(run.logged.servers.length).toBeLessThanOrEqual(4 + 1);
    expect(run.report!.durationMs).toBeLessThan(5000);
    expectNoSurvivors(run);
  });
});

describe('a target that starts and then misbehaves: exec checks error or could not run, exit 3', () => {
  test('crashes in the middle of a call (half a line, then SIGKILL): no call waits for its timeout', async () => {
    const CALL_S = 60;
    const run = await cli(['--call-timeout', String(CALL_S), ...ONLY_CALLS, chaosServer, 'crashes-mid-call']);
    expect(run.code).toBe(3);
    const checks = expectNothingPassed(run, EXEC_CHECKS);
    const errors = checks.filter((c) => c.status === 'error');
    expect(errors.length).toBeGreaterThan(5);
    for (const error of errors) {
      expect(error.message).toMatch(/server exited \(signal SIGKILL\)/);
      expect(error.message).not.toContain('\n');
    }
    expect(run.stderr).toMatch(/ERR\s+launcher\/absent-fails-closed[^\n]*\n\s+error: the call got no answer: .*server exited \(signal SIGKILL\)/);
    // Each call ends at the crash: the run is nowhere near one call timeout.
    expect(run.report!.durationMs).toBeLessThan((CALL_S * 1000) / 2);
    expectNoSurvivors(run);
  });

  test('answers a call with invalid JSON-RPC (null, an array, "jsonrpc": "1.0")', async () => {
    const run = await cli(['--call-timeout', '60', ...ONLY_CALLS, chaosServer, 'invalid-envelope']);
    expect(run.code).toBe(3);
    const checks = expectNothingPassed(run, EXEC_CHECKS);
    const errors = checks.filter((c) => c.status === 'error');
    expect(errors.length).toBeGreaterThan(5);
    for (const error of errors) expect(error.message).toMatch(/invalid JSON-RPC message \(\\?"jsonrpc\\?" is \\?"1\.0\\?", not \\?"2\.0\\?"\)/);
    expect(run.report!.durationMs).toBeLessThan(30_000);
    expectNoSurvivors(run);
  });

  test('never answers a call: the scenario timeout ends each scenario, its checks are errors', async () => {
    const SCENARIO_S = 3;
    const run = await cli([
      '--scenario-timeout',
      String(SCENARIO_S),
      '--call-timeout',
      '60',
      '--jobs',
      '16',
      '--only',
      'launcher/*',
      chaosServer,
      'hangs-on-call',
    ]);
    expect(run.code).toBe(3);
    const checks = expectNothingPassed(run);
    for (const check of checks)
      expect(check.message).toBe(`the scenario did not finish within the scenario timeout (${SCENARIO_S} s); raise it with --scenario-timeout`);
    // One wave (a job for each of the launcher scenarios), each cut at 3 s, started at most
    // CONTROL_PATIENCE_MS after the control's server (they wait for its facts that long), then the
    // resident server's wait for its core calls once they are done, at most a scenario timeout and
    // the length of its long commands (suites/server/lifetime.ts, ResidentLifecycle), plus the 1 s
    // kill grace at most, and 8 s for a loaded machine's starts (10.6 s seen with a full npm test
    // beside it): still well under the 60 s call timeout, which no call reached.
    expect(run.report!.durationMs).toBeLessThan(SCENARIO_S * 1000 + CONTROL_PATIENCE_MS + SCENARIO_S * 1000 + DEFAULT_SLOW_COMMAND_MS + 8000);
    expectNoSurvivors(run);
  });

  test('never answers a call: the run timeout ends the run, queued scenarios could not run', async () => {
    const RUN_S = 3;
    const run = await cli(['--run-timeout', String(RUN_S), '--call-timeout', '60', '--jobs', '2', chaosServer, 'hangs-on-call']);
    expect(run.code).toBe(3);
    expectNothingPassed(run, EXEC_CHECKS);
    const messages = run.report!.checks.map((c) => c.message ?? '');
    expect(messages).toContain(`the run timeout (${RUN_S} s) expired; raise it with --run-timeout`);
    expect(messages).toContain(`the run timeout (${RUN_S} s) expired before this scenario started; raise it with --run-timeout`);
    expect(run.report!.durationMs).toBeLessThan(RUN_S * 1000 + 3000);
    expect(run.ms).toBeLessThan(RUN_S * 1000 + 3000 + CLI_OVERHEAD_MS);
    expectNoSurvivors(run);
  });
});

describe('a 50 MB result: memory stays bounded', () => {
  const ONLY = ['--only', 'forwarding/*', '--only', 'launcher/runs-given-executable', '--only', 'aliases/both-keys'];

  test('over --max-message-mb: the connection fails with the reason, the checks are errors', async () => {
    const run = await cli([...ONLY, '--max-message-mb', '16', chaosServer, 'huge-result']);
    expect(run.code).toBe(3);
    const checks = expectNothingPassed(run);
    const error = checks.find((c) => c.status === 'error')!;
    expect(error.message).toMatch(/the server sent a message over the 16 MB limit \(\d+ bytes without a newline\): connection closed, server stopped/);
    expect(run.peakRssMb).toBeLessThan(250);
    expectNoSurvivors(run);
  });

  test('over the default 64 MB cap (a 100 MB line): cut at the cap', async () => {
    const run = await cli([...ONLY, chaosServer, 'huge-result'], { serverEnv: { CHAOS_RESULT_MB: '100' } });
    expect(run.code).toBe(3);
    expectNothingPassed(run);
    expect(run.report!.checks.find((c) => c.status === 'error')!.message).toMatch(/over the 64 MB limit/);
    expect(run.peakRssMb).toBeLessThan(400);
    expectNoSurvivors(run);
  });

  test('under the cap: accepted and judged on what happened (nothing ran, so nothing passes)', async () => {
    const run = await cli([...ONLY, chaosServer, 'huge-result']);
    // The server claims success and runs nothing: that is the control's failure (LAUNCH-1), found
    // for what it is (a success with no launch), not for the size; what it blocks could not run.
    expect(run.code).toBe(1);
    const checks = run.report!.checks;
    expect(checks.filter((c) => c.status === 'pass')).toEqual([]);
    expect(checks.find((c) => c.id === 'launcher/runs-given-executable')!.message).toMatch(
      /never ran the command through the codex\/sandbox-launcher codexExecutable/,
    );
    expect(checks.filter((c) => c.id.startsWith('forwarding/')).map((c) => c.skipReason)).toEqual(['could-not-run', 'could-not-run', 'could-not-run']);
    expect(checks.find((c) => c.id === 'aliases/both-keys')).toMatchObject({ skipReason: 'could-not-run', blockedBy: 'launcher/runs-given-executable' });
    // The 50 MB text is not copied into the report.
    expect(run.stdout.length).toBeLessThan(100_000);
    expect(run.peakRssMb).toBeLessThan(450);
    expectNoSurvivors(run);
  });
});

describe('cleanup: nothing of the run survives', () => {
  test('ignores SIGTERM: SIGKILL after the 1 s grace', async () => {
    const run = await cli(['--only', 'capability/*', chaosServer, 'ignores-sigterm']);
    expect(run.code).toBe(0);
    expect(run.logged.servers.length).toBe(1);
    // Startup, then at most the grace and the SIGKILL wait.
    expect(run.report!.durationMs).toBeLessThan(10_000);
    expectNoSurvivors(run);
  });

  // A child that both leaves the session and double-forks is out of every process tree at once:
  // only a server's cgroup still holds it (the sweep fallback, which no longer finds it by a marker in its environment, does not).
  test('children that leave the process group (setsid) or double-fork away', async () => {
    cgroupsOrFail();
    const run = await cli(['--only', 'capability/*', chaosServer, 'escapes-group']);
    expect(run.code).toBe(0);
    expect(run.logged.children.length).toBe(2);
    expectNoSurvivors(run);
  });

  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const) {
    test(`${signal} to the CLI: servers and their escaped children killed, temp dir removed, exit ${code}`, async () => {
      cgroupsOrFail();
      const run = await cli(['--startup-timeout', '30', chaosServer, 'never-initializes'], {
        serverEnv: { CHAOS_LEAVE: '1' },
        during: async (child, { tag, log }) => {
          // Once a server and both of its escaping children are up (and logged).
          const children = () =>
            existsSync(log)
              ? readFileSync(log, 'utf8')
                  .split('\n')
                  .filter((l) => l.endsWith(' child')).length
              : 0;
          for (let waited = 0; (tagged(tag).length < 3 || children() < 2) && waited < 20_000; waited += 50) await sleep(50);
          expect(tagged(tag).length).toBeGreaterThanOrEqual(3);
          child.kill(signal);
        },
      });
      expect(run.code).toBe(code);
      expect(run.stderr).toMatch(new RegExp(`interrupted \\(${signal}\\); servers stopped, temp files removed`));
      expect(run.logged.children.length).toBeGreaterThanOrEqual(2);
      expectNoSurvivors(run);
    });
  }
});

describe('HTTP targets (--url)', () => {
  let silent: TcpServer;
  let html: HttpServer;
  const sockets: Socket[] = [];
  const port = (server: TcpServer | HttpServer) => (server.address() as { port: number }).port;
  beforeAll(async () => {
    // Accepts, reads, never answers.
    silent = createTcpServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => undefined);
    });
    // Answers every request with a web page.
    html = createHttpServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>\n');
    });
    await Promise.all([new Promise<void>((r) => silent.listen(0, '127.0.0.1', r)), new Promise<void>((r) => html.listen(0, '127.0.0.1', r))]);
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await Promise.all([new Promise((r) => silent.close(r)), new Promise((r) => html.close(r))]);
  });

  test('a port that accepts and never responds: exit 4 within the startup timeout + 1 s', async () => {
    const bound = await afterBudget(2000);
    const run = await cli(['--startup-timeout', '2', '--jobs', '4', '--url', `http://127.0.0.1:${port(silent)}/mcp`]);
    expect(run.code).toBe(4);
    // (What is left of the 2 s budget after connecting, so it may read 1999 ms, or less on a loaded machine.)
    expect(run.report!.startFailure!.message).toMatch(/^initialize failed: no answer within the startup timeout \(\d+ ms\)$/);
    expect(leftOfBudget(run.report!.startFailure!.message, 2000)).toBe(true);
    expectNothingPassed(run);
    expect(run.report!.durationMs).toBeLessThan(bound);
    expect(run.ms).toBeLessThan(bound + CLI_OVERHEAD_MS);
    expectNoSurvivors(run);
  });

  test('a port that answers with HTML: exit 4 at once, the content type named', async () => {
    const run = await cli(['--startup-timeout', '10', '--url', `http://127.0.0.1:${port(html)}/mcp`]);
    expect(run.code).toBe(4);
    expect(run.report!.startFailure!.message).toMatch(/^initialize failed: .*text\/html/);
    expectNothingPassed(run);
    expect(run.report!.durationMs).toBeLessThan(5000);
    expectNoSurvivors(run);
  });

  test('a good stdio target with a dead --url: the HTTP checks could not run, quickly; exit 3', async () => {
    // The startup timeout holds for the stdio server too: 5 s, since a loaded machine once took
    // over 2 s to start the reference (its start failure is the run's: exit 4).
    const run = await cli(['--startup-timeout', '5', '--only', 'capability/*', '--url', `http://127.0.0.1:${port(silent)}/mcp`, referenceServer]);
    expect(run.code).toBe(3);
    const checks = run.report!.checks;
    expect(checks.filter((c) => c.transport === 'stdio').map((c) => c.status)).toEqual(['pass', 'pass']);
    for (const check of checks.filter((c) => c.transport === 'http')) {
      expect(check.skipReason).toBe('could-not-run');
      expect(check.message).toMatch(/^target failed to start: initialize failed: no answer within the startup timeout \(\d+ ms\)$/);
      expect(leftOfBudget(check.message, 5000)).toBe(true);
    }
    expect(run.report!.durationMs).toBeLessThan(5000 + 3000);
    expectNoSurvivors(run);
  });
});

describe('the live progress line', () => {
  const fakeStream = (isTTY: boolean) => {
    const writes: string[] = [];
    return { stream: { isTTY, columns: 200, write: (text: string) => writes.push(text) } as unknown as NodeJS.WriteStream, writes };
  };

  test('on a terminal: done/total, elapsed, the scenarios in flight; erased at the end', () => {
    const { stream, writes } = fakeStream(true);
    let now = 1000;
    const progress = createProgress({ stream, stdoutIsTTY: true, env: {}, now: () => now, tickMs: 60_000 });
    progress.onProgress!({ kind: 'start', total: 3 });
    progress.onProgress!({ kind: 'scenario-start', scenario: 'forwarding/codex-call', transport: 'stdio' });
    now = 2500;
    progress.onProgress!({ kind: 'scenario-start', scenario: 'capability/initialize', transport: 'http' });
    expect(writes.at(-1)).toBe('\r\x1b[2K[0/3] 1.5 s  running: forwarding/codex-call, capability/initialize (http)');
    progress.onProgress!({ kind: 'scenario-end', scenario: 'forwarding/codex-call', transport: 'stdio', done: 1, total: 3 });
    expect(writes.at(-1)).toBe('\r\x1b[2K[1/3] 1.5 s  running: capability/initialize (http)');
    progress.stop();
    expect(writes.at(-1)).toBe('\r\x1b[2K');
  });

  test('nothing when stdout or stderr is not a terminal, or under CI', () => {
    for (const [isTTY, stdoutIsTTY, env] of [
      [false, true, {}],
      [true, false, {}],
      [true, true, { CI: 'true' }],
    ] as const) {
      const { stream, writes } = fakeStream(isTTY);
      const progress = createProgress({ stream, stdoutIsTTY, env });
      expect(progress.onProgress).toBeUndefined();
      progress.stop();
      expect(writes).toEqual([]);
    }
    expect(inCI({ CI: 'false' })).toBe(false);
    expect(inCI({ CI: '1' })).toBe(true);
  });

  test('fits the terminal width', () => {
    const line = progressLine(3, 30, 12_345, ['authority/session-state-change', 'authority/session-launcher-change', 'catalog/startups'], 50);
    expect(line.length).toBeLessThanOrEqual(49);
    expect(line.startsWith('[3/30] 12.3 s  running: authority/')).toBe(true);
  });

  // `script` (util-linux) gives the CLI a terminal.
  test('a real run in a pseudo-terminal draws it on stderr; with CI set, it does not', async () => {
    scriptOrFail();
    const run = (env: Record<string, string>) =>
      new Promise<string>((resolve) => {
        const command = `${process.execPath} ${cliPath} --only 'capability/*' ${referenceServer}`;
        const child = spawn('script', ['-qfec', command, '/dev/null'], { env: { ...process.env, NO_COLOR: '1', TERM: 'dumb', ...env } });
        let out = '';
        child.stdout.on('data', (c) => (out += c));
        child.on('close', () => resolve(out));
      });
    const { CI: _ci, ...withoutCI } = process.env;
    const tty = await run({ ...(withoutCI as Record<string, string>), CI: '' });
    expect(tty).toMatch(/\r\x1b\[2K\[0\/1\] \d+\.\d s {2}running: capability\/initialize/);
    expect(tty).toMatch(/\r\x1b\[2K\r?\n?mcp-sandbox-conformance \d/);
    expect(tty.trimEnd().split('\n').at(-1)!.trim()).toBe('2 passed, 0 failed, 0 skipped');
    const ci = await run({ CI: '1' });
    expect(ci).not.toContain('\x1b[2K');
    expect(ci.trimEnd().split('\n').at(-1)!.trim()).toBe('2 passed, 0 failed, 0 skipped');
  });
});
