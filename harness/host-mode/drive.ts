import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LAUNCHER_KEY, STATE_KEY, STATE_KEY_DEPRECATED, type Transport } from '../codex-wire.js';
import { spawnTracked, trackTempDir } from '../process-registry.js';
import { AppServerClient, describeAppOutcome, type AppOutcome } from './app-server.js';
import { writeConfig, type HostConfig } from './codex-config.js';
import type { HostProgram } from './host-program.js';
import { ScriptedModel, type ModelRequest, type ScriptedCall } from './model-server.js';
import { probeLaunchers, type ProbeResult } from './probe.js';
import {
  RECORDING_RESOURCE,
  RECORDING_TOOL,
  readHttpRequests,
  readRecording,
  startRecordingServer,
  type HttpRequestRecord,
  type RecordedMessage,
  type RecordingServer,
} from './recording.js';

/**
 * Drives a host (real Codex, or anything with the same CLI subset) through host mode's two
 * scenarios and returns what the recording server saw. Knows no rule: the checks in suites/host/ judge.
 *
 *  - exec: `<host> exec` with a scripted model that makes two calls in a row to the opted-in
 *    recording server, then one to a recording server that did not opt in.
 *  - app-server: `<host> app-server` over JSON-RPC: direct `mcpServer/tool/call`s with caller
 *    `_meta` (also to a recording server that did not opt in), `mcpServer/resource/read`s with
 *    reserved, non-object, null and plain `_meta`, then turns that alternate the sandbox policy
 *    (workspace-write, read-only, ...), one model call each.
 *
 * Each run gets a fresh temp dir (private CODEX_HOME, a workspace whose name has a space, the
 * logs), removed afterwards; every process it starts is stopped, on failure too.
 */

/** The opted-in recording server and the one that did not opt in, as named in the host's config. */
export const SERVER = 'rec';
export const PLAIN_SERVER = 'rec_plain';

export interface DriveOptions {
  host: HostProgram;
  transport: Transport;
  /** Budget of one host process (exec run, or the whole app-server session). */
  timeoutMs: number;
  /** Budget of one app-server request. */
  requestTimeoutMs?: number;
  /** The scripted model waits this long before each function call (a real model takes seconds). */
  thinkMs?: number;
  /** Where the run's temp dir goes (default: the OS temp dir). */
  tmpParent?: string;
  /** Extra environment for the host (e.g. BROKEN_HOST_DEFECTS for the broken-host fixture). */
  env?: Record<string, string>;
  /** The exec run's sandbox mode and network access (default workspace-write, no network: the differential test varies them). */
  sandboxMode?: HostConfig['sandboxMode'];
  networkAccess?: boolean;
  /** App-server turns after the first, each one changing the sandbox policy (default POLICY_CHANGES). */
  policyChanges?: number;
  /** Aborted when the run gives up on this host (a timeout, the run's end): the host is stopped at once. */
  signal?: AbortSignal;
}

/** Host exploration's budget: sequences per transport and the seed, or exactly one sequence to rerun (`seed:path`). */
export interface HostExploreOptions {
  runs: number;
  seed: number;
  replay?: { seed: number; path: string };
  /** Told, per transport, the kinds of step its sequences ran (the report's header names them). */
  onCovered?: (transport: Transport, covered: string[]) => void;
}

/** The host a host-mode run drives, and how (RunPlan.host): the same on every transport. */
export type HostTarget = Omit<DriveOptions, 'transport' | 'signal'> & { transports: Transport[]; explore?: HostExploreOptions };

/** How many times the app-server session changes the policy between turns, unless told otherwise. */
export const POLICY_CHANGES = 24;
/** The turn/start overrides the changes cycle through (the first turn runs under the config's workspace-write). */
const POLICY_CYCLE: { mode: TurnStep['mode']; sandboxPolicy: Record<string, unknown> }[] = [
  { mode: 'read-only', sandboxPolicy: { type: 'readOnly' } },
  { mode: 'workspace-write', sandboxPolicy: { type: 'workspaceWrite' } },
];

