import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  codexSandboxEntries,
  codexState,
  LAUNCHER_KEY,
  sandboxModeOf,
  STATE_KEY,
  STATE_KEY_DEPRECATED,
  type StateProfile,
  type Transport,
} from '../harness/codex-wire.js';
import { AppServerClient } from '../harness/host-mode/app-server.js';
import { writeConfig, type HostConfig } from '../harness/host-mode/codex-config.js';
import { compareCaptures, type Capture } from '../harness/host-mode/differential.js';
import { observeExec } from '../harness/host-mode/drive.js';
import { hostProgram } from '../harness/host-mode/host-program.js';
import {
  RECORDING_RESOURCE,
  RECORDING_SERVER,
  RECORDING_TOOL,
  readHttpRequests,
  readRecording,
  startRecordingServer,
  type Capability,
  type HttpRequestRecord,
  type RecordedMessage,
} from '../harness/host-mode/recording.js';
import { codexServerEnvironment, userServerEnvironment } from '../harness/codex-environment.js';
import { locateRealCodex } from '../harness/real-codex.js';
import { connect, type Target } from '../harness/target.js';
import { sandboxOptIn } from '../suites/engine/runner.js';
import { realCodexOrFail } from './fixtures/requirements.js';

/**
 * Differential test: the same recording server (fixtures/servers/recording.mjs) watches real
 * Codex and the suite's own fake host (harness/target.ts connect + CodexSession, codex-wire.ts
 * states), and compareCaptures() lists every difference in what they sent:
 *  - `codex exec` with a scripted model: two calls to an opted-in server, one to a server that did
 *    not opt in; over stdio and Streamable HTTP under workspace-write, and over stdio under each
 *    other profile (read-only, workspace-write with network, danger-full-access);
 *  - `codex app-server`: resource reads with no, plain and progressToken-carrying caller `_meta`,
 *    then `mcpServerStatus/list`, which opens an inventory connection.
 * Needs the @openai/codex devDependency (npm ci installs it); without it the file fails with one
 * line naming it (test/fixtures/requirements.ts), never skips.
 */

const real = locateRealCodex();
const codexPath = 'path' in real ? real.path : '/opt/codex/bin/codex';
const PROFILES: StateProfile[] = ['workspace-write', 'read-only', 'workspace-write-network', 'danger-full-access'];
const shellQuote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

