import { LAUNCHER_KEY, STATE_KEY, STATE_KEY_DEPRECATED, type Transport } from '../codex-wire.js';
import type { RecordedMessage } from './recording.js';

/**
 * Compares what two hosts sent to the same recording server: real Codex and the suite's fake
 * host (harness/host-session.ts + codex-wire.ts). Used by test/differential.test.ts; the fake
 * host is only as good as its likeness to Codex on the wire, and this is where that is measured.
 *
 * Compared, per transport:
 *  - `initialize`: the whole message, key order included (clientInfo.version too: both claim
 *    0.171.0, and a Codex upgrade that changes it means codex-wire.ts must follow);
 *  - the order of methods up to the first tools/call, and the tools/list request;
 *  - the first tools/call: its id, the key order of its params, the set and order of `_meta` keys;
 *  - the shape (types, nested key order) of the host-owned entries; values differ by nature
 *    (ids, timestamps, model name);
 *  - on each side, both state keys present with identical values; the set of top-level state
 *    fields (the fake adds canary fields, which are left out);
 *  - the launcher: present over stdio, absent over HTTP, and `{"codexExecutable": <string>}`.
 */

export interface Capture {
  transport: Transport;
  records: RecordedMessage[];
}

const HOST_OWNED = ['callId', 'x-codex-turn-metadata', 'threadId', 'sessionId', 'windowId', 'itemId', 'progressToken'];
/** Fields the fake host plants in its state on purpose (codex-wire.ts CANARY); never compared. */
const CANARY_FIELD = /^conformance/i;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The type skeleton of a value: objects keep their keys in order, leaves become type names. */
export function shape(value: unknown): unknown {
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length ? ['array of', shape(value[0])] : 'array';
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v)]));
  return typeof value;
}

const json = (value: unknown) => JSON.stringify(value);
const messages = (capture: Capture) => capture.records.map((r) => r.message);
const firstWith = (capture: Capture, method: string) => messages(capture).find((m) => m.method === method);
const metaOf = (message: { params?: unknown } | undefined): Record<string, unknown> =>
  isObject(message?.params) && isObject(message.params._meta) ? message.params._meta : {};

function differ(label: string, real: unknown, fake: unknown, out: string[]): void {
  if (json(real) !== json(fake)) out.push(`${label}:\n    real Codex: ${json(real)}\n    fake host:  ${json(fake)}`);
}

/** Every difference between the two captures, one readable entry each; [] when they agree. */
export function compareCaptures(real: Capture, fake: Capture): string[] {
  const out: string[] = [];
  if (real.transport !== fake.transport) out.push(`transports differ: ${real.transport} vs ${fake.transport}`);
  const transport = real.transport;

  const realInit = firstWith(real, 'initialize');
  const fakeInit = firstWith(fake, 'initialize');
  if (!realInit || !fakeInit) out.push(`initialize missing: real ${Boolean(realInit)}, fake ${Boolean(fakeInit)}`);
  else differ('initialize (whole message, key order included)', realInit, fakeInit, out);

  const upToCall = (capture: Capture) => {
    const methods = messages(capture).map((m) => String(m.method ?? '(response)'));
    const end = methods.indexOf('tools/call');
    return end < 0 ? methods : methods.slice(0, end + 1);
  };
  differ('methods up to the first tools/call', upToCall(real), upToCall(fake), out);
  differ('tools/list request', firstWith(real, 'tools/list'), firstWith(fake, 'tools/list'), out);

  const realCall = firstWith(real, 'tools/call');
  const fakeCall = firstWith(fake, 'tools/call');
  if (!realCall || !fakeCall) {
    out.push(`tools/call missing: real ${Boolean(realCall)}, fake ${Boolean(fakeCall)}`);
    return out;
  }
  differ('tools/call id', realCall.id, fakeCall.id, out);
  differ('tools/call params keys', Object.keys(isObject(realCall.params) ? realCall.params : {}), Object.keys(isObject(fakeCall.params) ? fakeCall.params : {}), out);
  const realMeta = metaOf(realCall);
  const fakeMeta = metaOf(fakeCall);
  differ('tools/call _meta keys, in order', Object.keys(realMeta), Object.keys(fakeMeta), out);
  for (const key of HOST_OWNED) differ(`shape of _meta["${key}"]`, shape(realMeta[key]), shape(fakeMeta[key]), out);

  for (const [side, meta] of [['real Codex', realMeta], ['fake host', fakeMeta]] as const) {
    if (!(STATE_KEY in meta) || !(STATE_KEY_DEPRECATED in meta)) out.push(`${side}: both state keys expected, got ${json(Object.keys(meta).filter((k) => k.startsWith('codex/')))}`);
    else if (json(meta[STATE_KEY]) !== json(meta[STATE_KEY_DEPRECATED])) out.push(`${side}: the two state keys carry different values`);
    const hasLauncher = LAUNCHER_KEY in meta;
    if (hasLauncher !== (transport === 'stdio')) out.push(`${side}: launcher ${hasLauncher ? 'present' : 'absent'} over ${transport} (expected ${transport === 'stdio' ? 'present' : 'absent'})`);
  }
  const fields = (meta: Record<string, unknown>) => (isObject(meta[STATE_KEY]) ? Object.keys(meta[STATE_KEY]).filter((k) => !CANARY_FIELD.test(k)).sort() : []);
  differ('top-level state fields (as a set, canaries left out)', fields(realMeta), fields(fakeMeta), out);
  if (LAUNCHER_KEY in realMeta || LAUNCHER_KEY in fakeMeta) differ(`shape of _meta["${LAUNCHER_KEY}"]`, shape(realMeta[LAUNCHER_KEY]), shape(fakeMeta[LAUNCHER_KEY]), out);
  return out;
}