interface RunDirs {
  root: string;
  codexHome: string;
  workspace: string;
  /** Takes `root` off the list the CLI's signal handlers remove. */
  forget: () => void;
}

function makeRunDirs(label: string, parent = tmpdir()): RunDirs {
  const root = mkdtempSync(join(parent, `msc-host-${label}-`));
  const codexHome = join(root, 'codex-home');
  const workspace = join(root, 'work space');
  const forget = trackTempDir(root);
  mkdirSync(codexHome);
  mkdirSync(workspace);
  return { root, codexHome, workspace, forget };
}

function removeRunDirs(dirs: RunDirs): void {
  rmSync(dirs.root, { recursive: true, force: true });
  dirs.forget();
}

const hostEnv = (options: DriveOptions, codexHome: string): NodeJS.ProcessEnv => ({ ...process.env, ...options.env, CODEX_HOME: codexHome });

export interface ProcessExit {
  code: number | null;
  signal: string | null;
  timedOut: boolean;
}

export interface ExecObservation {
  transport: Transport;
  workspace: string;
  /** What the opted-in server received. */
  records: RecordedMessage[];
  /** What the server that did not opt in received. */
  plainRecords: RecordedMessage[];
  /** Over HTTP: the HTTP requests the opted-in server got. */
  httpRequests: HttpRequestRecord[];
  exit?: ProcessExit;
  stdout: string;
  stderr: string;
  modelRequests: ModelRequest[];
  /** Why the scenario could not run as scripted (the host never called the tools, ...). */
  problems: string[];
  /** Set when the host process itself failed: it could not start, or exited with an error. */
  hostFailed?: string;
  /** The launcher probe on every codexExecutable sent, run before the host's run dir went away. */
  launcherProbes: Record<string, ProbeResult>;
  durationMs: number;
}

/** The fixed exec run's model: two calls in a row to the opted-in server, then one to the server that did not opt in. */
const EXEC_SCRIPT: ScriptedCall[][] = [
  [{ server: SERVER, tool: RECORDING_TOOL }],
  [{ server: SERVER, tool: RECORDING_TOOL }],
  [{ server: PLAIN_SERVER, tool: RECORDING_TOOL }],
];

/** One `<host> exec` run whose model answers with `responses` (by default the fixed run's). */
export async function observeExec(options: DriveOptions, responses: ScriptedCall[][] = EXEC_SCRIPT): Promise<ExecObservation> {
  const started = Date.now();
  const dirs = makeRunDirs(`exec-${options.transport}`, options.tmpParent);
  const model = new ScriptedModel({ responses, thinkMs: options.thinkMs });
  const servers: RecordingServer[] = [];
  const observation: ExecObservation = {
    transport: options.transport,
    workspace: dirs.workspace,
    records: [],
    plainRecords: [],
    httpRequests: [],
    stdout: '',
    stderr: '',
    modelRequests: model.requests,
    problems: model.problems,
    launcherProbes: {},
    durationMs: 0,
  };
  try {
    const baseUrl = await model.start();
    servers.push(await startRecordingServer(options.transport, join(dirs.root, 'rec.jsonl'), 'current'));
    servers.push(await startRecordingServer(options.transport, join(dirs.root, 'rec-plain.jsonl'), 'none'));
    const config: HostConfig = {
      codexHome: dirs.codexHome,
      workspace: dirs.workspace,
      modelBaseUrl: baseUrl,
      servers: { [SERVER]: servers[0]!.config, [PLAIN_SERVER]: servers[1]!.config },
      sandboxMode: options.sandboxMode ?? 'workspace-write',
      networkAccess: options.networkAccess,
    };
    writeConfig(config);
    const run = await runProcess(
      options.host,
      ['exec', '--skip-git-repo-check', 'Call the record tool of each MCP server.'],
      dirs.workspace,
      hostEnv(options, dirs.codexHome),
      options.timeoutMs,
      options.signal,
    );
    Object.assign(observation, { exit: run.exit, stdout: run.stdout, stderr: run.stderr });
    if (run.error) observation.hostFailed = run.error;
    else if (run.exit.timedOut) observation.problems.push(`${options.host.display} exec did not finish within ${options.timeoutMs} ms`);
    else if (run.exit.code !== 0)
      observation.hostFailed = `${options.host.display} exec exited with ${run.exit.signal ?? `code ${run.exit.code}`}: ${lastLines(run.stderr)}`;
    if (observation.hostFailed) observation.problems.push(observation.hostFailed);
  } catch (error) {
    observation.problems.push((error as Error).message);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await model.stop();
    observation.records = readRecording(join(dirs.root, 'rec.jsonl'));
    observation.plainRecords = readRecording(join(dirs.root, 'rec-plain.jsonl'));
    observation.httpRequests = readHttpRequests(join(dirs.root, 'rec.jsonl'));
    observation.launcherProbes = await probeLaunchers([...observation.records, ...observation.plainRecords]);
    removeRunDirs(dirs);
    observation.durationMs = Date.now() - started;
  }
  return observation;
}

