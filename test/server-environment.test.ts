import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { CODEX_CA_ENV_VARS, CODEX_DEFAULT_ENV_VARS, isSuiteVariable } from '../harness/codex-environment.js';
import { root } from './helpers.js';
import { lastLine, reporterFlags, runCli } from './fixtures/run-cli.js';

/**
 * The environment a server gets from the suite, as the CLI runs it: over stdio the one Codex
 * 0.171.0 builds (test/codex-environment.test.ts compares it with real Codex), over --http-command
 * its user's; and when a stdio server cannot start under Codex's, the run says which variable it
 * needs and how to pass it, never its value.
 */

const NEEDS_ENV = join(root, 'fixtures/servers/needs-env.mjs');
const ENV_NAMES = join(root, 'fixtures/servers/env-names.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'server-environment-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Only in the user's shell: what the server needs, and a secret that must stay out of everything. */
const GEM_HOME = '/home/someone/.gems-Q7v2';
const TOKEN = 'tok-9f3a-unique-secret';
const shellEnv = { GEM_HOME, MY_API_TOKEN: TOKEN, MSC_SUITE_SWITCH: 'x' };

const namesIn = (file: string): string[][] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { names: string[] }).names);

describe('a stdio server that needs a variable only its user exports', () => {
  test('exit 4, naming the variable and the --env-var / env_vars fix, never a value', async () => {
    const run = await runCli(['--only', 'capability/*', ...reporterFlags({ json: 'r.json' }), NEEDS_ENV], { cwd: scratch, env: shellEnv });
    expect(run.code, run.stderr).toBe(4);
    const text = run.stdout + run.stderr;
    expect(text).toContain("the server cannot start with the environment Codex gives it; it starts with the suite's full environment");
    expect(text).toMatch(/Codex passed it only: .*\bHOME\b.*\bPATH\b/);
    expect(text).toContain('it needs: GEM_HOME\n');
    expect(text).toContain('fix: --env-var GEM_HOME, or in Codex\'s config.toml under [mcp_servers.<name>]: env_vars = ["GEM_HOME"]');
    expect(text).toContain('needs-env: GEM_HOME is not set');
    const report = readFileSync(join(scratch, 'r.json'), 'utf8');
    expect(report).toContain('it needs: GEM_HOME');
    for (const artifact of [text, report]) {
      expect(artifact).not.toContain(GEM_HOME);
      expect(artifact).not.toContain(TOKEN);
    }
  });
  test('with an --http-command server that starts (started with the whole environment, which has the variable): still exit 4 with the diagnosis', async () => {
    const http = ['--http-command', `${process.execPath} ${NEEDS_ENV} --http --port {port}`];
    const run = await runCli(['--only', 'capability/*', ...http, NEEDS_ENV], { cwd: scratch, env: shellEnv });
    expect(run.code, run.stdout + run.stderr).toBe(4);
    expect(run.stdout).toContain('it needs: GEM_HOME\n');
    expect(run.stdout).toContain('fix: --env-var GEM_HOME');
    expect(run.stdout).not.toContain(GEM_HOME);
  });
  test.each([
    ['--env-var GEM_HOME', ['--env-var', 'GEM_HOME']],
    ['--env GEM_HOME=value', ['--env', 'GEM_HOME=/opt/gems']],
  ])('with %s it starts and passes', async (_, flags) => {
    const run = await runCli(['--only', 'capability/*', ...flags, NEEDS_ENV], { cwd: scratch, env: shellEnv });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(lastLine(run.stdout)).toBe('2 passed, 0 failed, 0 skipped');
  });
  test('a server that fails with the full environment too: said so, with its stderr', async () => {
    const run = await runCli(['--only', 'capability/*', NEEDS_ENV, '--needs', 'NOT_SET_ANYWHERE_Z'], { cwd: scratch, env: shellEnv });
    expect(run.code).toBe(4);
    expect(run.stdout).toContain("it does not start with the suite's full environment either");
    expect(run.stdout).toContain('needs-env: NOT_SET_ANYWHERE_Z is not set');
    expect(run.stdout).not.toContain('fix: --env-var');
  });
});

describe('what a server finds in its environment', () => {
  test("over stdio: Codex's variables, env_vars and env; nothing else of ours", async () => {
    const names = join(scratch, 'stdio-names.jsonl');
    const run = await runCli(['--only', 'capability/*', '--env-var', 'GEM_HOME', '--env', 'EXTRA_SETTING=1', ENV_NAMES, '--names', names], {
      cwd: scratch,
      env: shellEnv,
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const allowed = new Set([...CODEX_DEFAULT_ENV_VARS, ...CODEX_CA_ENV_VARS, 'GEM_HOME', 'EXTRA_SETTING']);
    for (const seen of namesIn(names)) {
      // Nothing of ours: no run marker, no variable naming the suite.
      expect(seen.filter((n) => !allowed.has(n))).toEqual([]);
      expect(seen).toEqual(expect.arrayContaining(['GEM_HOME', 'EXTRA_SETTING', 'PATH', 'HOME']));
      expect(seen).not.toContain('MY_API_TOKEN');
    }
  });
  test("over --http-command: its user's whole environment, but not the suite's variables", async () => {
    const names = join(scratch, 'http-names.jsonl');
    const command = `${process.execPath} ${ENV_NAMES} --names ${names} --http --port {port}`;
    const run = await runCli(['--only', 'capability/*', '--http-command', command], { cwd: scratch, env: shellEnv });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    for (const seen of namesIn(names)) {
      expect(seen).toEqual(expect.arrayContaining(['GEM_HOME', 'MY_API_TOKEN', 'PATH']));
      expect(seen.filter((n) => isSuiteVariable(n))).toEqual([]);
    }
  });
});

describe('a server that behaves only while it thinks it is tested', () => {
  // The mutant sandboxes only when a variable name contains CONFORMANCE or MCP_SANDBOX: nothing of
  // ours carries one, and a user's own such variable is not among those Codex passes on.
  const MUTANTS = join(root, 'fixtures/servers/mutants.mjs');
  test.each([
    // It runs `bash -lc` outside the launcher, so with the HOME Codex passes on: no login profile of this machine's.
    ['with nothing of the kind exported', { HOME: '/nonexistent-home' }],
    ["when the user's own shell exports such variables", { HOME: '/nonexistent-home', MCP_SANDBOX_PROFILE: 'x', MY_CONFORMANCE_SETTING: 'y' }],
  ])('is caught %s (exit 1, execution/inside-launch fails)', async (_when, env) => {
    const run = await runCli(['--only', 'execution/*', '--', process.execPath, MUTANTS, 'sandboxes-only-when-tested'], { cwd: scratch, env });
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.stdout).toMatch(/FAIL\s+execution\/inside-launch/);
  });
});
