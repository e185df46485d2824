import { pathToFileURL } from 'node:url';
import { LAUNCHER_KEY, SANDBOX_META_KEYS, STATE_KEY, STATE_KEY_DEPRECATED, type Transport } from '../codex-wire.js';
import type { HttpRequestRecord, RecordedMessage } from './recording.js';
import { isObject } from '../json.js';

/**
 * Compares what two hosts sent to the same recording server: real Codex and the suite's fake
 * host (harness/codex-session.ts + codex-wire.ts). Used by test/differential.test.ts; the fake
 * host is only as good as its likeness to Codex on the wire, and this is where that is measured.
 *
 * Compared, per capture (one transport, one server, one sandbox profile), by COMPARISONS:
 *  - `initialize` of the model connection: the whole message, key order included;
 *  - the methods up to the first tools/call, and the tools/list request;
 *  - every tools/call, pairwise in order: id, params key order, `_meta` key order, the shape of
 *    the host-owned entries and the values that do not differ by nature (progressToken, the
 *    turn metadata's sandbox fields), how they relate (sessionId = threadId,
 *    ...); the state: both keys identical, and the whole state, contents, value types and key
 *    order, once the run's own paths are named and the fake's canary fields left out; the
 *    launcher (stdio only) likewise; no sandbox key at all for a server that did not opt in;
 *  - every resources/read, pairwise in order: the whole message (`_meta` first, its entries and
 *    the progress token where Codex puts it);
 *  - inventory connections (those that list resource templates): their initialize, and what
 *    they list, with what ids and progress tokens (the two resource listings come in either order);
 *  - over HTTP, the requests up to the first tools/call: each POST's methods and the headers a
 *    host chooses, and the GET stream and its headers (compareHttpRequests).
 */

export interface Capture {
  transport: Transport;
  records: RecordedMessage[];
  /** Whether the server advertised the sandbox capability (default true): then every call carries both state keys. */
  optedIn?: boolean;
  /** Paths that differ by nature between two runs (the workspace, the Codex executable), by name: compared as `<name>`. */
  paths?: Record<string, string>;
  /** Over HTTP: the HTTP requests the server got (method, the headers a host chooses, what they carried). */
  httpRequests?: HttpRequestRecord[];
}

/** One comparison: appends a readable entry per difference to `out`. */
export type Comparison = (real: Capture, fake: Capture, out: string[]) => void;

const HOST_OWNED = ['callId', 'x-codex-turn-metadata', 'threadId', 'sessionId', 'windowId', 'itemId', 'progressToken'];
/** Host-owned values compared as values (callId and itemId are the model's own ids: shapes only). */
const HOST_VALUES = ['progressToken'];
/** Turn metadata fields whose values differ by nature (ids, time, the model's name). */
const VARYING_TURN_FIELDS = new Set(['session_id', 'thread_id', 'model', 'turn_id', 'turn_started_at_unix_ms']);
/** Fields the fake host plants in its state on purpose (codex-wire.ts CANARY); never compared. */
const CANARY_FIELD = /^conformance/i;

/** The type skeleton of a value: objects keep their keys in order, leaves become type names. */
export function shape(value: unknown): unknown {
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length ? ['array of', shape(value[0])] : 'array';
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v)]));
  return typeof value;
}

/** A copy without the fake host's canary fields, at any depth. */
export function withoutCanaries(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCanaries);
  if (isObject(value))
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !CANARY_FIELD.test(k))
        .map(([k, v]) => [k, withoutCanaries(v)]),
    );
  return value;
}

const json = (value: unknown) => JSON.stringify(value);

/** JSON of `value` with the capture's own paths (and their file:// URLs) replaced by `<name>`. */
function named(value: unknown, capture: Capture): string {
  let text = json(value) ?? 'undefined';
  // Longest first, so that a path inside another (the executable in the workspace) stays whole.
  const paths = Object.entries(capture.paths ?? {}).sort((a, b) => b[1].length - a[1].length);
  for (const [name, path] of paths) {
    for (const form of [pathToFileURL(path).href, path]) text = text.replaceAll((json(form) ?? '').slice(1, -1), `<${name}>`);
  }
  return text;
}

