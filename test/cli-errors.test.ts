import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { cliPath, mutantsServer, referenceServer } from './helpers.js';
import { runCli } from './fixtures/run-cli.js';

/**
 * User errors (issue 12): exit 2 with one line naming the flag, before any server starts; and a
 * reader that closes stdout early ends the run quietly, with the run's own exit code.
 */

const scratch = mkdtempSync(join(tmpdir(), 'msc-cli-errors-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A "server" that only leaves a mark that it was started. */
const marker = join(scratch, 'server-started');
const markingServer = ['--', 'sh', '-c', `touch '${marker}'; exec ${process.execPath} ${referenceServer}`];

const aFile = join(scratch, 'a-file');
writeFileSync(aFile, '');
const aDir = join(scratch, 'a-dir');
mkdirSync(aDir);
// Root writes anywhere its mode bits say no; /proc/1 refuses it (EPERM) all the same.
const unwritable = process.getuid?.() === 0 ? '/proc/1' : join(scratch, 'read-only');
if (unwritable !== '/proc/1') {
  mkdirSync(unwritable);
  chmodSync(unwritable, 0o555);
}

async function expectUsageError(args: string[], message: RegExp): Promise<string> {
  rmSync(marker, { force: true });
  const { code, stdout, stderr } = await runCli([...args, ...markingServer]);
  expect(code, stderr).toBe(2);
  expect(stdout).toBe('');
  const lines = stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^mcp-sandbox-conformance: /);
  expect(lines[0]).toMatch(message);
  expect(existsSync(marker), 'a server was started').toBe(false);
  return lines[0]!;
}

describe('output paths are checked before anything runs', () => {
  test.each([
    [
      ['--reporter', `json=${join(scratch, 'no/such/dir/report.json')}`],
      /^mcp-sandbox-conformance: --reporter json=\S+no\/such\/dir\/report\.json: its directory \S+ does not exist$/,
    ],
    [['--reporter', `junit=${aDir}`], /--reporter junit=\S+a-dir: is a directory, not a file$/],
    [['--reporter', `html=${join(aFile, 'x.html')}`], /--reporter html=\S+a-file\/x\.html: .*not a directory/],
    [['--reporter', `markdown=${join(unwritable, 'summary.md')}`], /--reporter markdown=\S+summary\.md: its directory \S+ is not writable$/],
    [
      ['--reporter', `json=${join(scratch, 'same')}`, '--reporter', `junit=${join(scratch, 'same')}`],
      /--reporter junit=\S+same: --reporter json writes that file too/,
    ],
    [['--transcripts', join(scratch, 'missing/parent/dir')], /--transcripts \S+missing\/parent\/dir: its parent directory \S+ does not exist$/],
    [['--transcripts', aFile], /--transcripts \S+a-file: is not a directory$/],
    [['--transcripts', join(unwritable, 'transcripts')], /--transcripts \S+: its parent directory \S+ is not writable$/],
  ])('%j', async (args, message) => {
    await expectUsageError(args, message);
  });
});

describe('bad values: exit 2, one line naming the flag', () => {
  test.each([
    [['--exec-tool', 'exec', '--exec-args', '["{{argv}}"]'], /--exec-args must be a JSON object/],
    [['--exec-tool', 'exec', '--exec-args', '"{{argv}}"'], /--exec-args must be a JSON object/],
    [['--exec-tool', 'exec', '--exec-args', '{"command":"ls"}'], /--exec-args must place the command with "\{\{argv\}\}" or "\{\{command\}\}"/],
    [
      ['--exec-tool', 'exec', '--skip-tool', 'exec'],
      /tool "exec" is named both to drive \(--exec-tool, "exec"\) and to leave out \(--skip-tool, "skipTools"\)/,
    ],
    [['--catalog-startups', '0.5'], /--catalog-startups must be a whole number of at least 1, not 0\.5/],
    [['--catalog-startups', '0'], /--catalog-startups must be a positive number/],
    [['--jobs', '0.5'], /--jobs must be a whole number/],
    [['--codex', aDir], /--codex \S+a-dir: a directory, not the Codex CLI executable/],
    [['--codex', aFile], /--codex \S+a-file: not an executable file/],
    [['--call-timeout', 'Infinity'], /--call-timeout is too large for a timer: Infinity s/],
    [['--startup-timeout', '2147484'], /--startup-timeout is too large for a timer/],
    [['--scenario-timeout', '1e300'], /--scenario-timeout is too large for a timer/],
    [['--run-timeout', '0'], /--run-timeout must be a positive number of seconds, not 0/],
    [['--run-timeout', '-5'], /--run-timeout must be a positive number of seconds/],
    [['--call-timeout', 'soon'], /--call-timeout must be a positive number of seconds, not NaN/],
    [['--cwd', join(scratch, 'no-such-dir')], /--cwd \S+no-such-dir: no such directory$/],
    [['--cwd', aFile], /--cwd \S+a-file: not a directory$/],
    [['--explore', '1.5'], /--explore must be a whole number from 0 to 1000000, not 1\.5/],
    [['--explore', '-1'], /--explore must be a whole number/],
    [['--explore-seed', '99999999999'], /--explore-seed must be a 32-bit whole number/],
    [['--explore-time', '0'], /--explore-time must be a positive number of seconds, not 0/],
    [['--replay', 'nonsense'], /--replay expects <seed:path> as a report prints it/],
    [['--no-explore', '--replay', '1:0'], /--replay needs exploration on/],
  ])('%j', async (args, message) => {
    await expectUsageError(args, message);
  });

  test('timeouts in the config file: too large for a timer', async () => {
    const config = join(scratch, 'big-timeout.json');
    writeFileSync(config, JSON.stringify({ callTimeoutSec: 1e12 }));
    await expectUsageError(['--config', config], /"callTimeoutSec" is too large for a timer/);
  });
  test("the config's cwd must exist", async () => {
    const config = join(scratch, 'bad-cwd.json');
    writeFileSync(config, JSON.stringify({ cwd: join(scratch, 'nowhere') }));
    await expectUsageError(['--config', config], /the config's "cwd" \S+nowhere: no such directory/);
  });
  test('exploration settings in the config file', async () => {
    const config = join(scratch, 'bad-explore.json');
    writeFileSync(config, JSON.stringify({ explore: { sequences: 10, seeds: 3 } }));
    await expectUsageError(['--config', config], /"explore": "seeds" is not known/);
    writeFileSync(config, JSON.stringify({ explore: true }));
    await expectUsageError(['--config', config], /"explore" must be false or \{"sequences": N/);
  });
  // --url with credentials is no user error: they become an Authorization header (test/http-headers.test.ts).
});

describe('a flag without its value is an error, not silently nothing', () => {
  test.each([
    [['--exec-tool'], /--exec-tool needs a value/],
    [['--startup-timeout', '--only', 'capability/*'], /--startup-timeout needs a value/],
    [['--config', '--assume-opt-in'], /--config needs a value/],
    [['--reporter'], /--reporter needs a value/],
    [['--transcripts'], /--transcripts needs a value/],
    [['-j'], /-j needs a value/],
    [['--cwd='], /--cwd needs a value/],
    [['--exec-tool='], /--exec-tool needs a value/],
  ])('%j', async (args, message) => {
    await expectUsageError(args, message);
  });
  test('a flag at the very end, with no server after it', async () => {
    const { code, stderr } = await runCli(['--call-timeout']);
    expect(code).toBe(2);
    expect(stderr.trimEnd()).toBe('mcp-sandbox-conformance: --call-timeout needs a value');
  });
});

describe('--exec-tool naming no tool of the server', () => {
  test.each([[[]], [['--exec-args', '{"command":"{{argv}}"}']]])('is a usage error naming the tools it lists, not a finding (%j)', async (extra) => {
    const { code, stdout, stderr } = await runCli(['--only', 'forwarding/*', '--exec-tool', 'nope', ...extra, referenceServer]);
    expect(code, stdout).toBe(2);
    expect(stdout).not.toMatch(/^FAIL/m);
    expect(stderr.trimEnd().split('\n').at(-1)).toBe(
      'mcp-sandbox-conformance: --exec-tool "nope": the server lists no tool by that name (it lists "exec", "session_open", "session_send", "session_close")',
    );
  });
});

describe('a target that is not an MCP server says so (issue 23)', () => {
  const notMcp = /does not speak MCP over stdio/;
  test('one that prints and exits: its first lines, and no environment diagnosis (no more starts)', async () => {
    const { code, stdout } = await runCli(['--only', 'capability/*', '--', 'sh', '-c', 'printf "usage: tool [FILE]\\n\\033[31mred\\n"']);
    expect(code, stdout).toBe(4);
    expect(stdout).toMatch(notMcp);
    expect(stdout).toContain('it wrote 2 lines to stdout and no JSON-RPC message');
    expect(stdout).toContain('"usage: tool [FILE]"');
    expect(stdout).not.toContain('\u001b');
    expect(stdout).not.toContain('full environment');
  });

  test('one that echoes our request back (cat): recognised, and not taken for an answer', async () => {
    const { code, stdout } = await runCli(['--only', 'capability/*', '--', 'cat']);
    expect(code, stdout).toBe(4);
    expect(stdout).toContain('the target sent our own initialize request back unchanged');
    expect(stdout).toMatch(notMcp);
    expect(stdout).not.toContain('-32601');
  });

  test('a .py file that is not executable runs with python3, and the header says so', async () => {
    const server = join(scratch, 'server.py');
    writeFileSync(server, 'print("hello from python")\n', { mode: 0o644 });
    const { code, stdout } = await runCli(['--only', 'capability/*', server]);
    expect(code, stdout).toBe(4);
    expect(stdout.split('\n')[0]).toContain('server.py (run with python3 (the file is not executable))');
    expect(stdout).toContain('"hello from python"');
  });
});

describe('a server of the older sandbox-state protocol (issue 23)', () => {
  test('is told that it waits for a request current Codex never sends', async () => {
    const server = ['--', process.execPath, mutantsServer, 'older-sandbox-protocol'];
    const { code, stdout } = await runCli(['--only', 'launcher/runs-given-executable', ...server]);
    expect(code, stdout).toBe(1);
    expect(stdout).toContain('it advertises "codex/sandbox-state": {"version":"1.0.0"}: the older sandbox-state protocol');
    expect(stdout).toContain('codex/sandbox-state/update');
    expect(stdout).toContain('it sends the state with each tools/call, in _meta');
  });
});

describe('a closed stdout', () => {
  /** Runs the CLI with its stdout read until the first line, then closed (like `| head -1`). */
  function closedAfterFirstLine(args: string[]): Promise<{ code: number | null; stderr: string; firstLine: string }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [cliPath, ...args], { env: { ...process.env, NO_COLOR: '1' } });
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (c) => (stderr += c));
      child.stdout.on('data', (c) => {
        stdout += c;
        if (stdout.includes('\n')) child.stdout.destroy();
      });
      child.on('close', (code) => resolve({ code, stderr, firstLine: stdout.split('\n')[0]! }));
    });
  }
  test.each([
    ['the human report', ['--only', 'capability/*', referenceServer], 0],
    ['a JSON report of a failing run', ['--reporter', 'json', '--only', 'forwarding/*', '--', process.execPath, mutantsServer, 'drops-unknown-fields'], 1],
  ] as const)("%s: ends quietly with the run's exit code", async (_, args, exitCode) => {
    const run = await closedAfterFirstLine([...args]);
    expect(run.firstLine).not.toBe('');
    expect(run.code, run.stderr).toBe(exitCode);
    expect(run.stderr).not.toMatch(/EPIPE|internal error|at .*\.js:\d+/);
  });
});