const lastLines = (text: string, n = 5) => text.trim().split('\n').slice(-n).join(' | ');

interface ProcessRun {
  exit: ProcessExit;
  stdout: string;
  stderr: string;
  error?: string;
}

/** Runs the host to completion in its own process group; on timeout or abort the whole group is killed. */
function runProcess(host: HostProgram, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number, signal?: AbortSignal): Promise<ProcessRun> {
  return new Promise((resolve) => {
    const tracked = spawnTracked(host.command, [...host.args, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const child = tracked.child;
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout = (stdout + chunk).slice(-200_000)));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-200_000)));
    const timer = setTimeout(() => {
      timedOut = true;
      void tracked.stop();
    }, timeoutMs);
    const abort = () => void tracked.stop();
    if (signal?.aborted) abort();
    else signal?.addEventListener('abort', abort, { once: true });
    child.once('close', () => signal?.removeEventListener('abort', abort));
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve({ exit: { code: null, signal: null, timedOut }, stdout, stderr, error: `cannot start ${host.display}: ${error.message}` });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      // Anything the host left in its group (it should have stopped its MCP servers itself).
      void tracked.stop().then(() => resolve({ exit: { code, signal, timedOut }, stdout, stderr }));
    });
  });
}

/** One app-server request host mode made, and what came back. */
export interface AppStep {
  /** Host mode's name for the step, e.g. `resource-read/reserved/threadId`. */
  name: string;
  method: string;
  params: Record<string, unknown>;
  outcome: AppOutcome;
  /** How the step's request is recognized at the recording server (tool argument or resource URI). */
  marker?: string;
}

export interface TurnStep {
  name: string;
  /** The sandbox policy override sent with turn/start (undefined: none, the config's mode applies). */
  sandboxPolicy?: Record<string, unknown>;
  /** The sandbox mode in force for the turn, in config terms. */
  mode: 'read-only' | 'workspace-write' | 'danger-full-access';
  start: AppOutcome;
  completed: boolean;
  /** The `call_id`s the scripted model issued during the turn. */
  callIds: string[];
}

export interface AppObservation {
  transport: Transport;
  workspace: string;
  threadId?: string;
  steps: AppStep[];
  turns: TurnStep[];
  records: RecordedMessage[];
  /** What the server that did not opt in received (direct calls only). */
  plainRecords: RecordedMessage[];
  stderr: string;
  problems: string[];
  /** Set when the host process itself failed: it could not start, died early, or did not answer initialize. */
  hostFailed?: string;
  /** The launcher probe on every codexExecutable sent, run while the host was still running. */
  launcherProbes: Record<string, ProbeResult>;
  durationMs: number;
}

