import * as fc from 'fast-check';
import { pathToFileURL } from 'node:url';
import { LAUNCHER_KEY, SANDBOX_META_KEYS, STATE_KEY, STATE_KEY_DEPRECATED, type Transport } from '../../harness/codex-wire.js';
import { describeAppOutcome, type AppOutcome } from '../../harness/host-mode/app-server.js';
import {
  observeExec,
  openAppSession,
  PLAIN_SERVER,
  SERVER,
  type AppSession,
  type DriveOptions,
  type HostExploreOptions,
} from '../../harness/host-mode/drive.js';
import { callNote, type ScriptedCall } from '../../harness/host-mode/model-server.js';
import { RECORDING_RESOURCE, RECORDING_TOOL, withMethod, type RecordedMessage } from '../../harness/host-mode/recording.js';
import { isObject } from '../../harness/json.js';
import type { Counterexample, CounterexampleStep } from '../engine/model.js';
import { ShrinkBudget } from '../engine/shrinking.js';
import { counterexampleOf } from '../server/explore.js';
import { hostCheckDefs } from './checks.js';
import { argumentsNote, hasOwn, json, metaOf } from './observed.js';
import { launcherShapeProblem, profileKind, workspaceUris } from './sandbox-state.js';

/**
 * Host exploration: random sequences of what an app-server client and a model can do (fast-check
 * `fc.commands`, as server mode's explore/sequences-hold-contract), each against a fresh host.
 * Threads start with their own policy and workspace; turns change either or neither and their
 * scripted model makes one to four calls (in one response or across several; to the opted-in
 * recording server and to the one that did not opt in); direct mcpServer/tool/call and
 * mcpServer/resource/read come at any point with caller _meta in many shapes; `exec` runs make
 * several calls in one turn, parallel ones too. The model is CONTRACT.md §2 and §4: for every
 * request the recording servers get it says which keys, which state (the policy and workspace in
 * force for the thread) and which launcher. A violation is charged to the host check of the rule
 * broken, shrunk to the shortest sequence that still shows it, told step by step, and replays
 * with `host --replay <token>`.
 */

/** The default budget: sequences per transport and the seed (reproducible: the same sequences on every machine). */
export const HOST_EXPLORE_DEFAULTS: HostExploreOptions = { runs: 4, seed: 20261201 };
/** Sequences at once per transport (fixed, so that a seed means the same sequences everywhere). */
const WORKERS = 2;
const MAX_STEPS = 8;
/**
 * Shrinking reruns each candidate on a fresh host: capped by count and by how many in a row
 * shortened nothing (ShrinkBudget: so that, within the time cap, the result does not depend on load),
 * done at one step that is the whole sequence (a host step is one request: nothing simpler to show), and by time (a real Codex takes seconds per rerun, and a defect that shows only now and then makes
 * many candidates pass).
 */
const MAX_SHRINK_RUNS = 12;
const SHRINK_PATIENCE = 4;
const SHRINK_TIME_MS = 20_000;
/** Workspaces beside the session's own that threads and turns may move to. */
const EXTRA_WORKSPACES = 1;

type Mode = 'read-only' | 'workspace-write' | 'danger-full-access';
const MODES: Mode[] = ['read-only', 'workspace-write', 'danger-full-access'];
const POLICY: Record<Mode, Record<string, unknown>> = {
  'read-only': { type: 'readOnly' },
  'workspace-write': { type: 'workspaceWrite' },
  'danger-full-access': { type: 'dangerFullAccess' },
};
/** The config's mode, in force for a thread started without one. */
const CONFIG_MODE: Mode = 'workspace-write';

/** What the contract says is in force for a thread. */
interface ThreadModel {
  id: string;
  mode: Mode;
  workspace: number;
}

/** One broken expectation: the check of the rule broken, and what was wrong. */
export interface HostViolation {
  check: string;
  message: string;
  /** The step of its sequence that showed it (1-based), and that step's action. */
  step?: { n: number; action: string };
  expected?: unknown;
  actual?: unknown;
}

interface StoryStep {
  action: string;
  sent: string[];
  arrived: string[];
  answer: string[];
}

/** One sequence against one fresh host: the session (opened at the first app-server step) and what the steps saw. */
interface HostSequence {
  options: DriveOptions;
  session?: AppSession;
  threads: ThreadModel[];
  story: StoryStep[];
  violations: HostViolation[];
  /** Why the sequence could not go on (the host died, a turn never completed): not the host's violation we can name. */
  problem?: string;
  attempts: number;
  /** Exec runs whose temp dirs are gone: their records are judged at once. */
  stopWhenBroken: boolean;
  /** The kinds of the steps it ran. */
  kinds: Set<StepKind>;
}

type Model = { steps: number; stopped?: boolean };

const transportOf = (seq: HostSequence): Transport => seq.options.transport;

// ---- the contract, per arrival ----

