import { describe, expect, test } from 'vitest';
import { findNeededVariables, MAX_SEARCH_STARTS } from '../../cli/diagnose.js';
import { CODEX_CA_ENV_VARS, CODEX_DEFAULT_ENV_VARS, codexServerEnvironment, isSuiteVariable, userServerEnvironment } from '../../harness/codex-environment.js';

const PARENT: NodeJS.ProcessEnv = {
  HOME: '/home/u',
  PATH: '/usr/bin:/bin',
  USER: 'u',
  LANG: 'C.UTF-8',
  TERM: 'xterm',
  SSL_CERT_FILE: '/etc/ssl/ca.pem',
  NODE_EXTRA_CA_CERTS: '/etc/ssl/extra.pem',
  MY_API_TOKEN: 'tok-secret',
  GEM_HOME: '/home/u/.gems',
  RUST_LOG: 'debug',
  MCP_SANDBOX_CONFORMANCE_RUN: '1-abc',
  MSC_SERVER: 'node x.mjs',
};

describe("Codex's environment for a stdio server (create_env_for_mcp_server)", () => {
  test('only the default and CA variables, each where the parent has it', () => {
    expect(codexServerEnvironment(PARENT)).toEqual({
      HOME: '/home/u',
      PATH: '/usr/bin:/bin',
      USER: 'u',
      LANG: 'C.UTF-8',
      TERM: 'xterm',
      SSL_CERT_FILE: '/etc/ssl/ca.pem',
      NODE_EXTRA_CA_CERTS: '/etc/ssl/extra.pem',
    });
  });
  test('the lists are the ones Codex 0.171.0 has', () => {
    expect(CODEX_DEFAULT_ENV_VARS).toEqual(['HOME', 'LOGNAME', 'PATH', 'SHELL', 'USER', '__CF_USER_TEXT_ENCODING', 'LANG', 'LC_ALL', 'TERM', 'TMPDIR', 'TZ']);
    expect(CODEX_CA_ENV_VARS).toEqual(['CURL_CA_BUNDLE', 'GIT_SSL_CAINFO', 'NODE_EXTRA_CA_CERTS', 'PIP_CERT', 'REQUESTS_CA_BUNDLE', 'SSL_CERT_FILE']);
  });
  test('env_vars copies names from the parent where set; env goes on top of everything', () => {
    const env = codexServerEnvironment(PARENT, { envVars: ['GEM_HOME', 'NOT_SET'], env: { HOME: '/elsewhere', EXTRA: 'x' } });
    expect(env.GEM_HOME).toBe('/home/u/.gems');
    expect('NOT_SET' in env).toBe(false);
    expect(env.HOME).toBe('/elsewhere');
    expect(env.EXTRA).toBe('x');
    expect('MY_API_TOKEN' in env).toBe(false);
  });
  test('env wins over env_vars for the same name', () => {
    expect(codexServerEnvironment(PARENT, { envVars: ['GEM_HOME'], env: { GEM_HOME: '/given' } }).GEM_HOME).toBe('/given');
  });
  test("nothing of the suite's, even when named in env_vars", () => {
    const env = codexServerEnvironment(PARENT, { envVars: ['MCP_SANDBOX_CONFORMANCE_RUN', 'MSC_SERVER'] });
    expect(Object.keys(env).filter(isSuiteVariable)).toEqual([]);
  });
  test('pure: the parent is not changed, and an inherited property is not a variable', () => {
    const parent = Object.create({ TZ: 'UTC' }) as NodeJS.ProcessEnv;
    parent.HOME = '/h';
    const before = JSON.stringify(parent);
    expect(codexServerEnvironment(parent, { envVars: ['TZ'] })).toEqual({ HOME: '/h' });
    expect(JSON.stringify(parent)).toBe(before);
  });
});

describe('the environment of a server its user starts (--http-command)', () => {
  test("the user's whole environment but the suite's own variables, env on top", () => {
    const env = userServerEnvironment(PARENT, { EXTRA: 'x', GEM_HOME: '/given' });
    expect(env.MY_API_TOKEN).toBe('tok-secret');
    expect(env.RUST_LOG).toBe('debug');
    expect(env.GEM_HOME).toBe('/given');
    expect(env.EXTRA).toBe('x');
    expect(Object.keys(env).filter(isSuiteVariable)).toEqual([]);
  });
});

describe('which variables a server needs (findNeededVariables, cli/diagnose.ts)', () => {
  const names = (n: number) => Array.from({ length: n }, (_, i) => `VAR_${String(i).padStart(3, '0')}`);
  /** A server that starts when every one of `needs` is set. */
  const server = (needs: string[]) => {
    const calls: string[][] = [];
    return { calls, works: async (subset: string[]) => (calls.push(subset), needs.every((n) => subset.includes(n))) };
  };

  test.each([1, 2, 7, 64, 128])('one variable among %i: found within 8 starts, and checked alone', async (n) => {
    for (const index of [0, n - 1, Math.floor(n / 3)]) {
      const wanted = names(n)[index]!;
      const s = server([wanted]);
      const found = await findNeededVariables(names(n), s.works);
      expect(found).toMatchObject({ needed: [wanted], unresolved: [] });
      expect(found.starts).toBe(s.calls.length);
      expect(s.calls.length).toBeLessThanOrEqual(MAX_SEARCH_STARTS);
    }
  });
  test('two variables among 10: both found', async () => {
    const s = server(['VAR_002', 'VAR_007']);
    const found = await findNeededVariables(names(10), s.works);
    expect(found.needed.sort()).toEqual(['VAR_002', 'VAR_007']);
    expect(found.unresolved).toEqual([]);
    expect(s.calls.length).toBeLessThanOrEqual(MAX_SEARCH_STARTS);
  });
  test('out of starts: what is left is named as unresolved, never more than 8 starts', async () => {
    const s = server(['VAR_001', 'VAR_150', 'VAR_299']);
    const found = await findNeededVariables(names(300), s.works);
    expect(s.calls.length).toBe(MAX_SEARCH_STARTS);
    // Whatever it settled, the needed and unresolved together still make the server start.
    expect(await s.works([...found.needed, ...found.unresolved])).toBe(true);
    expect(found.unresolved.length).toBeGreaterThan(0);
  });
});
