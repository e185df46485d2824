import type { ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort } from '../harness/http-target.js';
import { startReferenceHttp } from './fixtures/reference-http.js';
import { referenceServer, root } from './helpers.js';
import { everyArtifactFlags, lastLine, reporterFlags, runCli } from './fixtures/run-cli.js';

/**
 * `--codex-config [FILE] --server NAME`: the server as Codex is configured to start it, from
 * examples/codex-config.toml: the stdio entry runs the reference server green; the HTTP entry sends
 * `Authorization: Bearer <token>` (the token from the variable bearer_token_env_var names) and its
 * http_headers on every request, and the token is in no artifact; enabled_tools/disabled_tools
 * decide which tools the suite may call; every problem with the file or the entry is one line, exit 2.
 */

const EXAMPLE = join(root, 'examples/codex-config.toml');
const TOKEN = 'bearer-7Hq2-unique-token';
const scratch = mkdtempSync(join(tmpdir(), 'codex-config-test-'));

let upstream: ChildProcess;
let upstreamPort: number;
let proxy: Server;
let proxyPort: number;
const seen: { authorization?: string; client?: string }[] = [];

beforeAll(async () => {
  ({ process: upstream, port: upstreamPort } = await startReferenceHttp());
  proxyPort = await freePort();
  // Records each request's Authorization and X-Client; without the bearer token, 401.
  proxy = createServer((req, res) => {
    seen.push({ authorization: req.headers.authorization, client: req.headers['x-client'] as string | undefined });
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      req.resume();
      res.writeHead(401).end();
      return;
    }
    const up = httpRequest({ host: '127.0.0.1', port: upstreamPort, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => proxy.listen(proxyPort, '127.0.0.1', () => resolve()));
});

afterAll(async () => {
  upstream?.kill('SIGKILL');
  await new Promise((resolve) => proxy?.close(resolve));
  rmSync(scratch, { recursive: true, force: true });
});

/** A copy of the example whose HTTP entry points at this test's proxy. */
function exampleCopy(dir: string): string {
  const file = join(dir, 'config.toml');
  writeFileSync(file, readFileSync(EXAMPLE, 'utf8').replace('http://127.0.0.1:8765/mcp', `http://127.0.0.1:${proxyPort}/mcp`));
  return file;
}

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : [join(dir, name)]));

describe('--codex-config examples/codex-config.toml', () => {
  test('--server reference: the reference server as the entry starts it, green; the header names the file and entry', async () => {
    const run = await runCli(['--codex-config', EXAMPLE, '--server', 'reference', ...reporterFlags({ json: join(scratch, 'stdio.json') })], { cwd: root });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout.split('\n')[0]).toContain(`target: node fixtures/servers/mutant-base/server.mjs ([mcp_servers.reference] in ${EXAMPLE})`);
    const report = JSON.parse(readFileSync(join(scratch, 'stdio.json'), 'utf8')) as { target: unknown; exec: { tool: string } };
    expect(report.target).toMatchObject({ codexConfig: { file: EXAMPLE, server: 'reference' }, command: ['node', 'fixtures/servers/mutant-base/server.mjs'] });
    expect(report.exec.tool).toBe('exec');
    expect(lastLine(run.stdout)).toMatch(/^\d+ passed, 0 failed, \d+ skipped$/);
  });

  test('--server reference_http: Authorization: Bearer and http_headers on every request; the token is in no artifact', async () => {
    const out = join(scratch, 'http');
    mkdirSync(out);
    const config = exampleCopy(out);
    seen.length = 0;
    const run = await runCli(['--codex-config', config, '--server', 'reference_http', '--only', 'capability/*', ...everyArtifactFlags()], {
      cwd: out,
      env: { TMPDIR: out, REFERENCE_MCP_TOKEN: TOKEN },
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(seen.length).toBeGreaterThan(3);
    expect(seen.every((s) => s.authorization === `Bearer ${TOKEN}` && s.client === 'conformance')).toBe(true);
    const report = JSON.parse(readFileSync(join(out, 'r.json'), 'utf8')) as { target: unknown; checks: { transport: string; status: string }[] };
    expect(report.target).toMatchObject({ codexConfig: { server: 'reference_http' }, url: `http://127.0.0.1:${proxyPort}/mcp` });
    expect(report.checks.filter((c) => c.transport === 'http' && c.status === 'pass').length).toBeGreaterThan(0);
    const artifacts = new Map([
      ['stdout', run.stdout],
      ['stderr', run.stderr],
      ...files(out).map((file) => [relative(out, file), readFileSync(file, 'utf8')] as [string, string]),
    ]);
    expect([...artifacts.keys()].some((name) => name.startsWith('transcripts/'))).toBe(true);
    for (const [name, text] of artifacts) expect(text.includes(TOKEN), `${name} leaks the token`).toBe(false);
  });

  test('the default file is $CODEX_HOME/config.toml', async () => {
    const home = join(scratch, 'codex-home');
    mkdirSync(home);
    copyFileSync(EXAMPLE, join(home, 'config.toml'));
    const run = await runCli(['--codex-config', '--server', 'reference', '--only', 'capability/*'], { cwd: root, env: { CODEX_HOME: home } });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout.split('\n')[0]).toContain(`([mcp_servers.reference] in ${join(home, 'config.toml')})`);
  });
});