/** What host mode sends in the direct calls and resource reads (the checks read them back). */
export const APP_INPUTS = {
  /** Unrelated caller entries, plus a caller threadId the host must overwrite (HOST-4). */
  verbatimMeta: {
    'x-conformance-unrelated': { nested: [1, { deep: null }], text: 'gardé tel quel', empty: {} },
    zeta: 1,
    threadId: 'caller-supplied-thread-id',
    alpha: 'last',
  },
  /** Stale sandbox entries from a caller, plus one unrelated entry (HOST-2). */
  staleMeta: {
    [STATE_KEY]: { stale: 'caller-state' },
    [STATE_KEY_DEPRECATED]: { stale: 'caller-state-meta' },
    [LAUNCHER_KEY]: { codexExecutable: '/nonexistent/stale/codex' },
    'x-conformance-unrelated': 'kept',
  },
  /** A caller progressToken between two unrelated entries: the host overwrites it in place (HOST-4). */
  progressTokenMeta: { 'x-conformance-before': 1, progressToken: 'caller-progress-token', 'x-conformance-after': 2 },
  toolNonObjectMeta: [['not', 'a', 'map'], 'a string'] as unknown[],
  /** Host-owned keys a caller may not put in resource-read `_meta` (HOST-3). */
  reservedResourceKeys: {
    threadId: 'caller-supplied-thread-id',
    'x-codex-turn-metadata': { turn_id: 'forged' },
    'codex/connectionLease': 'forged-lease',
  } as Record<string, unknown>,
  resourceNonObjectMeta: [[1, 2], 'a string', 7, true] as unknown[],
  resourceMeta: { 'x-conformance-unrelated': { nested: [1, {}] }, zeta: 'z' },
} as const;

export const toolMarker = (name: string) => `conformance:${name}`;
export const resourceMarker = (name: string) => `${RECORDING_RESOURCE}?attempt=${encodeURIComponent(name)}`;

/** What one turn did: its turn/start answer, whether it completed, and the call ids its model issued. */
export interface TurnRun {
  start: AppOutcome;
  completed: boolean;
  callIds: string[];
}

/**
 * A running `<host> app-server` with its scripted model and both recording servers, initialized:
 * the fixed session's and each exploration sequence's. Never throws: what failed is in
 * `observation.problems` (and `hostFailed`), and `close()` always cleans up and returns what was seen.
 */
export interface AppSession {
  readonly observation: AppObservation;
  /** Whether the session is up (initialize answered): otherwise every request is pointless. */
  readonly ready: boolean;
  /** The workspaces a thread may use: the first is the session's own, all trusted in the config. */
  readonly workspaces: string[];
  request(method: string, params: Record<string, unknown>): Promise<AppOutcome>;
  /** thread/start; the thread id, or undefined (the answer says why). */
  startThread(params: Record<string, unknown>): Promise<{ outcome: AppOutcome; threadId?: string }>;
  /** turn/start, then waits for turn/completed; the model answers with `responses` this turn. */
  turn(params: Record<string, unknown>, responses: ScriptedCall[][]): Promise<TurnRun>;
  /** What the recording servers got so far (each request is logged as it arrives). */
  recorded(): { records: RecordedMessage[]; plainRecords: RecordedMessage[] };
  /** Stops everything (probing the launchers sent first) and returns the observation, records filled in. */
  close(): Promise<AppObservation>;
}