/** The sandbox entries a call to an opted-in server must carry for `mode` in `workspace`; problems charged to `check` (and the shared checks). */
function judgeEntries(
  seq: HostSequence,
  meta: Record<string, unknown>,
  want: { mode: Mode; workspace: string },
  check: string,
  where: string,
): HostViolation[] {
  const out: HostViolation[] = [];
  const has = [hasOwn(meta, STATE_KEY), hasOwn(meta, STATE_KEY_DEPRECATED)];
  if (has[0] !== has[1]) out.push({ check: 'host/state-keys-identical', message: `${where}: only ${has[0] ? STATE_KEY : STATE_KEY_DEPRECATED}` });
  else if (has[0] && json(meta[STATE_KEY]) !== json(meta[STATE_KEY_DEPRECATED]))
    out.push({
      check: 'host/state-keys-identical',
      message: `${where}: the two state values differ`,
      expected: meta[STATE_KEY],
      actual: meta[STATE_KEY_DEPRECATED],
    });
  if (!has[0] && !has[1]) out.push({ check, message: `${where}: no state key` });
  const state = has[0] ? meta[STATE_KEY] : meta[STATE_KEY_DEPRECATED];
  if (state !== undefined) {
    const kind = profileKind(state, want.workspace);
    const cwd = isObject(state) ? state.sandboxCwd : undefined;
    const problems = [
      ...(kind !== want.mode ? [`the state describes ${kind}, the policy in force is ${want.mode}`] : []),
      ...(!workspaceUris(want.workspace).has(String(cwd))
        ? [`sandboxCwd ${json(cwd)} is not the workspace in force ${pathToFileURL(want.workspace).href}`]
        : []),
    ];
    if (problems.length)
      out.push({
        check,
        message: `${where}: ${problems.join('; ')}`,
        expected: { mode: want.mode, sandboxCwd: pathToFileURL(want.workspace).href },
        actual: state,
      });
  }
  if (transportOf(seq) === 'http') {
    if (hasOwn(meta, LAUNCHER_KEY))
      out.push({ check: 'host/no-launcher-over-http', message: `${where}: a launcher arrived over HTTP`, actual: meta[LAUNCHER_KEY] });
  } else {
    const problem = launcherShapeProblem(meta[LAUNCHER_KEY]);
    if (problem) out.push({ check: check === 'host/direct-call-sandbox-entries' ? check : 'host/launcher-over-stdio', message: `${where}: ${problem}` });
  }
  return out;
}

function judgeNoSandboxKeys(meta: Record<string, unknown>, check: string, where: string): HostViolation[] {
  const kept = SANDBOX_META_KEYS.filter((k) => hasOwn(meta, k));
  return kept.length ? [{ check, message: `${where}: sandbox keys reached a server that did not opt in: ${kept.join(', ')}` }] : [];
}

/** The model calls of a turn or exec run as they arrived, judged against the policy and workspace in force. */
function judgeModelCalls(
  seq: HostSequence,
  callIds: string[],
  recorded: { records: RecordedMessage[]; plainRecords: RecordedMessage[] },
  want: { mode: Mode; workspace: string },
  check: string,
  step: StoryStep,
): HostViolation[] {
  const out: HostViolation[] = [];
  for (const callId of callIds) {
    const byNote = (r: RecordedMessage) => argumentsNote(r) === callNote(callId);
    const opted = withMethod(recorded.records, 'tools/call').find(byNote);
    const plain = withMethod(recorded.plainRecords, 'tools/call').find(byNote);
    const record = opted ?? plain;
    if (!record) {
      step.arrived.push(`${callId}: never reached a recording server`);
      continue;
    }
    const meta = metaOf(record) ?? {};
    step.arrived.push(`${callId} at ${opted ? SERVER : PLAIN_SERVER}: ${describeMeta(meta, seq)}`);
    out.push(
      ...(opted
        ? judgeEntries(seq, meta, want, check, `model call ${callId}`)
        : judgeNoSandboxKeys(meta, 'host/no-sandbox-keys-without-opt-in', `model call ${callId}`)),
    );
  }
  return out;
}

/** A _meta as the story tells it: the keys in order, the state as its policy and workspace, the launcher's path. */
function describeMeta(meta: Record<string, unknown>, seq: HostSequence): string {
  const workspaces = seq.session?.workspaces ?? [];
  const parts = Object.entries(meta).map(([key, value]) => {
    if (key === STATE_KEY || key === STATE_KEY_DEPRECATED) {
      const cwd = isObject(value) ? String(value.sandboxCwd) : '';
      const w = workspaces.findIndex((ws) => workspaceUris(ws).has(cwd));
      return `${key}=<${profileKind(value, workspaces[Math.max(w, 0)] ?? '')} in ${w >= 0 ? `w${w}` : json(cwd)}>`;
    }
    if (key === 'x-codex-turn-metadata' && isObject(value)) return `${key}.sandbox_mode=${json(value.sandbox_mode)}`;
    const text = json(value) ?? 'undefined';
    return `${key}=${text.length > 60 ? `${text.slice(0, 60)}…` : text}`;
  });
  return `{${parts.join(', ')}}`;
}

// ---- the steps ----

/**
 * The kinds of step a default run's exploration must draw at least once (per transport), and the
 * header names those it drew: what a client and a model can do, each key subset a caller may forge.
 */
export const STEP_KINDS = [
  'thread start',
  'policy change',
  'cwd change',
  'parallel calls',
  'calls to rec',
  'calls to rec_plain',
  'direct call forging the state alone',
  'direct call forging the deprecated copy alone',
  'direct call forging the launcher alone',
  'direct call forging all three',
  'resource read',
  'exec run',
] as const;
export type StepKind = (typeof STEP_KINDS)[number];
const callKinds = (responses: Target[][]): StepKind[] => [
  ...(responses.some((r) => r.length > 1) ? (['parallel calls'] as const) : []),
  ...(responses.some((r) => r.includes('rec')) ? (['calls to rec'] as const) : []),
  ...(responses.some((r) => r.includes('plain')) ? (['calls to rec_plain'] as const) : []),
];

