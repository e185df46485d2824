import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CANARY, resourceReadMeta } from '../harness/codex-wire.js';
import { withoutCanaries } from '../harness/host-mode/differential.js';
import { allScenarios } from '../suites/index.js';
import { DEFAULT_CALLER_META } from '../suites/server/resources.js';
import { runSuite } from '../suites/engine/runner.js';
import { nodePlan, referenceServer, root, transcriptOf } from './helpers.js';

/** What real Codex 0.171.0 sent (a capture of its wire, vendored). */
const wire = JSON.parse(readFileSync(join(root, 'test/fixtures/codex-wire-0.171.0.json'), 'utf8'));
const captured = wire.stdio['workspace-write, capability codex/sandbox-state'];

type Message = { id?: number; method?: string; params?: Record<string, unknown> };
let sent: Message[] = [];
let resourceReads: Message[] = [];

beforeAll(async () => {
  const plan = {
    ...nodePlan([referenceServer], {}, { http: false }),
    select: (id: string) => id === 'aliases/both-keys' || id === 'resources/read-with-caller-meta',
  };
  const report = await runSuite(plan, allScenarios);
  const messages = (id: string) =>
    transcriptOf(
      report,
      report.results.find((r) => r.id === id)!,
    )
      .filter((e) => e.dir === 'host->server')
      .map((e) => (e as { message: Message }).message);
  sent = messages('aliases/both-keys');
  resourceReads = messages('resources/read-with-caller-meta').filter((m) => m.method === 'resources/read');
});

const shape = (value: unknown): unknown =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'array'
      : typeof value === 'object'
        ? Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, shape(v)]))
        : typeof value;

describe('the fake host speaks as Codex 0.171.0 did over stdio', () => {
  test('initialize is byte-for-byte the captured request', () => {
    expect(JSON.stringify(sent[0])).toBe(JSON.stringify(captured.initialize_request_from_codex));
  });
  test('then notifications/initialized and tools/list with a progress token', () => {
    expect(sent[1]).toEqual({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(sent[2]).toEqual({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { progressToken: 0 } } });
  });
  test('tools/call: same id, same _meta keys in the same order, same shapes of host-owned entries', () => {
    const call = sent.find((m) => m.method === 'tools/call')!;
    const expected = captured.tools_call_request_from_codex;
    expect(call.id).toBe(expected.id);
    const meta = call.params!._meta as Record<string, unknown>;
    const expectedMeta = expected.params._meta as Record<string, unknown>;
    expect(Object.keys(call.params!)).toEqual(Object.keys(expected.params));
    expect(Object.keys(meta)).toEqual(Object.keys(expectedMeta));
    for (const key of ['callId', 'itemId', 'threadId', 'sessionId', 'windowId', 'x-codex-turn-metadata', 'progressToken']) {
      expect(shape(meta[key]), key).toEqual(shape(expectedMeta[key]));
    }
    expect(meta.callId).toBe('call_1');
    expect(meta.itemId).toBe('fc_1');
    expect(meta.sessionId).toBe(meta.threadId);
    expect(meta.windowId).toBe(`${String(meta.threadId)}:0`);
    expect(meta.progressToken).toBe(1);
  });
  test('both state keys carry identical values; the launcher is an absolute codexExecutable', () => {
    const meta = sent.find((m) => m.method === 'tools/call')!.params!._meta as Record<string, unknown>;
    expect(JSON.stringify(meta['codex/sandbox-state'])).toBe(JSON.stringify(meta['codex/sandbox-state-meta']));
    expect(Object.keys(meta['codex/sandbox-launcher'] as object)).toEqual(['codexExecutable']);
    expect((meta['codex/sandbox-launcher'] as { codexExecutable: string }).codexExecutable).toMatch(/^\/.*\/codex$/);
  });
  test("the state is Codex's workspace-write state, field for field and in order, with canaries added on top", () => {
    const meta = sent.find((m) => m.method === 'tools/call')!.params!._meta as Record<string, unknown>;
    const state = meta['codex/sandbox-state'] as Record<string, unknown>;
    const codexState = captured.tools_call_request_from_codex.params._meta['codex/sandbox-state'];
    expect(state.sandboxCwd).toMatch(/^file:\/\/\/.*work%20space$/);
    // Without the canaries and with the capture's paths, it is the captured state, byte for byte.
    const workspace = fileURLToPath(state.sandboxCwd as string);
    const launcher = (meta['codex/sandbox-launcher'] as { codexExecutable: string }).codexExecutable;
    // As Codex normally sends it: a per-process helper under $CODEX_HOME/tmp/arg0/, another file than the launcher.
    const helper = state.codexLinuxSandboxExe as string;
    expect(helper).toMatch(/^\/.*\/codex-home\/tmp\/arg0\/[^/]+\/codex-linux-sandbox$/);
    expect(helper).not.toBe(launcher);
    const normalized = JSON.stringify(withoutCanaries(state))
      .replaceAll(JSON.stringify(helper).slice(1, -1), '/opt/codex/bin/codex')
      .replaceAll(JSON.stringify(pathToFileURL(workspace).href).slice(1, -1), 'file:///home/dev/project')
      .replaceAll(JSON.stringify(workspace).slice(1, -1), '/home/dev/project');
    expect(normalized).toBe(JSON.stringify(codexState));
    // The canaries come after Codex's own fields, at each level they sit in.
    expect(Object.keys(state).slice(5)).toEqual([CANARY.topLevel, CANARY.fidelity]);
    expect(Object.keys(state.permissionProfile as object).at(-1)).toBe(CANARY.inProfile);
  });
  test('resources/read: _meta always, before uri; caller entries in order, then the progress token', () => {
    expect(resourceReads).toHaveLength(2);
    const [plain, withCaller] = resourceReads;
    expect(Object.keys(plain!.params!)).toEqual(['_meta', 'uri']);
    expect(plain!.params!._meta).toEqual({ progressToken: expect.any(Number) });
    expect(Object.keys(withCaller!.params!)).toEqual(['_meta', 'uri']);
    expect(Object.keys(withCaller!.params!._meta as object)).toEqual([...Object.keys(DEFAULT_CALLER_META), 'progressToken']);
  });
  test('a caller progressToken is overwritten where it stands (as Codex does)', () => {
    expect(Object.entries(resourceReadMeta({ a: 1, progressToken: 'caller', z: 2 }, 7))).toEqual([
      ['a', 1],
      ['progressToken', 7],
      ['z', 2],
    ]);
    expect(resourceReadMeta(undefined, 3)).toEqual({ progressToken: 3 });
  });
});