export async function openAppSession(options: DriveOptions, extraWorkspaces = 0): Promise<AppSession> {
  const started = Date.now();
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  const dirs = makeRunDirs(`app-${options.transport}`, options.tmpParent);
  const workspaces = [dirs.workspace, ...Array.from({ length: extraWorkspaces }, (_, i) => join(dirs.root, `work space ${i + 2}`))];
  for (const extra of workspaces.slice(1)) mkdirSync(extra);
  const model = new ScriptedModel({ responses: [], thinkMs: options.thinkMs });
  let server: RecordingServer | undefined;
  let plain: RecordingServer | undefined;
  let client: AppServerClient | undefined;
  let ready = false;
  const abort = () => void client?.close();
  const observation: AppObservation = {
    transport: options.transport,
    workspace: dirs.workspace,
    steps: [],
    turns: [],
    records: [],
    plainRecords: [],
    stderr: '',
    problems: model.problems,
    launcherProbes: {},
    durationMs: 0,
  };
  const deadline = started + options.timeoutMs;
  const budget = () => Math.max(1, Math.min(requestTimeoutMs, deadline - Date.now()));
  try {
    const baseUrl = await model.start();
    [server, plain] = await Promise.all([
      startRecordingServer(options.transport, join(dirs.root, 'rec.jsonl'), 'current'),
      startRecordingServer(options.transport, join(dirs.root, 'rec-plain.jsonl'), 'none'),
    ]);
    const servers = { [SERVER]: server.config, [PLAIN_SERVER]: plain.config };
    writeConfig({
      codexHome: dirs.codexHome,
      workspace: dirs.workspace,
      trusted: workspaces.slice(1),
      modelBaseUrl: baseUrl,
      servers,
      sandboxMode: 'workspace-write',
    });
    client = new AppServerClient(options.host, hostEnv(options, dirs.codexHome), dirs.workspace);
    await client.start();
    // Given up on: the session ends now (every request still waiting gets "closed").
    const stop = client;
    if (options.signal?.aborted) void stop.close();
    else options.signal?.addEventListener('abort', abort, { once: true });
    const init = await client.request(
      'initialize',
      { clientInfo: { name: 'mcp-sandbox-conformance', title: null, version: '0.1.0' }, capabilities: { experimentalApi: true } },
      budget(),
    );
    if (init.kind !== 'result') {
      observation.hostFailed = `app-server initialize failed: ${describe(init)}`;
      throw new Error(observation.hostFailed);
    }
    client.notify('initialized');
    ready = true;
  } catch (error) {
    observation.problems.push((error as Error).message);
  }
  const request = (method: string, params: Record<string, unknown>): Promise<AppOutcome> =>
    client ? client.request(method, params, budget()) : Promise.resolve({ kind: 'closed', detail: 'the app-server did not start' });
  return {
    observation,
    ready,
    workspaces,
    request,
    async startThread(params) {
      const outcome = await request('thread/start', params);
      const threadId = outcome.kind === 'result' ? (outcome.result as { thread?: { id?: unknown } } | undefined)?.thread?.id : undefined;
      return { outcome, ...(typeof threadId === 'string' ? { threadId } : {}) };
    },
    async turn(params, responses) {
      model.script(responses);
      const before = model.requests.length;
      const seen = client?.notifications.length ?? 0;
      const start = await request('turn/start', params);
      const done = start.kind === 'result' && client ? await client.waitFor((n) => n.method === 'turn/completed', budget(), seen) : undefined;
      const callIds = model.requests.slice(before).flatMap((r) => (r.answered === 'message' ? [] : r.answered));
      return { start, completed: Boolean(done), callIds };
    },
    recorded: () => ({ records: readRecording(join(dirs.root, 'rec.jsonl')), plainRecords: readRecording(join(dirs.root, 'rec-plain.jsonl')) }),
    async close() {
      options.signal?.removeEventListener('abort', abort);
      // Probed before the host goes away: its launcher may live in a dir that goes with it.
      observation.launcherProbes = await probeLaunchers(readRecording(join(dirs.root, 'rec.jsonl')));
      const diedEarly = client?.closed;
      if (diedEarly) {
        const died = `${options.host.display} app-server: ${diedEarly}: ${lastLines(client!.stderr)}`;
        observation.hostFailed ??= died;
        observation.problems.push(died);
      }
      await client?.close();
      observation.stderr = client?.stderr ?? '';
      await Promise.all([server?.stop(), plain?.stop()]);
      await model.stop();
      observation.records = readRecording(join(dirs.root, 'rec.jsonl'));
      observation.plainRecords = readRecording(join(dirs.root, 'rec-plain.jsonl'));
      removeRunDirs(dirs);
      observation.durationMs = Date.now() - started;
      return observation;
    },
  };
}

