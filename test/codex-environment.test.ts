import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CODEX_CA_ENV_VARS, CODEX_DEFAULT_ENV_VARS, codexServerEnvironment, type ServerEnvironmentConfig } from '../harness/codex-environment.js';
import { writeConfig, type McpServerConfig } from '../harness/host-mode/codex-config.js';
import { ScriptedModel } from '../harness/host-mode/model-server.js';
import { scratchBaseOutsideTmp } from '../harness/real-codex.js';
import { connect } from '../harness/target.js';
import { root } from './helpers.js';
import { realCodexOrFail } from './fixtures/requirements.js';

/**
 * Differential test of the environment a stdio server starts with: the same parent environment
 * (a secret-like MY_API_TOKEN, a GEM_HOME exported only in the user's shell, RUST_LOG, every
 * variable Codex passes on, the CA-bundle ones included) is given to real `codex exec` 0.171.0 and
 * to the suite's fake host (harness/codex-environment.ts + harness/target.ts connect), for servers
 * configured with no env, with `env`, with `env_vars`, and with both. An environment-dumping server
 * (fixtures/servers/env-names.mjs) writes the *names* it got, never a value; they must be the same.
 *
 * Measured on 0.171.0: Codex adds no name of its own (only PATH's value differs: Codex puts its
 * helper directory first, the suite its PATH trap). Needs the @openai/codex devDependency; without
 * it the file fails with one line (test/fixtures/requirements.ts), never skips.
 */

const ENV_NAMES = join(root, 'fixtures/servers/env-names.mjs');
const SERVERS: Record<string, ServerEnvironmentConfig> = {
  plain: {},
  with_env: { env: { EXTRA_SETTING: 'on', HOME: '/overridden/home' } },
  with_env_vars: { envVars: ['GEM_HOME', 'NOT_SET_ANYWHERE', 'MY_API_TOKEN'] },
  with_both: { envVars: ['GEM_HOME', 'RUST_LOG'], env: { GEM_HOME: '/from/env', EXTRA_SETTING: 'on' } },
};

let scratch: string;
let parent: NodeJS.ProcessEnv;
const real = new Map<string, string[]>();
const fake = new Map<string, string[]>();
let codexRun = '';

const namesOf = (file: string): string[] => {
  if (!existsSync(file)) return [];
  const first = readFileSync(file, 'utf8').split('\n')[0];
  return first ? (JSON.parse(first) as { names: string[] }).names : [];
};

function runCodex(codex: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(codex, ['exec', '--skip-git-repo-check', 'Say done.'], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

beforeAll(async () => {
  const codex = realCodexOrFail();
  // Outside /tmp, as Codex would rather have its CODEX_HOME (it only warns otherwise).
  scratch = mkdtempSync(join(scratchBaseOutsideTmp() ?? root, 'msc-codex-env-'));
  const [codexHome, workspace] = [join(scratch, 'codex-home'), join(scratch, 'work space')];
  mkdirSync(codexHome);
  mkdirSync(workspace);
  const ca = '/etc/ssl/certs/ca-certificates.crt';
  parent = {
    HOME: process.env.HOME ?? '/root',
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    USER: 'someone',
    LOGNAME: 'someone',
    SHELL: '/bin/sh',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'xterm',
    TZ: 'UTC',
    TMPDIR: process.env.TMPDIR ?? '/tmp',
    __CF_USER_TEXT_ENCODING: '0x1F5:0x0:0x0',
    ...Object.fromEntries(CODEX_CA_ENV_VARS.map((name) => [name, ca])),
    MY_API_TOKEN: 'tok-differential-secret',
    GEM_HOME: '/home/someone/.gems',
    RUST_LOG: 'warn',
    CODEX_HOME: codexHome,
  };
  const model = new ScriptedModel({ calls: [] });
  const servers: Record<string, McpServerConfig> = {};
  for (const [name, config] of Object.entries(SERVERS)) {
    servers[name] = {
      transport: 'stdio',
      command: process.execPath,
      args: [ENV_NAMES, '--names', join(scratch, `real-${name}.jsonl`)],
      env: config.env ?? {},
      ...(config.envVars ? { envVars: [...config.envVars] } : {}),
    };
  }
  try {
    writeConfig({ codexHome, workspace, modelBaseUrl: await model.start(), servers, sandboxMode: 'workspace-write' });
    const run = await runCodex(codex.path, workspace, parent, 120_000);
    codexRun = `codex exec exited ${run.code}: ${run.stderr.split('\n').slice(-5).join(' | ')}`;
  } finally {
    await model.stop();
  }
  for (const name of Object.keys(SERVERS)) real.set(name, namesOf(join(scratch, `real-${name}.jsonl`)));

  const trap = join(scratch, 'trap');
  mkdirSync(trap);
  for (const [name, config] of Object.entries(SERVERS)) {
    const file = join(scratch, `fake-${name}.jsonl`);
    const environment = codexServerEnvironment(parent, config);
    const connection = await connect({ kind: 'stdio', command: process.execPath, args: [ENV_NAMES, '--names', file], environment }, trap, 30_000);
    await connection.close();
    fake.set(name, namesOf(file));
  }
}, 240_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("the environment a stdio server gets: real Codex 0.171.0 and the suite's fake host", () => {
  test.each(Object.keys(SERVERS))('[mcp_servers.%s]: the same variable names', (name) => {
    expect(real.get(name)!.length, `real Codex started no ${name} server (${codexRun})`).toBeGreaterThan(0);
    expect(fake.get(name)).toEqual(real.get(name));
  });
  test('neither passes the secret-like variable or anything unnamed; env_vars and env reach the server', () => {
    const base = [...CODEX_DEFAULT_ENV_VARS, ...CODEX_CA_ENV_VARS].sort();
    expect(real.get('plain')).toEqual(base);
    expect(real.get('with_env')).toEqual([...base, 'EXTRA_SETTING'].sort());
    // MY_API_TOKEN only because env_vars names it; NOT_SET_ANYWHERE is not set, so absent.
    expect(real.get('with_env_vars')).toEqual([...base, 'GEM_HOME', 'MY_API_TOKEN'].sort());
    expect(real.get('with_both')).toEqual([...base, 'EXTRA_SETTING', 'GEM_HOME', 'RUST_LOG'].sort());
  });
});
