import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { codexSandboxEntries, defaultState, LAUNCHER_KEY, type Transport } from '../harness/codex-wire.js';
import { compareCaptures, type Capture } from '../harness/host-mode/differential.js';
import { observeExec } from '../harness/host-mode/drive.js';
import { hostProgram } from '../harness/host-mode/host-program.js';
import { RECORDING_SERVER, RECORDING_TOOL, readRecording } from '../harness/host-mode/recording.js';
import { locateRealCodex } from '../harness/real-codex.js';
import { connect, type Target } from '../harness/target.js';

/**
 * Differential test: the same recording server (fixtures/servers/recording.mjs) watches real
 * Codex (`codex exec` with a scripted model, stdio and Streamable HTTP) and the suite's own fake
 * host (harness/target.ts connect + HostSession.callTool with codexSandboxEntries), and
 * compareCaptures() lists every difference in what they sent. Needs the @openai/codex
 * devDependency; without it the real-Codex tests are skipped with the reason (never passed).
 */

const real = locateRealCodex();
const missing = 'missing' in real ? real.missing : undefined;
const TRANSPORTS: Transport[] = ['stdio', 'http'];
const shellQuote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

const scratch = mkdtempSync(join(tmpdir(), 'msc-differential-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const realCaptures = new Map<Transport, Capture>();
const fakeCaptures = new Map<Transport, Capture>();
const timings: string[] = [];

/** One connection of the fake host: Codex's startup, then one model-style tools/call. */
async function captureFakeHost(transport: Transport, codexExecutable: string): Promise<Capture> {
  const dir = mkdtempSync(join(scratch, `fake-${transport}-`));
  const log = join(dir, 'rec.jsonl');
  const workspace = join(dir, 'work space');
  const trap = join(dir, 'trap');
  mkdirSync(workspace);
  mkdirSync(trap);
  const target: Target =
    transport === 'stdio'
      ? { kind: 'stdio', command: process.execPath, args: [RECORDING_SERVER, '--log', log], env: {} }
      : { kind: 'http-command', command: [process.execPath, RECORDING_SERVER, '--log', log, '--http', '--port'].map(shellQuote).join(' ') + ' {port}', path: '/mcp', env: {} };
  const connection = await connect(target, trap, 30_000);
  try {
    const outcome = await connection.session.callTool(RECORDING_TOOL, { note: 'call 1' }, codexSandboxEntries(defaultState(workspace), transport, codexExecutable), 30_000);
    expect(outcome.kind, JSON.stringify(outcome)).toBe('result');
  } finally {
    await connection.close();
  }
  return { transport, records: readRecording(log) };
}

beforeAll(async () => {
  if (missing) return;
  const host = hostProgram(undefined);
  for (const transport of TRANSPORTS) {
    const started = Date.now();
    const observation = await observeExec({ host, transport, timeoutMs: 120_000, tmpParent: scratch });
    timings.push(`real Codex exec over ${transport}: ${observation.durationMs} ms${observation.problems.length ? ` (${observation.problems.join('; ')})` : ''}`);
    realCaptures.set(transport, { transport, records: observation.records });
    const fakeStarted = Date.now();
    fakeCaptures.set(transport, await captureFakeHost(transport, real.path));
    timings.push(`fake host over ${transport}: ${Date.now() - fakeStarted} ms (both: ${Date.now() - started} ms)`);
  }
  console.log(`differential timings:\n  ${timings.join('\n  ')}`);
}, 300_000);

describe.skipIf(missing !== undefined)(`our fake host vs real Codex ${'version' in real ? real.version : ''}${missing ? ` (skipped: ${missing})` : ''}`, () => {
  test.each(TRANSPORTS)('over %s, real Codex reached the recording server (initialize .. tools/call)', (transport) => {
    const methods = realCaptures.get(transport)!.records.map((r) => r.message.method);
    expect(methods).toContain('initialize');
    expect(methods).toContain('tools/call');
  });

  test.each(TRANSPORTS)('over %s, the fake host sends what real Codex sends', (transport) => {
    const differences = compareCaptures(realCaptures.get(transport)!, fakeCaptures.get(transport)!);
    // On failure the message is the whole diff, one difference per entry.
    expect(differences, `\n${differences.join('\n')}`).toEqual([]);
  });
});

/** A copy of a capture with `edit` applied to its first tools/call `_meta`. */
function plant(capture: Capture, edit: (meta: Record<string, unknown>) => Record<string, unknown>): Capture {
  const records = structuredClone(capture.records);
  const call = records.find((r) => r.message.method === 'tools/call')!;
  const params = call.message.params as Record<string, unknown>;
  params._meta = edit(params._meta as Record<string, unknown>);
  return { transport: capture.transport, records };
}

const renameKey = (meta: Record<string, unknown>, from: string, to: string) => Object.fromEntries(Object.entries(meta).map(([k, v]) => [k === from ? to : k, v]));

describe('the comparison can fail (planted differences in a copy of our own capture)', () => {
  // Independent of real Codex: the fake host's capture compared with an edited copy of itself.
  let ours: Map<Transport, Capture>;
  beforeAll(async () => {
    ours = new Map();
    for (const transport of TRANSPORTS) ours.set(transport, fakeCaptures.get(transport) ?? (await captureFakeHost(transport, '/opt/codex/bin/codex')));
  }, 120_000);

  test('identical captures: no difference', () => {
    for (const transport of TRANSPORTS) expect(compareCaptures(ours.get(transport)!, ours.get(transport)!)).toEqual([]);
  });
  test('a renamed _meta key is reported', () => {
    const capture = ours.get('stdio')!;
    const differences = compareCaptures(capture, plant(capture, (meta) => renameKey(meta, 'windowId', 'windowID')));
    expect(differences.join('\n')).toContain('tools/call _meta keys, in order');
    expect(differences.join('\n')).toContain('windowID');
  });
  test('a launcher added over HTTP is reported', () => {
    const capture = ours.get('http')!;
    const differences = compareCaptures(capture, plant(capture, (meta) => ({ ...meta, [LAUNCHER_KEY]: { codexExecutable: '/opt/codex/bin/codex' } })));
    expect(differences.join('\n')).toContain('fake host: launcher present over http');
  });
  test('different values under the two state keys are reported', () => {
    const capture = ours.get('stdio')!;
    const differences = compareCaptures(capture, plant(capture, (meta) => ({ ...meta, 'codex/sandbox-state-meta': { permissionProfile: { type: 'disabled' } } })));
    expect(differences).toContain('fake host: the two state keys carry different values');
  });
  test('a host-owned entry of another type is reported', () => {
    const capture = ours.get('stdio')!;
    const differences = compareCaptures(capture, plant(capture, (meta) => ({ ...meta, progressToken: String(meta.progressToken) })));
    expect(differences.join('\n')).toContain('shape of _meta["progressToken"]');
  });
  test('a changed initialize is reported', () => {
    const capture = ours.get('http')!;
    const records = structuredClone(capture.records);
    const init = records.find((r) => r.message.method === 'initialize')!;
    (init.message.params as Record<string, unknown>).protocolVersion = '2025-11-25';
    expect(compareCaptures(capture, { transport: 'http', records }).join('\n')).toContain('initialize (whole message, key order included)');
  });
});