/** Direct calls, resource reads, then model turns alternating workspace-write and read-only. */
export async function observeAppServer(options: DriveOptions): Promise<AppObservation> {
  const session = await openAppSession(options);
  const observation = session.observation;
  const oneCall: ScriptedCall[][] = [[{ server: SERVER, tool: RECORDING_TOOL }]];
  try {
    if (!session.ready) return observation;
    const thread = await session.startThread({ cwd: session.workspaces[0] });
    const threadId = thread.threadId;
    if (threadId === undefined) throw new Error(`app-server thread/start gave no thread id: ${describe(thread.outcome)}`);
    observation.threadId = threadId;

    const step = async (name: string, method: string, params: Record<string, unknown>, marker?: string) => {
      const outcome = await session.request(method, params);
      observation.steps.push({ name, method, params, outcome, marker });
    };
    const toolCall = (name: string, meta: unknown, target = SERVER) =>
      step(
        name,
        'mcpServer/tool/call',
        { server: target, threadId, tool: RECORDING_TOOL, arguments: { note: toolMarker(name) }, _meta: meta },
        toolMarker(name),
      );
    const resourceRead = (name: string, meta: unknown) =>
      step(name, 'mcpServer/resource/read', { server: SERVER, threadId, uri: resourceMarker(name), _meta: meta }, resourceMarker(name));

    await toolCall('tool-call/verbatim', APP_INPUTS.verbatimMeta);
    await toolCall('tool-call/stale-sandbox-entries', APP_INPUTS.staleMeta);
    await toolCall('tool-call/caller-progress-token', APP_INPUTS.progressTokenMeta);
    await toolCall('tool-call/no-opt-in-stale-entries', APP_INPUTS.staleMeta, PLAIN_SERVER);
    for (const [i, meta] of APP_INPUTS.toolNonObjectMeta.entries()) await toolCall(`tool-call/non-object-meta/${i}`, meta);
    for (const [key, value] of Object.entries(APP_INPUTS.reservedResourceKeys)) {
      await resourceRead(`resource-read/reserved/${key}`, { [key]: value, 'x-conformance-unrelated': 1 });
    }
    for (const [i, meta] of APP_INPUTS.resourceNonObjectMeta.entries()) await resourceRead(`resource-read/non-object-meta/${i}`, meta);
    await resourceRead('resource-read/null-meta', null);
    await resourceRead('resource-read/object-meta', APP_INPUTS.resourceMeta);

    const turn = async (name: string, mode: TurnStep['mode'], sandboxPolicy?: Record<string, unknown>) => {
      const params: Record<string, unknown> = { threadId, input: [{ type: 'text', text: `Call the record tool (${name}).` }] };
      if (sandboxPolicy) params.sandboxPolicy = sandboxPolicy;
      const run = await session.turn(params, oneCall);
      observation.turns.push({ name, mode, sandboxPolicy, ...run });
    };
    // Every turn after the first changes the policy: Codex 0.171.0 only sometimes sends the
    // previous policy's state after a change (CONTRACT.md HOST-2), so each change is one more chance.
    await turn('turn/1 config (workspace-write)', 'workspace-write');
    for (let i = 0; i < (options.policyChanges ?? POLICY_CHANGES); i++) {
      const { mode, sandboxPolicy } = POLICY_CYCLE[i % POLICY_CYCLE.length]!;
      await turn(`turn/${i + 2} ${String(sandboxPolicy.type)}`, mode, sandboxPolicy);
    }
  } catch (error) {
    observation.problems.push((error as Error).message);
  } finally {
    await session.close();
  }
  return observation;
}

/** Like describeAppOutcome, but shows the start of a result too. */
function describe(outcome: AppOutcome): string {
  return outcome.kind === 'result' ? (JSON.stringify(outcome.result)?.slice(0, 300) ?? 'undefined') : describeAppOutcome(outcome);
}