describe('enabled_tools and disabled_tools: the tools the suite may call', () => {
  const entry = (extra: string) => {
    const file = join(scratch, `tools-${Math.random().toString(36).slice(2)}.toml`);
    writeFileSync(file, `[mcp_servers.ref]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(referenceServer)}]\n${extra}\n`);
    return file;
  };
  test('detection looks only at enabled tools: a disabled one is passed over; none left, the exec checks are not applicable', async () => {
    const detected = async (extra: string) => {
      const run = await runCli(['--codex-config', entry(extra), '--server', 'ref', '--only', 'execution/*', ...reporterFlags({ json: '' })]);
      return JSON.parse(run.stdout) as { exec: { tool: string } | null; checks: { status: string; skipReason?: string }[] };
    };
    // The reference's session_open also takes a command: the next tool detection finds.
    expect((await detected('disabled_tools = ["exec"]')).exec?.tool).toBe('session_open');
    expect((await detected('enabled_tools = ["session_open", "exec"]\ndisabled_tools = ["session_open"]')).exec?.tool).toBe('exec');
    const report = await detected('disabled_tools = ["exec", "session_open"]');
    expect(report.exec).toBeNull();
    expect(report.checks.every((c) => c.status === 'skip' && c.skipReason === 'not-applicable')).toBe(true);
  });
  test('--exec-tool naming a tool enabled_tools leaves out: Codex would not call it', async () => {
    const run = await runCli(['--codex-config', entry('enabled_tools = ["session_open"]'), '--server', 'ref', '--exec-tool', 'exec', '--only', 'execution/*']);
    expect(run.stdout).toContain('tool "exec" is not enabled for this server in the Codex config (enabled_tools, disabled_tools): Codex would not call it');
  });
  test('tool_timeout_sec and startup_timeout_sec are the budgets; a flag beside them wins', async () => {
    const file = entry('startup_timeout_sec = 0.001');
    const slow = await runCli(['--codex-config', file, '--server', 'ref', '--only', 'capability/*']);
    expect(slow.code).toBe(4);
    expect(slow.stdout).toContain('within the startup timeout (1 ms)');
    const flag = await runCli(['--codex-config', file, '--server', 'ref', '--only', 'capability/*', '--startup-timeout', '30']);
    expect(flag.code, flag.stdout).toBe(0);
  });
});

describe('what is wrong with the Codex config: exit 2, one line', () => {
  const write = (name: string, text: string) => {
    const file = join(scratch, name);
    writeFileSync(file, text);
    return file;
  };
  test.each([
    [
      'an unknown server, listing the ones there are',
      () => ['--codex-config', EXAMPLE, '--server', 'nope'],
      /has no \[mcp_servers\.nope\]: its servers are "reference", "reference_http"$/,
    ],
    [
      'malformed TOML, with line and column',
      () => ['--codex-config', write('bad.toml', 'model = "x"\n[mcp_servers.a\ncommand = "y"\n'), '--server', 'a'],
      /is not valid TOML: line 2, column \d+: /,
    ],
    [
      'enabled = false',
      () => ['--codex-config', write('off.toml', '[mcp_servers.a]\ncommand = "node"\nenabled = false\n'), '--server', 'a'],
      /\[mcp_servers\.a\] in .* has enabled = false: Codex does not start it/,
    ],
    [
      'an unset bearer token variable',
      () => ['--codex-config', EXAMPLE, '--server', 'reference_http'],
      /bearer_token_env_var .* names REFERENCE_MCP_TOKEN, which is not set/,
    ],
    ['a missing file', () => ['--codex-config', join(scratch, 'none.toml'), '--server', 'a'], /cannot read Codex config .*none\.toml: ENOENT$/],
    ['--server without --codex-config', () => ['--server', 'a', 'x.mjs'], /--server names an entry of a Codex config: give --codex-config \[FILE\] too$/],
    ['--codex-config without --server', () => ['--codex-config', EXAMPLE], /--codex-config needs --server NAME/],
    ['a server command beside it', () => ['--codex-config', EXAMPLE, '--server', 'reference', 'other.mjs'], /not both$/],
    [
      'a non-loopback url',
      () => ['--codex-config', write('far.toml', '[mcp_servers.a]\nurl = "https://example.com/mcp"\n'), '--server', 'a'],
      /must be a loopback address/,
    ],
  ])('%s', async (_, args, message) => {
    const run = await runCli(args(), { cwd: scratch, env: { REFERENCE_MCP_TOKEN: '' } });
    expect(run.code, run.stderr).toBe(2);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^mcp-sandbox-conformance: /);
    expect(lines[0]).toMatch(message);
    expect(run.stdout).toBe('');
  });
});
