import type { ChildProcess } from 'node:child_process';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort } from '../harness/http-target.js';
import { startReferenceHttp } from './fixtures/reference-http.js';
import { connect } from '../harness/target.js';
import { referenceServer } from './helpers.js';
import { everyArtifactFlags, runCli } from './fixtures/run-cli.js';

/**
 * The fake host's HTTP requests, as a loopback server sees them, against what Codex 0.171.0 sent
 * (`codex exec` against a recording proxy, 2026-12-01): every request carries
 * `user-agent: codex-mcp-client/0.171.0` and `accept: text/event-stream, application/json`
 * (the GET too), every request after `initialize` carries `mcp-protocol-version`, and the GET
 * stream opens after `tools/list`. `--url` credentials become `Authorization: Basic` on every
 * request, and the password appears in no artifact of the run.
 */

const CODEX_0_171_0 = [
  { verb: 'POST', rpc: 'initialize', protocolVersion: false },
  { verb: 'POST', rpc: 'notifications/initialized', protocolVersion: true },
  { verb: 'POST', rpc: 'tools/list', protocolVersion: true },
  { verb: 'GET', rpc: undefined, protocolVersion: true },
];
const USER = 'alice';
const PASSWORD = 'pw-Zq81-unique';
const BASIC = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;

interface Seen {
  verb: string;
  url: string;
  rpc?: string;
  headers: Record<string, string>;
  /** Whether the answer to tools/list had been sent back when this request arrived. */
  afterToolsListAnswered: boolean;
}

const scratch = mkdtempSync(join(tmpdir(), 'http-headers-test-'));
let upstream: ChildProcess;
let upstreamPort: number;
let proxy: Server;
let proxyPort: number;
let seen: Seen[] = [];
let toolsListAnswered = false;

/** A proxy that records each request and forwards it to the reference server; without the Basic credentials, 401. */
function startProxy(): Promise<void> {
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let rpc: string | undefined;
      try {
        rpc = (JSON.parse(body) as { method?: string }).method;
      } catch {
        // a GET or DELETE: no body
      }
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      seen.push({ verb: req.method ?? '', url: req.url ?? '', rpc, headers, afterToolsListAnswered: toolsListAnswered });
      if (req.headers.authorization !== BASIC) {
        res.writeHead(401).end();
        return;
      }
      const up = httpRequest({ host: '127.0.0.1', port: upstreamPort, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        if (rpc === 'tools/list') answer.on('end', () => (toolsListAnswered = true));
      });
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  return new Promise((resolve) => proxy.listen(proxyPort, '127.0.0.1', () => resolve()));
}

beforeAll(async () => {
  ({ process: upstream, port: upstreamPort } = await startReferenceHttp());
  proxyPort = await freePort();
  await startProxy();
});

afterAll(async () => {
  upstream?.kill('SIGKILL');
  await new Promise((resolve) => proxy?.close(resolve));
  rmSync(scratch, { recursive: true, force: true });
});

const url = () => `http://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${proxyPort}/mcp`;

describe('HTTP as Codex 0.171.0 speaks it', () => {
  test('headers, protocol version after initialize, the GET stream after tools/list, Basic credentials on every request', async () => {
    seen = [];
    toolsListAnswered = false;
    const trapDir = mkdtempSync(join(scratch, 'trap-'));
    const connection = await connect({ kind: 'http-url', url: url() }, trapDir, 30_000);
    const version = connection.handshake.initializeResult.protocolVersion;
    expect(version).toBe('2025-06-18');
    // The GET is sent after the handshake returns: wait for it (bounded), then one more request.
    for (let i = 0; i < 1000 && !seen.some((s) => s.verb === 'GET'); i++) await new Promise((r) => setTimeout(r, 10));
    await connection.session.request('ping', undefined, 10_000);
    await connection.close();

    expect(seen.map((s) => ({ verb: s.verb, rpc: s.rpc, protocolVersion: 'mcp-protocol-version' in s.headers })).slice(0, 4)).toEqual(CODEX_0_171_0);
    expect(seen.find((s) => s.verb === 'GET')!.afterToolsListAnswered).toBe(true);
    expect(seen.map((s) => s.verb)).toContain('DELETE');
    for (const request of seen) {
      expect(request.url).toBe('/mcp');
      expect(request.headers['user-agent']).toBe('codex-mcp-client/0.171.0');
      expect(request.headers.accept).toBe('text/event-stream, application/json');
      expect(request.headers.authorization).toBe(BASIC);
      if (request.rpc !== 'initialize') expect(request.headers['mcp-protocol-version']).toBe(version);
    }
    // Nothing was refused: the credentials were good on every request.
    expect(connection.transcript.entries.filter((e) => e.dir === 'note' && /401/.test(JSON.stringify(e)))).toEqual([]);
  });

  test('--url with credentials: the run uses them, and the password is in no artifact', async () => {
    seen = [];
    const out = join(scratch, 'cli');
    mkdirSync(out);
    const run = await runCli(['--url', url(), '--only', 'capability/*', ...everyArtifactFlags(), referenceServer], { cwd: out, env: { TMPDIR: out } });
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'r.json'), 'utf8')) as { checks: { id: string; transport: string; status: string }[] };
    expect(report.checks.filter((c) => c.transport === 'http' && c.status === 'pass').length).toBeGreaterThan(0);
    expect(seen.length).toBeGreaterThan(3);
    expect(seen.every((s) => s.headers.authorization === BASIC)).toBe(true);
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : [join(dir, name)]));
    const artifacts = new Map([
      ['stdout', run.stdout],
      ['stderr', run.stderr],
      ...files(out).map((file) => [relative(out, file), readFileSync(file, 'utf8')] as [string, string]),
    ]);
    expect([...artifacts.keys()].some((name) => name.startsWith('transcripts/'))).toBe(true);
    for (const [name, text] of artifacts) {
      for (const secret of [PASSWORD, encodeURIComponent(PASSWORD), BASIC.slice('Basic '.length)])
        expect(text.includes(secret), `${name} leaks ${secret}`).toBe(false);
    }
  });
});