abstract class HostStep implements fc.AsyncCommand<Model, HostSequence> {
  /** The kinds of step this one is. */
  abstract kinds(): StepKind[];
  check(model: Readonly<Model>): boolean {
    return !model.stopped;
  }
  async run(model: Model, seq: HostSequence): Promise<void> {
    model.steps++;
    const step: StoryStep = { action: this.toString(), sent: [], arrived: [], answer: [] };
    seq.story.push(step);
    const before = seq.violations.length;
    for (const kind of this.kinds()) seq.kinds.add(kind);
    await this.act(seq, step);
    for (const v of seq.violations.slice(before)) v.step ??= { n: seq.story.length, action: step.action };
    if (seq.stopWhenBroken && (seq.violations.length > before || seq.problem)) model.stopped = true;
  }
  abstract act(seq: HostSequence, step: StoryStep): Promise<void>;
  abstract toString(): string;
}

/** The app-server session, opened (and its first thread started, under the config) at the first step that needs it. */
async function sessionOf(seq: HostSequence, step: StoryStep): Promise<AppSession | undefined> {
  if (seq.problem) return undefined;
  if (!seq.session) {
    const session = await openAppSession(seq.options, EXTRA_WORKSPACES);
    seq.session = session;
    if (!session.ready) {
      seq.problem = `the app-server did not start: ${session.observation.problems.join('; ')}`;
      return undefined;
    }
    const thread = await session.startThread({ cwd: session.workspaces[0] });
    if (!thread.threadId) {
      seq.problem = `thread/start gave no thread id: ${describeAppOutcome(thread.outcome)}`;
      return undefined;
    }
    seq.threads.push({ id: thread.threadId, mode: CONFIG_MODE, workspace: 0 });
    step.sent.unshift(`(app-server started; thread t1: thread/start {cwd: w0}, the config's ${CONFIG_MODE})`);
  }
  return seq.session;
}

/** The thread a step's pick `k` means now; the story's action names it as the host knows it (t1, t2, ...). */
function pickThread(seq: HostSequence, k: number, step: StoryStep): ThreadModel {
  const thread = seq.threads[k % seq.threads.length]!;
  step.action = step.action.replace(`thread #${k}`, `thread t${seq.threads.indexOf(thread) + 1}`);
  return thread;
}

class StartThread extends HostStep {
  constructor(
    readonly workspace: number,
    readonly mode: Mode | undefined,
  ) {
    super();
  }
  async act(seq: HostSequence, step: StoryStep): Promise<void> {
    const session = await sessionOf(seq, step);
    if (!session) return;
    const params: Record<string, unknown> = { cwd: session.workspaces[this.workspace] };
    if (this.mode) params.sandbox = this.mode;
    step.sent.push(`thread/start {cwd: w${this.workspace}${this.mode ? `, sandbox: ${this.mode}` : ''}}`);
    const thread = await session.startThread(params);
    if (!thread.threadId) {
      seq.problem = `thread/start gave no thread id: ${describeAppOutcome(thread.outcome)}`;
      return;
    }
    seq.threads.push({ id: thread.threadId, mode: this.mode ?? CONFIG_MODE, workspace: this.workspace });
    step.answer.push(`thread t${seq.threads.length}`);
  }
  kinds(): StepKind[] {
    return ['thread start'];
  }
  toString(): string {
    return `start a thread in w${this.workspace}${this.mode ? ` under ${this.mode}` : " under the config's policy"}`;
  }
}

type Target = 'rec' | 'plain';
const scripted = (responses: Target[][]): ScriptedCall[][] =>
  responses.map((r) => r.map((t) => ({ server: t === 'rec' ? SERVER : PLAIN_SERVER, tool: RECORDING_TOOL })));
const describeResponses = (responses: Target[][]) =>
  responses
    .map((r) =>
      r.length === 1
        ? `1 call to ${r[0] === 'rec' ? SERVER : PLAIN_SERVER}`
        : `${r.length} parallel calls (${r.map((t) => (t === 'rec' ? SERVER : PLAIN_SERVER)).join(', ')})`,
    )
    .join(', then ');

class Turn extends HostStep {
  constructor(
    readonly thread: number,
    readonly mode: Mode | undefined,
    readonly workspace: number | undefined,
    readonly responses: Target[][],
  ) {
    super();
  }
  async act(seq: HostSequence, step: StoryStep): Promise<void> {
    const session = await sessionOf(seq, step);
    if (!session) return;
    const thread = pickThread(seq, this.thread, step);
    const params: Record<string, unknown> = { threadId: thread.id, input: [{ type: 'text', text: 'Call the record tools as scripted.' }] };
    if (this.mode) {
      params.sandboxPolicy = POLICY[this.mode];
      thread.mode = this.mode;
    }
    if (this.workspace !== undefined) {
      params.cwd = session.workspaces[this.workspace];
      thread.workspace = this.workspace;
    }
    const t = seq.threads.indexOf(thread) + 1;
    step.sent.push(
      `turn/start on t${t}${this.mode ? ` sandboxPolicy ${json(POLICY[this.mode])}` : ''}${this.workspace !== undefined ? ` cwd w${this.workspace}` : ''}; in force: ${thread.mode} in w${thread.workspace}; the model makes ${describeResponses(this.responses)}`,
    );
    const run = await session.turn(params, scripted(this.responses));
    step.answer.push(run.start.kind === 'result' ? (run.completed ? 'turn completed' : 'turn/completed never came') : describeAppOutcome(run.start));
    if (run.start.kind !== 'result' || !run.completed) {
      seq.problem = `turn/start on t${t}: ${step.answer.at(-1)}`;
      return;
    }
    const want = { mode: thread.mode, workspace: session.workspaces[thread.workspace]! };
    seq.violations.push(...judgeModelCalls(seq, run.callIds, session.recorded(), want, 'host/state-follows-policy-change', step));
  }
  kinds(): StepKind[] {
    return [
      ...(this.mode ? (['policy change'] as const) : []),
      ...(this.workspace !== undefined ? (['cwd change'] as const) : []),
      ...callKinds(this.responses),
    ];
  }
  toString(): string {
    const change = [this.mode ? `policy ${this.mode}` : '', this.workspace !== undefined ? `cwd w${this.workspace}` : ''].filter(Boolean).join(' and ');
    return `a turn on thread #${this.thread}${change ? ` changing ${change}` : ' with no change'}: ${describeResponses(this.responses)}`;
  }
}