const scratch = mkdtempSync(join(tmpdir(), 'msc-differential-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** What one host sent in one setting: to the opted-in server, and to the one that did not opt in. */
interface ExecCaptures {
  optedIn: Capture;
  plain: Capture;
}
const key = (transport: Transport, profile: StateProfile) => `${transport} ${profile}`;
const SETTINGS: [Transport, StateProfile][] = [
  ['stdio', 'workspace-write'],
  ['http', 'workspace-write'],
  ...PROFILES.slice(1).map((p): [Transport, StateProfile] => ['stdio', p]),
];
const realExec = new Map<string, ExecCaptures>();
const fakeExec = new Map<string, ExecCaptures>();
let realApp: Capture | undefined;
let fakeApp: Capture | undefined;
const timings: string[] = [];

/** The caller `_meta` of the three resource reads (null: none), the same for both hosts. */
const READS: { uri: string; meta: Record<string, unknown> | null }[] = [
  { uri: `${RECORDING_RESOURCE}?read=none`, meta: null },
  { uri: `${RECORDING_RESOURCE}?read=plain`, meta: { 'x-conformance-unrelated': { nested: [1, {}] }, zeta: 'z' } },
  { uri: `${RECORDING_RESOURCE}?read=token`, meta: { alpha: 1, progressToken: 'caller-token', omega: [null] } },
];

const recordingTarget = (transport: Transport, log: string, capability: Capability): Target => {
  const args = [RECORDING_SERVER, '--log', log, '--capability', capability];
  return transport === 'stdio'
    ? { kind: 'stdio', command: process.execPath, args, environment: codexServerEnvironment(process.env) }
    : {
        kind: 'http-command',
        command: [process.execPath, ...args, '--http', '--port'].map(shellQuote).join(' ') + ' {port}',
        path: '/mcp',
        environment: userServerEnvironment(process.env),
      };
};

/** A fresh dir with a workspace whose name has a space, like host mode's. */
function fakeDirs(label: string) {
  const dir = mkdtempSync(join(scratch, `fake-${label.replace(/\W+/g, '-')}-`));
  const workspace = join(dir, 'work space');
  const trap = join(dir, 'trap');
  mkdirSync(workspace);
  mkdirSync(trap);
  return { dir, workspace, trap };
}

/** The fake host as the suite drives it: `calls` model-style tools/calls, with sandbox entries only if the server opted in. */
async function fakeCalls(
  transport: Transport,
  capability: Capability,
  calls: number,
  profile: StateProfile,
  state: Record<string, unknown>,
  dirs: ReturnType<typeof fakeDirs>,
): Promise<Pick<Capture, 'records' | 'httpRequests'>> {
  const log = join(dirs.dir, `rec-${capability}.jsonl`);
  const connection = await connect(recordingTarget(transport, log, capability), dirs.trap, 30_000);
  // The policy in force, which the turn metadata names also on calls that carry no state.
  connection.session.thread.sandboxMode = sandboxModeOf(profile);
  try {
    const entries = sandboxOptIn(connection.handshake.initializeResult) ? codexSandboxEntries(state, transport, codexPath) : {};
    for (let call = 1; call <= calls; call++) {
      const outcome = await connection.session.callTool(RECORDING_TOOL, { note: `call ${call}` }, entries, 30_000);
      expect(outcome.kind, JSON.stringify(outcome)).toBe('result');
    }
  } finally {
    await connection.close();
  }
  return { records: readRecording(log), ...(transport === 'http' ? { httpRequests: readHttpRequests(log) } : {}) };
}

async function captureFakeExec(transport: Transport, profile: StateProfile): Promise<ExecCaptures> {
  const dirs = fakeDirs(key(transport, profile));
  // As the runner builds it (suites/engine/runner.ts), with the same Codex executable the real run had.
  const state = codexState(profile, dirs.workspace, { linuxSandboxExe: codexPath });
  const paths = { workspace: dirs.workspace, codex: codexPath };
  return {
    optedIn: { transport, ...(await fakeCalls(transport, 'current', 2, profile, state, dirs)), paths },
    plain: { transport, ...(await fakeCalls(transport, 'none', 1, profile, state, dirs)), optedIn: false, paths },
  };
}

/** The fake host's resource reads on a model connection, then an inventory connection. */
async function captureFakeApp(): Promise<Capture> {
  const dirs = fakeDirs('app');
  const log = join(dirs.dir, 'rec.jsonl');
  const target = recordingTarget('stdio', log, 'current');
  const connection = await connect(target, dirs.trap, 30_000);
  try {
    for (const read of READS) expect((await connection.session.readResource(read.uri, read.meta ?? undefined, 30_000)).kind).toBe('result');
  } finally {
    await connection.close();
  }
  const inventory = await connect(target, dirs.trap, 30_000, 'inventory');
  await inventory.close();
  return { transport: 'stdio', records: readRecording(log), paths: { workspace: dirs.workspace, codex: codexPath } };
}

const PROFILE_CONFIG: Record<StateProfile, { sandboxMode: HostConfig['sandboxMode']; networkAccess?: boolean }> = {
  'read-only': { sandboxMode: 'read-only' },
  'workspace-write': { sandboxMode: 'workspace-write' },
  'workspace-write-network': { sandboxMode: 'workspace-write', networkAccess: true },
  'danger-full-access': { sandboxMode: 'danger-full-access' },
};

/** Real `codex app-server`: the same resource reads through mcpServer/resource/read, then mcpServerStatus/list. */
async function captureRealApp(): Promise<Capture> {
  const root = mkdtempSync(join(scratch, 'real-app-'));
  const [codexHome, workspace] = [join(root, 'codex-home'), join(root, 'work space')];
  mkdirSync(codexHome);
  mkdirSync(workspace);
  const log = join(root, 'rec.jsonl');
  const server = await startRecordingServer('stdio', log, 'current');
  // No model is asked anything: the provider URL only has to be well-formed.
  writeConfig({ codexHome, workspace, modelBaseUrl: 'http://127.0.0.1:9/v1', servers: { rec: server.config }, sandboxMode: 'workspace-write' });
  const app = new AppServerClient(hostProgram(undefined), { ...process.env, CODEX_HOME: codexHome }, workspace);
  try {
    await app.start();
    const ok = async (method: string, params: Record<string, unknown>) => {
      const outcome = await app.request(method, params, 30_000);
      expect(outcome.kind, `${method}: ${JSON.stringify(outcome)}`).toBe('result');
      return outcome;
    };
    await ok('initialize', { clientInfo: { name: 'mcp-sandbox-conformance', title: null, version: '0.1.0' }, capabilities: { experimentalApi: true } });
    app.notify('initialized');
    const thread = await ok('thread/start', { cwd: workspace });
    const threadId = (thread as { result: { thread: { id: string } } }).result.thread.id;
    for (const read of READS) await ok('mcpServer/resource/read', { server: 'rec', threadId, uri: read.uri, _meta: read.meta });
    await ok('mcpServerStatus/list', {});
  } finally {
    await app.close();
    await server.stop();
  }
  return { transport: 'stdio', records: readRecording(log), paths: { workspace, codex: codexPath } };
}

beforeAll(async () => {
  realCodexOrFail();
  const host = hostProgram(undefined);
  for (const [transport, profile] of SETTINGS) {
    const started = Date.now();
    const observation = await observeExec({ host, transport, timeoutMs: 120_000, tmpParent: scratch, ...PROFILE_CONFIG[profile] });
    timings.push(
      `real Codex exec, ${key(transport, profile)}: ${observation.durationMs} ms${observation.problems.length ? ` (${observation.problems.join('; ')})` : ''}`,
    );
    const paths = { workspace: observation.workspace, codex: codexPath };
    realExec.set(key(transport, profile), {
      optedIn: { transport, records: observation.records, paths, ...(transport === 'http' ? { httpRequests: observation.httpRequests } : {}) },
      plain: { transport, records: observation.plainRecords, optedIn: false, paths },
    });
    const fakeStarted = Date.now();
    fakeExec.set(key(transport, profile), await captureFakeExec(transport, profile));
    timings.push(`fake host, ${key(transport, profile)}: ${Date.now() - fakeStarted} ms (both: ${Date.now() - started} ms)`);
  }
  const started = Date.now();
  realApp = await captureRealApp();
  timings.push(`real Codex app-server: ${Date.now() - started} ms`);
  fakeApp = await captureFakeApp();
  console.log(`differential timings:\n  ${timings.join('\n  ')}`);
}, 300_000);

describe(`our fake host vs real Codex ${'version' in real ? real.version : ''}`, () => {
  test.each(SETTINGS)('over %s under %s, real Codex reached both recording servers (initialize .. tools/call)', (transport, profile) => {
    const { optedIn, plain } = realExec.get(key(transport, profile))!;
    expect(optedIn.records.filter((r) => r.message.method === 'tools/call')).toHaveLength(2);
    expect(plain.records.filter((r) => r.message.method === 'tools/call')).toHaveLength(1);
    // Over HTTP the requests themselves were recorded too (compareCaptures compares them).
    if (transport === 'http') expect(optedIn.httpRequests!.filter((r) => r.http === 'GET' || r.rpc.includes('tools/call')).length).toBeGreaterThanOrEqual(2);
  });

  test.each(SETTINGS)('over %s under %s, the fake host sends what real Codex sends, call for call', (transport, profile) => {
    const [r, f] = [realExec.get(key(transport, profile))!, fakeExec.get(key(transport, profile))!];
    const differences = [...compareCaptures(r.optedIn, f.optedIn), ...compareCaptures(r.plain, f.plain)];
    // On failure the message is the whole diff, one difference per entry.
    expect(differences, `\n${differences.join('\n')}`).toEqual([]);
  });

  test('resource reads and the inventory connection: the fake host sends what real Codex sends', () => {
    expect(realApp!.records.filter((r) => r.message.method === 'resources/read')).toHaveLength(READS.length);
    expect(realApp!.records.filter((r) => r.message.method === 'resources/templates/list')).toHaveLength(1);
    const differences = compareCaptures(realApp!, fakeApp!, ['initialize', 'resourceReads', 'inventory']);
    expect(differences, `\n${differences.join('\n')}`).toEqual([]);
  });
});

type Edit = (message: RecordedMessage['message']) => void;

/** A copy of a capture with `edit` applied to the `nth` message of `method` (1-based). */
function plant(capture: Capture, method: string, nth: number, edit: Edit): Capture {
  const records = structuredClone(capture.records);
  edit(records.filter((r) => r.message.method === method)[nth - 1]!.message);
  return { ...capture, records };
}
const metaOf = (message: RecordedMessage['message']) => (message.params as { _meta: Record<string, unknown> })._meta;
const stateOf = (message: RecordedMessage['message']) => metaOf(message)[STATE_KEY] as Record<string, unknown>;
/** Both state keys edited alike: the two-keys check stays quiet, the state comparison must speak. */
const editState =
  (edit: (state: Record<string, unknown>) => Record<string, unknown>): Edit =>
  (message) => {
    const meta = metaOf(message);
    meta[STATE_KEY] = edit(meta[STATE_KEY] as Record<string, unknown>);
    meta[STATE_KEY_DEPRECATED] = structuredClone(meta[STATE_KEY]);
  };
const renameKey = (object: Record<string, unknown>, from: string, to: string) =>
  Object.fromEntries(Object.entries(object).map(([k, v]) => [k === from ? to : k, v]));
const reorder = (object: Record<string, unknown>, first: string) => ({ [first]: object[first], ...object });
const entriesOf = (state: Record<string, unknown>) => (state.permissionProfile as { file_system: { entries: unknown[] } }).file_system.entries;

describe('the comparison can fail (planted differences in a copy of our own capture)', () => {
  // Independent of real Codex: the fake host's captures compared with edited copies of themselves.
  const ours = new Map<string, ExecCaptures>();
  let app: Capture;
  beforeAll(async () => {
    for (const [transport, profile] of SETTINGS)
      ours.set(key(transport, profile), fakeExec.get(key(transport, profile)) ?? (await captureFakeExec(transport, profile)));
    app = fakeApp ?? (await captureFakeApp());
  }, 120_000);
  const stdio = () => ours.get(key('stdio', 'workspace-write'))!.optedIn;
  const found = (real: Capture, fake: Capture, label: string) => expect(compareCaptures(real, fake).join('\n')).toContain(label);

  test('identical captures: no difference', () => {
    for (const { optedIn, plain } of ours.values()) expect([...compareCaptures(optedIn, optedIn), ...compareCaptures(plain, plain)]).toEqual([]);
    expect(compareCaptures(app, app, ['initialize', 'resourceReads', 'inventory'])).toEqual([]);
  });
  test('over HTTP the requests themselves are compared: a header, a missing protocol version, the GET stream', () => {
    const http = ours.get(key('http', 'workspace-write'))!.optedIn;
    const requests = http.httpRequests!;
    // Not vacuous: the fake's own HTTP requests were recorded, the GET stream and a tools/call among them.
    expect(requests.some((r) => r.http === 'GET')).toBe(true);
    expect(requests.some((r) => r.rpc.includes('tools/call'))).toBe(true);
    expect(requests.every((r) => r.headers['user-agent'] === 'codex-mcp-client/0.171.0')).toBe(true);
    const withRequests = (edit: (r: HttpRequestRecord[]) => HttpRequestRecord[]): Capture => ({ ...http, httpRequests: edit(structuredClone(requests)) });
    const firstPost = (rs: HttpRequestRecord[]) => rs.find((r) => r.http === 'POST')!;
    found(
      http,
      withRequests((rs) => ((firstPost(rs).headers['user-agent'] = 'node'), rs)),
      'http: POST #1 differs',
    );
    const second = (rs: HttpRequestRecord[]) => rs.filter((r) => r.http === 'POST')[1]!;
    found(
      http,
      withRequests((rs) => (delete second(rs).headers['mcp-protocol-version'], rs)),
      'http: POST #2 differs',
    );
    found(
      http,
      withRequests((rs) => rs.filter((r) => r.http !== 'GET')),
      'http: the GET stream differs',
    );
    found(
      http,
      withRequests((rs) => rs.map((r) => (r.http === 'GET' ? { ...r, headers: { ...r.headers, accept: 'application/json' } } : r))),
      'http: the GET stream differs',
    );
  });
  test('a renamed _meta key in the second call is reported: every call is compared', () => {
    const planted = plant(stdio(), 'tools/call', 2, (m) => ((m.params as Record<string, unknown>)._meta = renameKey(metaOf(m), 'windowId', 'windowID')));
    found(stdio(), planted, 'tools/call 2: _meta keys, in order');
  });
  test('a missing call is reported', () => {
    const planted = { ...stdio(), records: stdio().records.filter((r, i, all) => r !== all.filter((x) => x.message.method === 'tools/call').at(-1)) };
    found(stdio(), planted, 'number of tools/call');
  });
  test('a host-owned value that differs is reported (progressToken, turn metadata, how the ids relate)', () => {
    found(
      stdio(),
      plant(stdio(), 'tools/call', 2, (m) => (metaOf(m).progressToken = 7)),
      'tools/call 2: _meta["progressToken"]',
    );
    found(
      stdio(),
      plant(stdio(), 'tools/call', 1, (m) => ((metaOf(m)['x-codex-turn-metadata'] as Record<string, unknown>).sandbox_mode = 'read-only')),
      'tools/call 1: turn metadata values',
    );
    found(
      stdio(),
      plant(stdio(), 'tools/call', 1, (m) => (metaOf(m).sessionId = 'another')),
      'tools/call 1: relations between host-owned entries',
    );
  });
  test('the state: field order, value types and contents are each reported, per profile', () => {
    const label = 'the state (contents, value types and key order';
    found(
      stdio(),
      plant(
        stdio(),
        'tools/call',
        2,
        editState((s) => reorder(s, 'sandboxCwd')),
      ),
      `tools/call 2: ${label}`,
    );
    found(
      stdio(),
      plant(
        stdio(),
        'tools/call',
        1,
        editState((s) => ({ ...s, useMxc: 'false' })),
      ),
      label,
    );
    found(
      stdio(),
      plant(
        stdio(),
        'tools/call',
        1,
        editState((s) => (entriesOf(s).splice(3, 1), s)),
      ),
      label,
    ); // tmpdir left out
    for (const profile of PROFILES) {
      const capture = ours.get(key('stdio', profile))!.optedIn;
      const network = editState((s) => ({ ...s, permissionProfile: { ...(s.permissionProfile as object), network: 'enabled' } }));
      const planted = plant(
        capture,
        'tools/call',
        1,
        profile === 'workspace-write-network' ? editState((s) => ({ ...s, permissionProfile: { type: 'disabled' } })) : network,
      );
      found(capture, planted, label);
    }
    // A path of the run that is not its own workspace counts: paths are named, not ignored.
    found(
      stdio(),
      plant(
        stdio(),
        'tools/call',
        1,
        editState((s) => ({ ...s, sandboxCwd: 'file:///elsewhere' })),
      ),
      label,
    );
  });
  test('the canaries are left out of the comparison, and only they', () => {
    expect(Object.keys(stateOf(stdio().records.find((r) => r.message.method === 'tools/call')!.message)).some((k) => k.startsWith('conformance'))).toBe(true);
    expect(
      compareCaptures(
        stdio(),
        plant(
          stdio(),
          'tools/call',
          1,
          editState((s) => ({ ...s, conformanceExtra: 1 })),
        ),
      ),
    ).toEqual([]);
  });
  test('a launcher added over HTTP is reported', () => {
    const capture = ours.get(key('http', 'workspace-write'))!.optedIn;
    found(
      capture,
      plant(capture, 'tools/call', 1, (m) => (metaOf(m)[LAUNCHER_KEY] = { codexExecutable: codexPath })),
      'fake host: launcher present over http',
    );
  });
  test('sandbox keys sent to a server that did not opt in are reported', () => {
    const plain = ours.get(key('stdio', 'workspace-write'))!.plain;
    found(
      plain,
      plant(plain, 'tools/call', 1, (m) => (metaOf(m)[STATE_KEY] = {})),
      'sandbox keys sent to a server that did not opt in',
    );
  });
  test('different values under the two state keys are reported', () => {
    found(
      stdio(),
      plant(stdio(), 'tools/call', 1, (m) => (metaOf(m)[STATE_KEY_DEPRECATED] = { permissionProfile: { type: 'disabled' } })),
      'fake host: the two state keys carry different values',
    );
  });
  test('a host-owned entry of another type is reported', () => {
    found(
      stdio(),
      plant(stdio(), 'tools/call', 1, (m) => (metaOf(m).progressToken = String(metaOf(m).progressToken))),
      'tools/call 1: shape of _meta["progressToken"]',
    );
  });
  test('a changed initialize is reported', () => {
    const capture = ours.get(key('http', 'workspace-write'))!.optedIn;
    found(
      capture,
      plant(capture, 'initialize', 1, (m) => ((m.params as Record<string, unknown>).protocolVersion = '2025-11-25')),
      'initialize (whole message, key order included)',
    );
  });
  test('resource reads: uri before _meta, a token appended instead of overwritten in place, a missing _meta', () => {
    const compare = (planted: Capture) => compareCaptures(app, planted, ['resourceReads']).join('\n');
    expect(compare(plant(app, 'resources/read', 1, (m) => (m.params = reorder(m.params as Record<string, unknown>, 'uri'))))).toContain(
      'resources/read 1 (whole message',
    );
    expect(
      compare(
        plant(app, 'resources/read', 3, (m) => {
          const { progressToken, ...rest } = metaOf(m);
          (m.params as Record<string, unknown>)._meta = { ...rest, progressToken };
        }),
      ),
    ).toContain('resources/read 3 (whole message');
    expect(compare(plant(app, 'resources/read', 1, (m) => delete (m.params as Record<string, unknown>)._meta))).toContain('resources/read 1');
  });
  test('inventory: an initialize with experimental, a listing left out, another progress token', () => {
    const compare = (planted: Capture) => compareCaptures(app, planted, ['inventory']).join('\n');
    const inventoryInit = (edit: Edit): Capture => plant(app, 'initialize', 2, edit);
    expect(
      compare(
        inventoryInit(
          (m) =>
            ((m.params as { capabilities: Record<string, unknown> }).capabilities = {
              experimental: { 'codex/auth-change': {} },
              elicitation: { form: {}, url: {} },
            }),
        ),
      ),
    ).toContain('inventory: initialize');
    expect(compare({ ...app, records: app.records.filter((r) => r.message.method !== 'resources/list') })).toContain('inventory: methods');
    expect(compare({ ...app, records: app.records.filter((r) => r.message.method !== 'resources/templates/list') })).toContain(
      'number of inventory connections',
    );
    expect(compare(plant(app, 'resources/list', 1, (m) => (metaOf(m).progressToken = 9)))).toContain('inventory: resource listing progress tokens');
  });
});
