import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { allChecks } from '../suites/index.js';
import { soakHoldsContract } from '../suites/server/lifetime.js';
import { bundledCli, chaosServer, cliPath, mutantsServer, referenceConfig, referenceServer, referenceSource, runAgainst } from './helpers.js';
import { lastLine, runCli } from './fixtures/run-cli.js';

const cli = runCli;
/** A private TMPDIR for one CLI run, so leftovers are its own, whatever else runs at the time. */
const privateTmp = () => mkdtempSync(join(scratch, 'tmp-'));
const scratch = mkdtempSync(join(tmpdir(), 'msc-cli-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

test('the bundled CLI that most tests run answers as the shipped dist/cli/main.js does', async () => {
  // The arguments exactly as given (explore: true adds no --no-explore); both outputs, times masked.
  const run = async (entry: string, args: string[]) => {
    const { code, stdout, stderr } = await runCli(args, { entry, explore: true });
    return `${`${stdout}${stderr}`.replace(/\d+(\.\d+)? ?m?s\b/g, '<time>')}exit ${code}`;
  };
  const runs = [
    ['--version'],
    ['--help'],
    ['list'],
    ['explain', 'LAUNCH-1'],
    ['host', '--help'],
    ['--no-explore', '--only', 'capability/*', referenceServer],
    ['--bogus'],
  ];
  for (const args of runs) expect(await run(bundledCli, args), args.join(' ')).toBe(await run(cliPath, args));
});

describe('a run', () => {
  test('the reference server from its source, over stdio and HTTP, as a default run (exploration on): exit 0, every check passes but those that need a real Codex, the tally alone on the last line', async () => {
    // The self-test's first half (test/matrix.test.ts has the rest): the reference, run as the
    // README's npm start runs it, passes every check; the JSON report says the same, per transport.
    const report = join(privateTmp(), 'r.json');
    const httpCommand = `${process.execPath} ${referenceSource} --http --port {port}`;
    const { code, stdout } = await cli(['--config', referenceConfig, '--http-command', httpCommand, '--reporter', `json=${report}`, referenceSource], {
      explore: true,
    });
    expect(code, stdout).toBe(0);
    // Not applicable here: the real-Codex tier, and the soak (off without --soak, over both transports).
    const realCodexOnly = allChecks.filter((c) => c.needs.includes('codex') || c.id === soakHoldsContract.id);
    for (const check of allChecks) {
      expect(stdout).toMatch(new RegExp(`${realCodexOnly.includes(check) ? 'SKIP' : 'PASS'}\\s+${check.id}\\s`));
    }
    expect(stdout).not.toMatch(/^(FAIL|WARN|ERR)/m);
    expect(lastLine(stdout)).toMatch(new RegExp(`^\\d+ passed, 0 failed, ${realCodexOnly.length + 1} skipped$`));
    const doc = JSON.parse(readFileSync(report, 'utf8')) as {
      checks: { id: string; transport: string; scenario: string; status: string; skipReason?: string; durationMs: number; transcript: { entries: number } }[];
      scenarios: { id: string; transport: string; checks: string[]; ran: boolean; durationMs: number; transcript: { entries: number } }[];
    };
    const { checks, scenarios } = doc;
    // A fresh server only where freshness is what a check tests, and the header says why each started.
    const { stats } = JSON.parse(readFileSync(report, 'utf8')) as { stats: { serverStarts: number; startsBy: Record<string, number> } };
    expect(stats.startsBy).toEqual({
      'shared: the scenarios of a transport take turns on it': 2,
      'lifetime/resident: the resident, over the whole run': 2,
      'launcher/fails-closed: a fresh server of its own': 1,
      'catalog/startups: a further startup': 6,
      'catalog/inventory: an inventory connection': 2,
      'explore/sequences: one per isolated run (a sequence, a shrink rerun)': 3,
    });
    expect(stats.serverStarts).toBe(16);
    expect(stdout).toContain('server starts: ');
    const expected = checks.map((r) => `${r.transport} ${r.id} ${realCodexOnly.some((c) => c.id === r.id) ? 'skip not-applicable' : 'pass'}`);
    expect(checks.map((r) => `${r.transport} ${r.id} ${r.status}${r.skipReason ? ` ${r.skipReason}` : ''}`)).toEqual(expected);
    // Every check ran on at least one transport, exploration included.
    expect([...new Set(checks.map((r) => r.id))].sort()).toEqual(allChecks.map((c) => c.id).sort());
    // Each check points at the one scenario record (scenario, transport) that lists it, and carries its transcript size and time.
    for (const check of checks) {
      const owners = scenarios.filter((s) => s.id === check.scenario && s.transport === check.transport);
      expect(
        owners.map((s) => s.checks.includes(check.id)),
        `${check.transport} ${check.id}`,
      ).toEqual([true]);
      expect([check.transcript.entries, check.durationMs]).toEqual([owners[0]!.transcript.entries, owners[0]!.durationMs]);
    }
    expect(scenarios.flatMap((s) => s.checks).length).toBe(checks.length);
    // The scenarios that ran hold their wire traffic; the real-Codex ones and the soak (no --soak) did not run here.
    expect(scenarios.filter((s) => s.ran && s.transcript.entries === 0).map((s) => s.id)).toEqual([]);
    expect(scenarios.filter((s) => !s.ran).every((s) => s.id.startsWith('enforcement/') || s.id === 'explore/soak')).toBe(true);
  });
  test('a mutant: exit 1, the violated check named, the dropped canary path in the diff', async () => {
    const { code, stdout } = await cli(['--only', 'forwarding/*', '--', process.execPath, mutantsServer, 'drops-unknown-fields']);
    expect(code).toBe(1);
    expect(stdout).toMatch(/FAIL\s+forwarding\/state-unchanged/);
    expect(stdout).toContain('- missing  conformanceCanary');
    expect(stdout).toContain('- missing  permissionProfile.file_system.entries[1].conformanceEntryCanary');
    expect(lastLine(stdout)).toBe('1 passed, 1 failed, 1 skipped');
  });
  test('no exec tool: exec checks are not applicable, with the flags in the hint; not a pass', async () => {
    // Every check that needs an exec tool, and capability/* that needs none and must still run: the
    // catalog and resource checks need no exec tool either, so they have nothing to show here.
    const only = allChecks.filter((c) => c.needs.includes('exec') || c.id.startsWith('capability/')).flatMap((c) => ['--only', c.id]);
    const { code, stdout } = await cli([...only, chaosServer, 'no-exec-tool']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^SKIP\s+forwarding\/argv-shape/m);
    // The reason all of them share is said once, with their number.
    expect(stdout).toMatch(/^\d+ checks not applicable: .*--exec-tool NAME --exec-args/m);
    expect(stdout).toMatch(/PASS\s+capability\/advertised/);
    expect(stdout).not.toMatch(/PASS\s+(forwarding|launcher|aliases|authority)\//);
    expect(stdout).not.toMatch(/^(FAIL|ERR)/m);
  });
  test('a server that did not opt in: exec checks could not run; --assume-opt-in runs them', async () => {
    const plain = await cli(['--only', 'launcher/*', '--', process.execPath, mutantsServer, 'no-capability']);
    expect(plain.code).toBe(3);
    expect(plain.stdout).toMatch(/could not run \(blocked by capability\/advertised\): the server did not opt in/);
    const assumed = await cli(['--assume-opt-in', '--only', 'launcher/*', '--', process.execPath, mutantsServer, 'no-capability']);
    expect(assumed.code).toBe(0);
  });
  test('a server that did not opt in, with its one failure left out by --skip: complete, exit 0, and no pointer to the skipped check', async () => {
    const { code, stdout } = await cli([
      '--only',
      'launcher/*',
      '--only',
      'capability/*',
      '--skip',
      'capability/advertised',
      '--',
      process.execPath,
      mutantsServer,
      'no-capability',
    ]);
    expect(code, stdout).toBe(0);
    expect(stdout).toMatch(
      /checks could not run \(blocked by capability\/advertised, which --skip left out\): the server did not opt in, so Codex sends it no sandbox keys/,
    );
    expect(stdout).not.toMatch(/see capability\/advertised/);
  });
  test('a server that did not opt in is not started again for every scenario that needs sandbox keys', async () => {
    const report = await runAgainst([mutantsServer, 'no-capability'], {}, { http: false, select: (id) => !id.startsWith('catalog/') });
    // The first scenarios start before the first handshake is in; after it, only those that need no opt-in.
    expect(report.stats!.serverStarts).toBeLessThanOrEqual(6);
    const def = (id: string) => allChecks.find((c) => c.id === id)!;
    // The checks that need sandbox keys and nothing this plan lacks (an HTTP target, a real Codex, a soak).
    const needOptIn = report.results.filter(
      (r) => def(r.id).needs.includes('opt-in') && !def(r.id).needs.some((n) => n === 'http' || n === 'codex' || n === 'soak'),
    );
    expect(needOptIn.length).toBeGreaterThan(20);
    for (const result of needOptIn) expect(`${result.id}: ${result.status} ${result.message}`).toMatch(/: skip the server did not opt in/);
  });
  test('a finding shows its diff; the full expected and actual only with --verbose', async () => {
    const args = ['--only', 'forwarding/state-unchanged', '--', process.execPath, mutantsServer, 'drops-unknown-fields'];
    const [quiet, verbose] = await Promise.all([cli(args), cli(['--verbose', ...args])]);
    expect(quiet.code).toBe(1);
    expect(quiet.stdout).toMatch(/diff \(expected -> actual\):\n\s+- missing {2}/);
    expect(quiet.stdout).not.toMatch(/^\s+expected:$/m);
    expect(quiet.stdout).toContain('(expected and actual in full: --verbose, or the JSON report)');
    expect(verbose.stdout).toMatch(/^\s+expected:$/m);
    expect(verbose.stdout).toMatch(/^\s+actual:$/m);
  });
  test('with two transports in the run, lines name theirs, also when --only keeps checks of one', async () => {
    const http = ['--http-command', `${process.execPath} ${referenceServer} --http --port {port}`];
    const { code, stdout } = await cli(['--only', 'forwarding/argv-shape', ...http, referenceServer]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^PASS\s+forwarding\/argv-shape\s+stdio\s+MUST/m);
  });
  test('without --codex, the enforcement skip names the Codex CLI installed beside us', async () => {
    const { code, stdout } = await cli(['--only', 'enforcement/no-network', referenceServer]);
    expect(code).toBe(0);
    const path = /one is installed here: --codex (\S+)\)/.exec(stdout)?.[1];
    expect(path, stdout).toMatch(/\/codex$/);
    expect(existsSync(path!)).toBe(true);
  });
  test('--exec-tool and --exec-args drive a tool by name', async () => {
    const { code, stdout } = await cli(['--only', 'forwarding/*', '--exec-tool', 'exec', '--exec-args', '{"command":"{{argv}}"}', referenceServer]);
    expect(code).toBe(0);
    expect(stdout.split('\n')[2]).toBe('exec tool "exec" with arguments {"command":"{{argv}}"} (given by --exec-tool)');
    expect(lastLine(stdout)).toBe('3 passed, 0 failed, 0 skipped');
  });
  test('--skip-tool leaves out exactly the tool it names, and the header and JSON say so; --exercise-all-tools only warns', async () => {
    const { code, stdout, stderr } = await cli([
      '--only',
      'forwarding/argv-shape',
      '--reporter',
      'json',
      '--skip-tool',
      'session_open',
      '--exercise-all-tools',
      referenceServer,
    ]);
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('--exercise-all-tools has no effect: every exec tool is driven by default');
    expect(stderr).toContain('"session_open": not exercised (left out by the operator: --skip-tool)');
    const tools = (JSON.parse(stdout) as { tools: { name: string; tested: boolean; skipped?: boolean }[] }).tools;
    expect(tools.find((t) => t.name === 'session_open')).toMatchObject({ tested: false, skipped: true });
    expect(tools.find((t) => t.name === 'exec')).toMatchObject({ tested: true, role: 'primary' });
  });
  test('the header and the JSON report say which exec tool and template the run used, and that they were detected', async () => {
    const { code, stdout, stderr } = await cli(['--only', 'forwarding/argv-shape', '--reporter', 'json', referenceServer]);
    expect(code).toBe(0);
    const header = stderr.split('\n').slice(0, 3);
    expect(header[1]).toBe('server: reference-sandbox-server 0.1.0');
    expect(header[2]).toBe('exec tool "exec" with arguments {"command":"{{argv}}"} (detected from its input schema)');
    expect(JSON.parse(stdout).exec).toEqual({ tool: 'exec', arguments: { command: '{{argv}}' }, source: 'detected', description: header[2] });
  });
  test('no exec adapter resolved: the header says so in one line; the JSON "exec" is null', async () => {
    const { stdout, stderr } = await cli(['--only', 'forwarding/argv-shape', '--reporter', 'json', chaosServer, 'no-exec-tool']);
    expect(stderr.split('\n').filter((l) => l.startsWith('exec tool'))).toEqual([
      'exec tool: none resolved (no listed tool takes a command in a command, cmd, argv, script, code, shell, program or commandLine property or says it runs one, or the --exec-tool or config entry named first is not usable), so the checks that need one are not applicable',
    ]);
    expect(JSON.parse(stdout).exec).toBeNull();
  });
  test('exec settings come from mcp-sandbox-conformance.json in the working directory', async () => {
    const dir = mkdtempSync(join(scratch, 'cfg-'));
    writeFileSync(join(dir, 'mcp-sandbox-conformance.json'), JSON.stringify({ exec: { tool: 'nope' } }));
    const { stdout } = await cli(['--only', 'forwarding/argv-shape', referenceServer], { cwd: dir });
    expect(stdout).toMatch(/not applicable: the server lists no tool named "nope"/);
    writeFileSync(join(dir, 'mcp-sandbox-conformance.json'), JSON.stringify({ exec: { tool: 'exec', arguments: { command: '{{argv}}' } } }));
    const configured = await cli(['--only', 'forwarding/argv-shape', referenceServer], { cwd: dir });
    expect(configured.stdout).toContain('\nexec tool "exec" with arguments {"command":"{{argv}}"} (from the config file)\n');
  });
});

describe('bad input: one line, exit 2', () => {
  test.each([
    [['--no-such-flag', referenceServer], /Unknown argument/],
    [['--exec-tool', 'exec', '--exec-args', '{oops', referenceServer], /--exec-args is not valid JSON/],
    [['--config', '/nonexistent/c.json', referenceServer], /cannot read config/],
    [['--only', 'zzz/*', referenceServer], /leave no check/],
    [['--env', 'NOVALUE', referenceServer], /NAME=VALUE/],
    [[], /no server given/],
    [['explain', 'no/such-check'], /unknown check or rule/],
  ])('%j', async (args, message) => {
    const { code, stderr } = await cli(args as string[]);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });
  test('a config file that does not parse', async () => {
    const file = join(scratch, 'broken.json');
    writeFileSync(file, '{"exec": [');
    const { code, stderr } = await cli(['--config', file, referenceServer]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/broken.json is not valid JSON/);
  });
});

describe('a target that cannot start: exit 4 with the cause', () => {
  test('a server path that does not exist', async () => {
    const { code, stderr } = await cli(['./no/such/server.mjs']);
    expect(code).toBe(4);
    expect(stderr).toMatch(/server not found: .\/no\/such\/server.mjs/);
  });
  test('a server that exits at once: its stderr is shown, and the run stops early', async () => {
    const { code, stdout, ms } = await cli([chaosServer, 'exits-at-once']);
    expect(code).toBe(4);
    expect(stdout).toMatch(/failed to start: initialize failed: server exited \(code 3\)/);
    expect(stdout).toContain('chaos: configuration file missing, giving up');
    expect(ms).toBeLessThan(10_000);
  });
  test('a server that never answers initialize: the startup timeout holds', async () => {
    // The bound is the 1 s timeout beside a run measured here: a server that dies at once costs the
    // CLI's own start, its spawns and its diagnosis, whatever the machine's load (8 s flat failed at a load of 19).
    const dies = await cli([chaosServer, 'exits-at-once']);
    const { code, stdout, ms } = await cli(['--startup-timeout', '1', '--jobs', '4', chaosServer, 'never-initializes']);
    expect(code).toBe(4);
    expect(stdout).toMatch(/initialize failed: no answer within the startup timeout \(1000 ms\)/);
    expect(ms).toBeLessThan(1_000 + 3 * Math.max(dies.ms, 1_000));
  });
});

describe('nothing is left behind', () => {
  test('no temp dir and no process of the run survives, even children the server abandons', async () => {
    const tmp = privateTmp();
    const sleep = `300.${process.pid}${Date.now() % 1000}`;
    const { stdout } = await cli(['--only', 'capability/*', chaosServer, 'leaves-children'], { env: { TMPDIR: tmp, CHAOS_SLEEP: sleep } });
    expect(stdout).toMatch(/PASS\s+capability\/advertised/);
    expect(readdirSync(tmp)).toEqual([]);
    const { execFileSync } = await import('node:child_process');
    const sleepers = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim() === `sleep ${sleep}`);
    expect(sleepers).toEqual([]);
  });
  test.each([
    ['SIGINT', 130],
    ['SIGHUP', 129],
  ] as const)('%s stops the servers, removes the temp dir and exits %i', async (signal, exitCode) => {
    const tmp = privateTmp();
    // A tag (chaos.mjs ignores it) tells this run's servers from the never-initializing servers
    // other tests start meanwhile: seeing one of theirs, this test interrupted the CLI before it
    // had its signal handlers.
    const tag = `run-${process.pid}-${signal}-${Date.now()}`;
    const child = spawn(process.execPath, [cliPath, '--startup-timeout', '30', chaosServer, 'never-initializes', tag], {
      env: { ...process.env, NO_COLOR: '1', TMPDIR: tmp },
    });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    // Interrupt once the run is under way: its server is up.
    const { execFileSync } = await import('node:child_process');
    const servers = () =>
      execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes(`${chaosServer} never-initializes ${tag}`) && !line.includes(cliPath));
    const serverUp = () => servers().length > 0;
    for (let waited = 0; !serverUp() && waited < 20_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    child.kill(signal);
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(exitCode);
    expect(stderr).toMatch(new RegExp(`interrupted \\(${signal}\\); servers stopped, temp files removed`));
    expect(readdirSync(tmp)).toEqual([]);
    expect(servers()).toEqual([]);
  });
});

describe('discoverability', () => {
  test('--help documents every flag', async () => {
    const { code, stdout } = await cli(['--help']);
    expect(code).toBe(0);
    for (const flag of [
      '--exec-tool',
      '--exec-args',
      '--skip-tool',
      '--config',
      '--env',
      '--cwd',
      '--assume-opt-in',
      '--startup-timeout',
      '--call-timeout',
      '--jobs',
      '--only',
      '--skip',
      '--strict',
      '--fail-on',
      '--color',
    ]) {
      expect(stdout).toContain(flag);
    }
    expect(stdout).toMatch(/Exit codes: 0 conformant, 1 violations, 2 usage/);
    // The usage lines, the host subcommand among them, each on one line of their own.
    expect(stdout).toMatch(/^mcp-sandbox-conformance host \[options\]\s+check a Codex build instead \(host --help\)$/m);
    expect(stdout).toMatch(/^mcp-sandbox-conformance \[options\] <server> \[args\.\.\.\]\s+a stdio server \(an executable, or a \.js\/\.mjs\/\.cjs file\)$/m);
    expect(stdout).toMatch(
      /"sessionId":"<dotted path in the open\s+result>"\s+\(default:\s+structuredContent\.sessionId\s+and\s+the\s+like,\s+else\s+the\s+only\s+text\s+block/,
    );
  });
  test('list shows every check (or those a glob matches); explain shows one', async () => {
    const list = await cli(['list']);
    for (const check of allChecks) expect(list.stdout).toContain(check.id);
    const filtered = await cli(['list', 'launcher/*', 'host/direct-call-*']);
    const ids = [...filtered.stdout.matchAll(/^\s*((?:launcher|host|forwarding)\/[\w-]+)/gm)].map((m) => m[1]);
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.filter((id) => !id!.startsWith('launcher/') && !id!.startsWith('host/direct-call-'))).toEqual([]);
    expect(ids).toContain('launcher/runs-given-executable');
    expect(ids).toContain('host/direct-call-thread-id');
    expect((await cli(['list', 'nothing/*'])).code).toBe(2);
    const explain = await cli(['explain', 'forwarding/state-unchanged']);
    expect(explain.stdout).toMatch(/FWD-2, MUST/);
    expect(explain.stdout).toMatch(/How to fix it:/);
    // A rule ID explains every check under it.
    const rule = await cli(['explain', 'LAUNCH-3']);
    const under = allChecks.filter((c) => c.rule === 'LAUNCH-3');
    expect(rule.stdout).toMatch(new RegExp(`^LAUNCH-3 \\(CONTRACT\\.md §3\\): ${under.length} checks`));
    for (const check of under) expect(rule.stdout).toContain(`${check.id}  (LAUNCH-3, MUST)`);
  });
});