/** The caller _meta entries a direct call may carry, in the order generated. */
type ToolMetaEntry = 'unrelated' | 'nested' | 'stale-state' | 'stale-state-meta' | 'stale-launcher' | 'threadId' | 'progressToken';
const TOOL_META_VALUES: Record<ToolMetaEntry, [string, unknown]> = {
  unrelated: ['x-conformance-unrelated', 'kept'],
  nested: ['x-conformance-nested', { deep: [1, { text: 'gardé' }], empty: {} }],
  'stale-state': [STATE_KEY, { stale: 'caller-state' }],
  'stale-state-meta': [STATE_KEY_DEPRECATED, { stale: 'caller-state-meta' }],
  'stale-launcher': [LAUNCHER_KEY, { codexExecutable: '/nonexistent/stale/codex' }],
  threadId: ['threadId', 'caller-supplied-thread-id'],
  progressToken: ['progressToken', 'caller-progress-token'],
};
type CallerMeta = { entries: ToolMetaEntry[] } | { nonObject: unknown } | { absent: true };
const callerMetaValue = (meta: CallerMeta): unknown =>
  'entries' in meta ? Object.fromEntries(meta.entries.map((e) => TOOL_META_VALUES[e])) : 'nonObject' in meta ? meta.nonObject : undefined;

class DirectCall extends HostStep {
  constructor(
    readonly thread: number,
    readonly target: Target,
    readonly meta: CallerMeta,
  ) {
    super();
  }
  async act(seq: HostSequence, step: StoryStep): Promise<void> {
    const session = await sessionOf(seq, step);
    if (!session) return;
    const thread = pickThread(seq, this.thread, step);
    const note = `explore:${++seq.attempts}`;
    const caller = callerMetaValue(this.meta);
    const server = this.target === 'rec' ? SERVER : PLAIN_SERVER;
    const params: Record<string, unknown> = { server, threadId: thread.id, tool: RECORDING_TOOL, arguments: { note } };
    if (!('absent' in this.meta)) params._meta = caller;
    step.sent.push(
      `mcpServer/tool/call to ${server} on t${seq.threads.indexOf(thread) + 1} (in force: ${thread.mode} in w${thread.workspace}), _meta ${json(caller) ?? '(none)'}`,
    );
    const outcome = await session.request('mcpServer/tool/call', params);
    step.answer.push(answerText(outcome));
    const recorded = session.recorded();
    const record = withMethod(this.target === 'rec' ? recorded.records : recorded.plainRecords, 'tools/call').find((r) => argumentsNote(r) === note);
    const meta = metaOf(record);
    step.arrived.push(record ? `at ${server}: ${describeMeta(meta ?? {}, seq)}` : 'nothing arrived');
    const want = { mode: thread.mode, workspace: session.workspaces[thread.workspace]! };
    seq.violations.push(...judgeDirectCall(seq, this.target, caller, outcome, record ? (meta ?? {}) : undefined, thread.id, want));
  }
  kinds(): StepKind[] {
    const forged = 'entries' in this.meta ? this.meta.entries.filter((e) => e.startsWith('stale-')) : [];
    const subset: StepKind[] =
      forged.length === 3
        ? ['direct call forging all three']
        : forged.length === 1
          ? [
              forged[0] === 'stale-state'
                ? 'direct call forging the state alone'
                : forged[0] === 'stale-state-meta'
                  ? 'direct call forging the deprecated copy alone'
                  : 'direct call forging the launcher alone',
            ]
          : [];
    return [...subset, this.target === 'rec' ? 'calls to rec' : 'calls to rec_plain'];
  }
  toString(): string {
    const meta = 'entries' in this.meta ? `[${this.meta.entries.join(', ')}]` : 'nonObject' in this.meta ? json(this.meta.nonObject) : 'none';
    return `a direct call to ${this.target === 'rec' ? SERVER : PLAIN_SERVER} on thread #${this.thread}, caller _meta ${meta}`;
  }
}

const answerText = (outcome: AppOutcome) => (outcome.kind === 'result' ? 'a result' : describeAppOutcome(outcome));