function differ(label: string, real: unknown, fake: unknown, out: string[]): void {
  if (json(real) !== json(fake)) out.push(`${label}:\n    real Codex: ${json(real)}\n    fake host:  ${json(fake)}`);
}

function differNamed(label: string, real: unknown, fake: unknown, captures: [Capture, Capture], out: string[]): void {
  const [r, f] = [named(real, captures[0]), named(fake, captures[1])];
  if (r !== f) out.push(`${label}:\n    real Codex: ${r}\n    fake host:  ${f}`);
}

type Message = RecordedMessage['message'];

/**
 * The capture's connections, in order of first message (one per stdio process, one per HTTP
 * session). A server in a PID namespace of its own logs pid 1 every time: a second initialize
 * under the same pid and connection number starts the next connection.
 */
function connections(capture: Capture): Message[][] {
  const all: Message[][] = [];
  const current = new Map<string, Message[]>();
  for (const record of capture.records) {
    const key = `${record.pid}/${record.connection}`;
    let messages = current.get(key);
    if (!messages || (record.message.method === 'initialize' && messages.some((m) => m.method === 'initialize'))) {
      messages = [];
      current.set(key, messages);
      all.push(messages);
    }
    messages.push(record.message);
  }
  return all;
}

/** Inventory connections list resource templates; model connections never do. */
const isInventory = (messages: Message[]) => messages.some((m) => m.method === 'resources/templates/list');
const modelMessages = (capture: Capture) =>
  connections(capture)
    .filter((c) => !isInventory(c))
    .flat();
const inventories = (capture: Capture) => connections(capture).filter(isInventory);
const withMethod = (messages: Message[], method: string) => messages.filter((m) => m.method === method);
const paramsOf = (message: Message | undefined): Record<string, unknown> => (isObject(message?.params) ? message.params : {});
const metaOf = (message: Message | undefined): Record<string, unknown> =>
  isObject(paramsOf(message)._meta) ? (paramsOf(message)._meta as Record<string, unknown>) : {};

const compareInitialize: Comparison = (real, fake, out) => {
  const [realInit, fakeInit] = [real, fake].map((c) => withMethod(modelMessages(c), 'initialize')[0]);
  if (!realInit || !fakeInit) out.push(`initialize missing: real ${Boolean(realInit)}, fake ${Boolean(fakeInit)}`);
  else differ('initialize (whole message, key order included)', realInit, fakeInit, out);
};

const compareStartup: Comparison = (real, fake, out) => {
  const upToCall = (capture: Capture) => {
    const methods = modelMessages(capture).map((m) => String(m.method ?? '(response)'));
    const end = methods.indexOf('tools/call');
    return end < 0 ? methods : methods.slice(0, end + 1);
  };
  differ('methods up to the first tools/call', upToCall(real), upToCall(fake), out);
  differ('tools/list request', withMethod(modelMessages(real), 'tools/list')[0], withMethod(modelMessages(fake), 'tools/list')[0], out);
};

/** How the host-owned entries of one call relate to each other (a broken relation, in words). */
function brokenRelations(meta: Record<string, unknown>): string[] {
  const turn = isObject(meta['x-codex-turn-metadata']) ? meta['x-codex-turn-metadata'] : {};
  const broken: string[] = [];
  if (meta.sessionId !== meta.threadId) broken.push('sessionId is not threadId');
  if (meta.windowId !== `${String(meta.threadId)}:0`) broken.push('windowId is not "<threadId>:0"');
  if (turn.thread_id !== meta.threadId || turn.session_id !== meta.threadId) broken.push('the turn metadata names another thread');
  return broken;
}

