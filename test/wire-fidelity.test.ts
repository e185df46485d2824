import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { allScenarios } from '../suites/index.js';
import { runSuite } from '../suites/runner.js';
import type { TranscriptEntry } from '../harness/transcript.js';
import { nodePlan, referenceServer, root } from './helpers.js';

/** What real Codex 0.171.0 sent (vendored from shared/reference/codex-wire.json). */
const wire = JSON.parse(readFileSync(join(root, 'test/fixtures/codex-wire-0.171.0.json'), 'utf8'));
const captured = wire.stdio['workspace-write, capability codex/sandbox-state'];

type Message = { id?: number; method?: string; params?: Record<string, unknown> };
let sent: Message[] = [];

beforeAll(async () => {
  const plan = { ...nodePlan([referenceServer]), select: (id: string) => id === 'aliases/both-keys' };
  const report = await runSuite(plan, allScenarios);
  const transcript = report.results[0]!.transcript as TranscriptEntry[];
  sent = transcript.filter((e) => e.dir === 'host->server').map((e) => (e as { message: Message }).message);
});

const shape = (value: unknown): unknown =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'object' ? Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, shape(v)])) : typeof value;

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
  test('the state keeps Codex top-level fields and order, with canaries added at the end', () => {
    const meta = sent.find((m) => m.method === 'tools/call')!.params!._meta as Record<string, unknown>;
    const state = meta['codex/sandbox-state'] as Record<string, unknown>;
    const codexState = captured.tools_call_request_from_codex.params._meta['codex/sandbox-state'];
    expect(Object.keys(state).slice(0, 5).sort()).toEqual(Object.keys(codexState).sort());
    expect(state.sandboxCwd).toMatch(/^file:\/\/\/.*work%20space$/);
  });
});