/** HOST-4 (with HOST-1/HOST-2) on one direct call: what the caller sent, what the host answered, what arrived (undefined: nothing). */
function judgeDirectCall(
  seq: HostSequence,
  target: Target,
  caller: unknown,
  outcome: AppOutcome,
  got: Record<string, unknown> | undefined,
  threadId: string,
  want: { mode: Mode; workspace: string },
): HostViolation[] {
  if (caller !== undefined && !isObject(caller)) {
    const message = outcome.kind === 'error' ? String(outcome.error.message) : '';
    const ok = outcome.kind === 'error' && outcome.error.code === -32603 && message.includes('MCP tool request _meta must be a JSON object, got ');
    if (ok && !got) return [];
    return [
      {
        check: 'host/direct-call-non-object-meta',
        message: `_meta ${json(caller)}: ${got ? 'the call reached the server' : `answered ${answerText(outcome)}`}`,
      },
    ];
  }
  if (!got) return [{ check: 'host/direct-call-meta-verbatim', message: `the call never reached the server (the host answered ${answerText(outcome)})` }];
  const sent = isObject(caller) ? caller : {};
  const out: HostViolation[] = [];
  // Sandbox entries: replaced for an opted-in server (a stale caller value is HOST-2's), stripped for one that did not opt in.
  const stale = SANDBOX_META_KEYS.filter((k) => hasOwn(sent, k) && hasOwn(got, k) && json(got[k]) === json(sent[k]));
  if (target === 'plain') out.push(...judgeNoSandboxKeys(got, 'host/direct-call-no-opt-in-stripped', 'direct call'));
  else if (stale.length) out.push({ check: 'host/stale-entries-replaced', message: `direct call: ${stale.join(', ')} still hold the caller's stale value` });
  else out.push(...judgeEntries(seq, got, want, 'host/direct-call-sandbox-entries', 'direct call'));
  if (got.threadId !== threadId)
    out.push({ check: 'host/direct-call-thread-id', message: `direct call: threadId ${json(got.threadId)} is not the thread's ${json(threadId)}` });
  if (!hasOwn(got, 'progressToken')) out.push({ check: 'host/direct-call-progress-token', message: 'direct call: no progressToken' });
  else if (hasOwn(sent, 'progressToken') && json(got.progressToken) === json(sent.progressToken))
    out.push({ check: 'host/direct-call-progress-token', message: "direct call: the caller's progressToken was passed through" });
  // The caller's own entries, verbatim and in order (progressToken in place); the host adds only its own keys.
  const own = (k: string) => k !== 'threadId' && !SANDBOX_META_KEYS.includes(k as never);
  const callerKeys = Object.keys(sent).filter(own);
  const arrivedOrder = Object.keys(got).filter((k) => callerKeys.includes(k));
  const changed = callerKeys.filter((k) => k !== 'progressToken' && json(got[k]) !== json(sent[k]));
  const extra = Object.keys(got).filter((k) => own(k) && k !== 'progressToken' && !hasOwn(sent, k));
  const verbatim = stale.length || SANDBOX_META_KEYS.some((k) => hasOwn(sent, k)) ? 'host/unrelated-meta-kept' : 'host/direct-call-meta-verbatim';
  if (changed.length)
    out.push({ check: verbatim, message: `direct call: caller entries ${changed.join(', ')} did not arrive unchanged`, expected: sent, actual: got });
  else if (json(arrivedOrder) !== json(callerKeys.filter((k) => hasOwn(got, k))))
    out.push({
      check: hasOwn(sent, 'progressToken') ? 'host/direct-call-progress-token' : verbatim,
      message: `direct call: caller entries arrived in the order ${arrivedOrder.join(', ')}`,
    });
  if (extra.length) out.push({ check: 'host/direct-call-meta-verbatim', message: `direct call: the host added ${extra.join(', ')}` });
  return out;
}

/** Resource-read _meta entries: the host-owned (reserved) keys, sandbox keys a caller forged, and ordinary ones. */
const RESERVED = ['threadId', 'x-codex-turn-metadata', 'codex/connectionLease'] as const;
type ReadEntry = (typeof RESERVED)[number] | 'other' | 'nested' | 'progressToken' | 'stale-state' | 'stale-state-meta' | 'stale-launcher';
const READ_VALUES: Record<ReadEntry, [string, unknown]> = {
  threadId: ['threadId', 'caller-supplied-thread-id'],
  'x-codex-turn-metadata': ['x-codex-turn-metadata', { turn_id: 'forged' }],
  'codex/connectionLease': ['codex/connectionLease', 'forged-lease'],
  other: ['x-conformance-other', 'z'],
  nested: ['x-conformance-nested', { nested: [1, {}] }],
  progressToken: ['progressToken', 'caller-token'],
  'stale-state': TOOL_META_VALUES['stale-state'],
  'stale-state-meta': TOOL_META_VALUES['stale-state-meta'],
  'stale-launcher': TOOL_META_VALUES['stale-launcher'],
};
type ReadMeta = { entries: ReadEntry[] } | { nonObject: unknown } | { absent: true };

class ResourceRead extends HostStep {
  constructor(
    readonly thread: number,
    readonly meta: ReadMeta,
  ) {
    super();
  }
  async act(seq: HostSequence, step: StoryStep): Promise<void> {
    const session = await sessionOf(seq, step);
    if (!session) return;
    const thread = pickThread(seq, this.thread, step);
    const uri = `${RECORDING_RESOURCE}?explore=${++seq.attempts}`;
    const caller =
      'entries' in this.meta ? Object.fromEntries(this.meta.entries.map((e) => READ_VALUES[e])) : 'nonObject' in this.meta ? this.meta.nonObject : undefined;
    const params: Record<string, unknown> = { server: SERVER, threadId: thread.id, uri };
    if (!('absent' in this.meta)) params._meta = caller;
    step.sent.push(`mcpServer/resource/read on t${seq.threads.indexOf(thread) + 1}, _meta ${json(caller) ?? '(none)'}`);
    const outcome = await session.request('mcpServer/resource/read', params);
    step.answer.push(answerText(outcome));
    const record = withMethod(session.recorded().records, 'resources/read').find((r) => isObject(r.message.params) && r.message.params.uri === uri);
    step.arrived.push(record ? `at ${SERVER}: ${describeMeta(metaOf(record) ?? {}, seq)}` : 'nothing arrived');
    seq.violations.push(...judgeResourceRead(caller, outcome, record ? (metaOf(record) ?? {}) : undefined));
  }
  kinds(): StepKind[] {
    return ['resource read'];
  }
  toString(): string {
    const meta = 'entries' in this.meta ? `[${this.meta.entries.join(', ')}]` : 'nonObject' in this.meta ? json(this.meta.nonObject) : 'none';
    return `a resource read on thread #${this.thread}, caller _meta ${meta}`;
  }
}