const compareToolCalls: Comparison = (real, fake, out) => {
  const [realCalls, fakeCalls] = [withMethod(modelMessages(real), 'tools/call'), withMethod(modelMessages(fake), 'tools/call')];
  if (realCalls.length === 0 || fakeCalls.length === 0) {
    out.push(`tools/call missing: real ${realCalls.length}, fake ${fakeCalls.length}`);
    return;
  }
  differ('number of tools/call', realCalls.length, fakeCalls.length, out);
  const optedIn = real.optedIn ?? true;
  for (let i = 0; i < Math.min(realCalls.length, fakeCalls.length); i++) {
    const [realCall, fakeCall] = [realCalls[i]!, fakeCalls[i]!];
    const [realMeta, fakeMeta] = [metaOf(realCall), metaOf(fakeCall)];
    const label = (what: string) => `tools/call ${i + 1}: ${what}`;
    differ(label('id'), realCall.id, fakeCall.id, out);
    differ(label('params keys'), Object.keys(paramsOf(realCall)), Object.keys(paramsOf(fakeCall)), out);
    differ(label('_meta keys, in order'), Object.keys(realMeta), Object.keys(fakeMeta), out);
    for (const key of HOST_OWNED) differ(label(`shape of _meta["${key}"]`), shape(realMeta[key]), shape(fakeMeta[key]), out);
    for (const key of HOST_VALUES) differ(label(`_meta["${key}"]`), realMeta[key], fakeMeta[key], out);
    const turnValues = (meta: Record<string, unknown>) =>
      Object.entries(isObject(meta['x-codex-turn-metadata']) ? meta['x-codex-turn-metadata'] : {}).filter(([k]) => !VARYING_TURN_FIELDS.has(k));
    differ(label('turn metadata values (ids, time and model left out)'), turnValues(realMeta), turnValues(fakeMeta), out);
    differ(label('relations between host-owned entries'), brokenRelations(realMeta), brokenRelations(fakeMeta), out);

    for (const [side, meta] of [
      ['real Codex', realMeta],
      ['fake host', fakeMeta],
    ] as const) {
      const sandboxKeys = Object.keys(meta).filter((k) => (SANDBOX_META_KEYS as readonly string[]).includes(k));
      if (!optedIn) {
        if (sandboxKeys.length) out.push(label(`${side}: sandbox keys sent to a server that did not opt in: ${json(sandboxKeys)}`));
        continue;
      }
      if (!(STATE_KEY in meta) || !(STATE_KEY_DEPRECATED in meta)) out.push(label(`${side}: both state keys expected, got ${json(sandboxKeys)}`));
      else if (json(meta[STATE_KEY]) !== json(meta[STATE_KEY_DEPRECATED])) out.push(label(`${side}: the two state keys carry different values`));
      const hasLauncher = LAUNCHER_KEY in meta;
      if (hasLauncher !== (real.transport === 'stdio'))
        out.push(
          label(
            `${side}: launcher ${hasLauncher ? 'present' : 'absent'} over ${real.transport} (expected ${real.transport === 'stdio' ? 'present' : 'absent'})`,
          ),
        );
    }
    if (!optedIn) continue;
    differNamed(
      label('the state (contents, value types and key order; paths named, canaries left out)'),
      withoutCanaries(realMeta[STATE_KEY]),
      withoutCanaries(fakeMeta[STATE_KEY]),
      [real, fake],
      out,
    );
    if (LAUNCHER_KEY in realMeta || LAUNCHER_KEY in fakeMeta)
      differNamed(label(`_meta["${LAUNCHER_KEY}"] (paths named)`), realMeta[LAUNCHER_KEY], fakeMeta[LAUNCHER_KEY], [real, fake], out);
  }
};

const compareResourceReads: Comparison = (real, fake, out) => {
  const [realReads, fakeReads] = [withMethod(modelMessages(real), 'resources/read'), withMethod(modelMessages(fake), 'resources/read')];
  differ('number of resources/read', realReads.length, fakeReads.length, out);
  for (let i = 0; i < Math.min(realReads.length, fakeReads.length); i++) {
    differNamed(`resources/read ${i + 1} (whole message, key order included)`, realReads[i], fakeReads[i], [real, fake], out);
  }
};