/** HOST-3 (and §2: no sandbox keys) on one resource read. */
function judgeResourceRead(caller: unknown, outcome: AppOutcome, got: Record<string, unknown> | undefined): HostViolation[] {
  const error = outcome.kind === 'error' ? outcome.error : undefined;
  if (caller !== undefined && caller !== null && !isObject(caller)) {
    const message = String(error?.message ?? '');
    if (error?.code === -32600 && message.startsWith('Invalid request: invalid type: ') && message.endsWith(', expected a map') && !got) return [];
    return [
      { check: 'host/resource-read-non-object-meta', message: `_meta ${json(caller)}: ${got ? 'forwarded to the server' : `answered ${answerText(outcome)}`}` },
    ];
  }
  const sent = isObject(caller) ? caller : {};
  const reserved = RESERVED.filter((k) => hasOwn(sent, k));
  if (reserved.length) {
    const named = reserved.some((k) => error?.message === `reserved resource read metadata key: ${k}`);
    if (error?.code === -32600 && named && !got) return [];
    return [
      {
        check: 'host/resource-read-reserved-keys',
        message: `_meta with ${reserved.join(', ')} at position${reserved.length > 1 ? 's' : ''} ${reserved.map((k) => Object.keys(sent).indexOf(k) + 1).join(', ')}: ${got ? 'forwarded to the server' : `answered ${answerText(outcome)}`}`,
        expected: { code: -32600, message: `reserved resource read metadata key: ${reserved.join(' | ')}`, reachedServer: false },
        actual: { answer: error ?? outcome.kind, reachedServer: Boolean(got) },
      },
    ];
  }
  const check = caller === null || caller === undefined ? 'host/resource-read-null-meta' : 'host/resource-read-meta-forwarded';
  if (!got) return [{ check, message: `the read never reached the server (the host answered ${answerText(outcome)})` }];
  const out: HostViolation[] = [];
  // The host adds none (§2); a caller's own entries under those names are judged as any caller entry below.
  const sandbox = SANDBOX_META_KEYS.filter((k) => hasOwn(got, k) && !(hasOwn(sent, k) && json(got[k]) === json(sent[k])));
  if (sandbox.length) out.push({ check: 'host/sandbox-keys-only-on-tools-call', message: `resources/read carried the host's ${sandbox.join(', ')}` });
  const { progressToken, ...rest } = got;
  const { progressToken: callerToken, ...sentRest } = sent;
  const problems = [
    ...(progressToken === undefined ? ['no progressToken'] : []),
    ...(callerToken !== undefined && json(progressToken) === json(callerToken) ? ["the caller's progressToken was passed through"] : []),
    ...(json(rest) !== json(sentRest) ? [`the caller's entries did not arrive verbatim and in order`] : []),
    ...(callerToken !== undefined && json(Object.keys(got)) !== json(Object.keys(sent)) ? ['progressToken did not stay in place'] : []),
  ];
  if (problems.length) out.push({ check, message: problems.join('; '), expected: { ...sent, progressToken: '<token>' }, actual: got });
  return out;
}

/** A whole `exec` run: the config's policy, one turn whose model makes the scripted calls (parallel ones too). */
class ExecRun extends HostStep {
  constructor(
    readonly mode: Mode,
    readonly responses: Target[][],
  ) {
    super();
  }
  async act(seq: HostSequence, step: StoryStep): Promise<void> {
    step.sent.push(`exec with sandbox_mode = ${json(this.mode)}; the model makes ${describeResponses(this.responses)}`);
    const observed = await observeExec({ ...seq.options, sandboxMode: this.mode }, scripted(this.responses));
    const callIds = observed.modelRequests.flatMap((r) => (r.answered === 'message' ? [] : r.answered));
    step.answer.push(observed.hostFailed ?? (observed.exit ? `exit ${observed.exit.code ?? observed.exit.signal}` : 'no exit'));
    const problems = observed.problems.filter((p) => !p.startsWith('the host did not offer'));
    if (observed.hostFailed || problems.length) {
      seq.problem = `exec: ${[observed.hostFailed, ...problems].filter(Boolean).join('; ')}`;
      return;
    }
    const want = { mode: this.mode, workspace: observed.workspace };
    seq.violations.push(...judgeModelCalls(seq, callIds, observed, want, 'host/each-call-current-entries', step));
  }
  kinds(): StepKind[] {
    return ['exec run', ...callKinds(this.responses)];
  }
  toString(): string {
    return `an exec run under ${this.mode}: ${describeResponses(this.responses)}`;
  }
}

// ---- the fixed sequence ----

/** Each subset of the sandbox keys a caller may forge on a direct call: each key alone, then all three. */
const FORGED_SUBSETS: ToolMetaEntry[][] = [['stale-state'], ['stale-state-meta'], ['stale-launcher'], ['stale-state', 'stale-state-meta', 'stale-launcher']];

/**
 * The sequence every host run makes on each transport, judged by the same model as exploration's
 * (what a real client does, so a default run needs no luck to find what depends on it): two threads
 * under different policies and workspaces, their turns interleaved, one turn changing both cwd and
 * policy (its model calling twice, then both servers at once), direct calls on the other thread
 * after that change, direct calls to both servers carrying each subset of the sandbox keys, and
 * resource reads with forged sandbox keys beside ordinary entries. t1 is the session's first thread
 * (the config's workspace-write in w0).
 */
export function fixedSequence(): HostStep[] {
  const one: Target[][] = [['rec']];
  return [
    new StartThread(1, 'read-only'),
    new Turn(0, undefined, undefined, one),
    new Turn(1, undefined, undefined, [['rec', 'plain']]),
    new Turn(1, 'danger-full-access', 0, [['rec'], ['rec', 'plain']]),
    new Turn(0, undefined, undefined, one),
    new DirectCall(0, 'rec', { entries: ['unrelated'] }),
    ...FORGED_SUBSETS.flatMap((entries) => [
      new DirectCall(0, 'rec', { entries: [...entries, 'unrelated'] }),
      new DirectCall(1, 'plain', { entries: [...entries, 'unrelated'] }),
    ]),
    new DirectCall(1, 'rec', { entries: ['progressToken', 'nested'] }),
    new ResourceRead(0, { entries: ['other', 'progressToken'] }),
    ...FORGED_SUBSETS.map((entries) => new ResourceRead(1, { entries: ['other', ...(entries as ReadEntry[])] })),
  ];
}

/** What the fixed sequence found on one transport: every violation (each naming its step), or why it could not go on. */
export interface FixedSequenceOutcome {
  violations: HostViolation[];
  steps: CounterexampleStep[];
  problem?: string;
}

/** Runs the fixed sequence against a fresh host, every step judged (it does not stop at the first violation). */
export async function runFixedSequence(options: DriveOptions): Promise<FixedSequenceOutcome> {
  const seq: HostSequence = { options, threads: [], story: [], violations: [], attempts: 0, stopWhenBroken: false, kinds: new Set() };
  const model: Model = { steps: 0 };
  try {
    for (const step of fixedSequence()) {
      if (seq.problem) break;
      await step.run(model, seq);
    }
  } finally {
    await seq.session?.close();
  }
  return { violations: seq.violations, steps: stepsOf(seq), ...(seq.problem ? { problem: seq.problem } : {}) };
}

// ---- the arbitraries ----

const modeArb = fc.constantFrom<Mode>(...MODES);
const targetArb = fc.oneof({ weight: 3, arbitrary: fc.constant<Target>('rec') }, { weight: 1, arbitrary: fc.constant<Target>('plain') });
/** One to four calls: in one response (parallel) or across several. */
const responsesArb = fc.array(fc.array(targetArb, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 3 }).map((responses) => {
  const out: Target[][] = [];
  let n = 0;
  for (const r of responses) {
    const room = 4 - n;
    if (room <= 0) break;
    out.push(r.slice(0, room));
    n += Math.min(r.length, room);
  }
  return out;
});

function commandsArb(replayPath?: string): fc.Arbitrary<Iterable<fc.AsyncCommand<Model, HostSequence>>> {
  const thread = fc.nat({ max: 2 });
  const workspace = fc.nat({ max: EXTRA_WORKSPACES });
  const startThread = fc.tuple(workspace, fc.option(modeArb, { nil: undefined })).map(([w, m]) => new StartThread(w, m));
  const turn = fc
    .tuple(thread, fc.option(modeArb, { nil: undefined, freq: 3 }), fc.option(workspace, { nil: undefined, freq: 2 }), responsesArb)
    .map(([t, m, w, r]) => new Turn(t, m, w, r));
  const toolEntries = fc.uniqueArray(fc.constantFrom<ToolMetaEntry>(...(Object.keys(TOOL_META_VALUES) as ToolMetaEntry[])), { maxLength: 4 });
  const toolMeta: fc.Arbitrary<CallerMeta> = fc.oneof(
    { weight: 6, arbitrary: toolEntries.map((entries) => ({ entries })) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>(['not', 'a', 'map'], 'a string').map((nonObject) => ({ nonObject })) },
    { weight: 1, arbitrary: fc.constant({ absent: true as const }) },
  );
  const direct = fc.tuple(thread, targetArb, toolMeta).map(([t, target, meta]) => new DirectCall(t, target, meta));
  const readEntries = fc.uniqueArray(fc.constantFrom<ReadEntry>(...RESERVED, 'other', 'nested', 'progressToken'), { minLength: 1, maxLength: 4 });
  const readMeta: fc.Arbitrary<ReadMeta> = fc.oneof(
    { weight: 6, arbitrary: readEntries.map((entries) => ({ entries })) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>([1, 2], 'a string', 7, true, null).map((nonObject) => ({ nonObject })) },
    { weight: 1, arbitrary: fc.constant({ absent: true as const }) },
  );
  const read = fc.tuple(thread, readMeta).map(([t, meta]) => new ResourceRead(t, meta));
  const exec = fc.tuple(modeArb, responsesArb).map(([m, r]) => new ExecRun(m, r));
  return fc.commands([turn, turn, turn, turn, direct, direct, direct, read, read, startThread, exec], {
    maxCommands: MAX_STEPS,
    size: 'max',
    ...(replayPath !== undefined ? { replayPath } : {}),
  });
}

// ---- running ----

/** What exploration found on one transport: nothing, a shrunk failing sequence, or why it could not go on. */
export interface HostExploration {
  sequences: number;
  seed: number;
  violations: HostViolation[];
  counterexample?: Counterexample;
  /** Why exploration stopped early (no violation to name). */
  problem?: string;
  /** The kinds of step its sequences ran, in STEP_KINDS order. */
  covered: StepKind[];
}

interface SequenceOutcome {
  seq: HostSequence;
  violations: HostViolation[];
}