const compareInventory: Comparison = (real, fake, out) => {
  const [realInventories, fakeInventories] = [inventories(real), inventories(fake)];
  differ('number of inventory connections', realInventories.length, fakeInventories.length, out);
  const [realInventory, fakeInventory] = [realInventories[0], fakeInventories[0]];
  if (!realInventory || !fakeInventory) return;
  differ('inventory: initialize (whole message)', withMethod(realInventory, 'initialize')[0], withMethod(fakeInventory, 'initialize')[0], out);
  // Codex sends the two resource listings at once: their order, ids and tokens are compared as sets.
  const listings = (messages: Message[]) => {
    const after = messages.filter((m) => m.method !== 'initialize');
    const [head, rest] = [after.slice(0, 2), after.slice(2)];
    return {
      methods: [...head.map((m) => m.method), ...rest.map((m) => m.method).sort()],
      requests: [...head, ...[...rest].sort((a, b) => String(a.method).localeCompare(String(b.method)))].map((m) => ({
        method: m.method,
        params: Object.keys(paramsOf(m)),
        meta: Object.keys(metaOf(m)),
      })),
      ids: rest.map((m) => m.id).sort(),
      progressTokens: rest.map((m) => metaOf(m).progressToken).sort(),
      first: head.map((m) => ({ id: m.id, params: m.params })),
    };
  };
  const [r, f] = [listings(realInventory), listings(fakeInventory)];
  differ('inventory: methods (the resource listings as a set)', r.methods, f.methods, out);
  differ('inventory: each request, its params and _meta keys', r.requests, f.requests, out);
  differ('inventory: initialized and tools/list', r.first, f.first, out);
  differ('inventory: resource listing ids (as a set)', r.ids, f.ids, out);
  differ('inventory: resource listing progress tokens (as a set)', r.progressTokens, f.progressTokens, out);
};

/** Every comparison, by name, in report order. */
/**
 * Over HTTP, the requests up to the first tools/call: the POSTs in order with the JSON-RPC
 * methods they carried and the headers a host chooses (User-Agent, Accept, Content-Type,
 * MCP-Protocol-Version) and whether they carried a session id; and the GET stream
 * and its headers (not its place: real Codex opens it before or after tools/list, as it happens).
 */
function compareHttpRequests(real: Capture, fake: Capture, out: string[]): void {
  if (real.transport !== 'http' || !real.httpRequests || !fake.httpRequests) return;
  const upToFirstCall = (requests: HttpRequestRecord[]) => {
    const end = requests.findIndex((r) => r.rpc.includes('tools/call'));
    return end < 0 ? requests : requests.slice(0, end + 1);
  };
  const describe = (r: HttpRequestRecord) => `${r.http} ${r.rpc.join('+') || '(no body)'} ${JSON.stringify(r.headers)}${r.session ? ' with session id' : ''}`;
  const posts = (requests: HttpRequestRecord[]) => upToFirstCall(requests).filter((r) => r.http === 'POST');
  const [realPosts, fakePosts] = [posts(real.httpRequests), posts(fake.httpRequests)];
  for (let i = 0; i < Math.max(realPosts.length, fakePosts.length); i++) {
    const [r, f] = [realPosts[i], fakePosts[i]];
    if (!r || !f || describe(r) !== describe(f))
      out.push(`http: POST #${i + 1} differs: real ${r ? describe(r) : '(none)'}, fake ${f ? describe(f) : '(none)'}`);
  }
  // The GET stream: opened, with the same headers. Not where: real Codex 0.171.0 opens it before
  // or after tools/list, as its tasks happen to run (seen both ways on the wire).
  const stream = (requests: HttpRequestRecord[]) => {
    const get = requests.find((r) => r.http === 'GET');
    return get ? describe(get) : 'no GET stream';
  };
  const [realStream, fakeStream] = [stream(real.httpRequests), stream(fake.httpRequests)];
  if (realStream !== fakeStream) out.push(`http: the GET stream differs: real ${realStream}, fake ${fakeStream}`);
}

export const COMPARISONS: Record<string, Comparison> = {
  initialize: compareInitialize,
  startup: compareStartup,
  toolCalls: compareToolCalls,
  resourceReads: compareResourceReads,
  inventory: compareInventory,
  httpRequests: compareHttpRequests,
};

/**
 * Every difference between the two captures, one readable entry each; [] when they agree.
 * `only` picks comparisons by name (a capture without tool calls, say, skips `toolCalls`).
 */
export function compareCaptures(real: Capture, fake: Capture, only: (keyof typeof COMPARISONS)[] = Object.keys(COMPARISONS)): string[] {
  const out: string[] = [];
  if (real.transport !== fake.transport) out.push(`transports differ: ${real.transport} vs ${fake.transport}`);
  for (const name of only) COMPARISONS[name]!(real, fake, out);
  return out;
}