async function runSequence(options: DriveOptions, commands: Iterable<fc.AsyncCommand<Model, HostSequence>>, stopWhenBroken: boolean): Promise<SequenceOutcome> {
  const seq: HostSequence = { options, threads: [], story: [], violations: [], attempts: 0, stopWhenBroken, kinds: new Set() };
  try {
    await fc.asyncModelRun(() => ({ model: { steps: 0 }, real: seq }), commands);
  } finally {
    await seq.session?.close();
  }
  return { seq, violations: seq.violations };
}

interface WorkerResult {
  seed: number;
  sequences: number;
  shrinks: number;
  shrinking: ShrinkBudget;
  failure?: SequenceOutcome;
  failedAt?: number;
  path?: string;
  problem?: string;
}

async function exploreWorker(
  options: DriveOptions,
  result: WorkerResult,
  runs: number,
  shared: { stopped: boolean; covered: Set<StepKind> },
  replay?: { path: string; commands?: string },
) {
  const property = fc.asyncProperty(commandsArb(replay?.commands), async (commands) => {
    if (result.problem || (shared.stopped && !result.failure) || options.signal?.aborted) return true;
    if (result.failure && (result.shrinking.spent || Date.now() > result.failedAt! + SHRINK_TIME_MS)) return true;
    const outcome = await runSequence(options, commands, !replay);
    for (const kind of outcome.seq.kinds) shared.covered.add(kind);
    if (outcome.seq.problem && outcome.violations.length === 0) {
      if (!result.failure) {
        result.problem = outcome.seq.problem;
        shared.stopped = true;
      }
      return true;
    }
    // Its steps up to the break, then its commands (a replay runs those after the break too).
    const size = outcome.violations.length > 0 ? [outcome.seq.story.length, [...commands].length] : undefined;
    if (result.failure) {
      result.shrinks++;
      result.shrinking.rerun(size);
    } else {
      result.sequences++;
      if (size) result.shrinking.start(size);
    }
    if (outcome.violations.length === 0) return true;
    shared.stopped = true;
    result.failure = outcome;
    result.failedAt ??= Date.now();
    return false;
  });
  const details = await fc.check(property, { seed: result.seed, numRuns: runs, ...(replay ? { path: replay.path, endOnFailure: true } : {}) });
  if (details.failed) {
    const commands = /replayPath="([^"]*)"/.exec(String(details.counterexample?.[0] ?? ''))?.[1];
    result.path = `${details.counterexamplePath ?? ''}${commands ? `@${commands}` : ''}`;
  }
}

/**
 * The longest exploration of one transport may take beside the fixed runs: each worker's sequences
 * one after another (each bounded by one host run's budget), then shrinking and its last rerun.
 */
export function explorationBoundMs(explore: HostExploreOptions | undefined, hostRunMs: number): number {
  if (!explore || explore.runs <= 0) return 0;
  return Math.ceil(explore.runs / WORKERS) * hostRunMs + SHRINK_TIME_MS + hostRunMs;
}

/** Explores one transport with `explore` (its budget and seed, or one sequence to replay). */
export async function exploreHost(options: DriveOptions, explore: HostExploreOptions): Promise<HostExploration> {
  const replay = explore.replay;
  const plans = replay
    ? [{ seed: replay.seed, runs: 1 }]
    : Array.from({ length: Math.min(WORKERS, explore.runs) }, (_, k) => ({
        seed: (explore.seed + k) | 0,
        runs: Math.floor(explore.runs / WORKERS) + (k < explore.runs % WORKERS ? 1 : 0),
      }));
  const results: WorkerResult[] = plans.map((p) => ({
    seed: p.seed,
    sequences: 0,
    shrinks: 0,
    shrinking: new ShrinkBudget(MAX_SHRINK_RUNS, SHRINK_PATIENCE, ([steps]) => steps! <= 1),
  }));
  const shared = { stopped: false, covered: new Set<StepKind>() };
  const replayOf = (path: string) => {
    const at = path.indexOf('@');
    return at < 0 ? { path } : { path: path.slice(0, at), commands: path.slice(at + 1) };
  };
  await Promise.all(plans.map((p, k) => exploreWorker(options, results[k]!, p.runs, shared, replay ? replayOf(replay.path) : undefined)));
  const sequences = results.reduce((n, r) => n + r.sequences, 0);
  const covered = STEP_KINDS.filter((k) => shared.covered.has(k));
  explore.onCovered?.(options.transport, covered);
  const failed = results.find((r) => r.failure);
  if (failed?.failure) return { sequences, seed: failed.seed, violations: failed.failure.violations, counterexample: storyOf(failed, failed.failure), covered };
  const problem = results.find((r) => r.problem)?.problem;
  return { sequences, seed: explore.seed, violations: [], covered, ...(problem ? { problem } : {}) };
}

/** The failing sequence told step by step: what was sent, what arrived at which server, what the host answered. */
function storyOf(worker: WorkerResult, outcome: SequenceOutcome): Counterexample {
  return counterexampleOf(
    worker,
    stepsOf(outcome.seq),
    outcome.violations.map((v) => ({ rule: ruleOf(v.check), check: v.check, message: v.message })),
  );
}

/** A sequence's story as counterexample steps. */
const stepsOf = (seq: HostSequence): CounterexampleStep[] =>
  seq.story.map((s, i) => ({ n: i + 1, action: s.action, authority: s.sent, ran: s.arrived.map((a) => `arrived ${a}`), response: s.answer }));

const ruleOf = (check: string): string => hostCheckDefs.find((c) => c.id === check)?.rule ?? '?';
