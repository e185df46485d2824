import * as fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { codexState, STATE_PROFILES, type SandboxEntries, type StateProfile, type Transport } from '../../harness/codex-wire.js';
import { readSessionId, renderArguments, type ExecAdapter, type SessionAdapter } from '../../harness/exec-adapter.js';
import { describeOutcome, isRefusal, type RawOutcome } from '../../harness/codex-session.js';
import { shellQuote, type Observations } from '../../harness/observers.js';
import { isObject } from '../../harness/json.js';
import { argumentsNotAuthority } from './authority.js';
import { commandKit, formLabel, generate, GRAMMAR, type CommandKit } from './commands.js';
import { awaitProbeRuns, carriesNonce, commandLabel, parseLaunchArgv, parseJson, probeRunsOf, summarizeOutcome } from '../engine/judge.js';
import { seconds } from '../engine/suite-run.js';
import {
  couldNotRun,
  fail,
  notApplicable,
  pass,
  type CheckDef,
  type Counterexample,
  type CounterexampleStep,
  type ExploreOptions,
  type IsolatedContext,
  type IsolatedRun,
  type Scenario,
  type ScenarioContext,
  type Verdict,
  type Finding,
  type MonitoredCall,
} from '../engine/model.js';

/**
 * Model-based exploration (fast-check's `fc.commands`): random sequences of calls, each sequence
 * against one fresh server process, every call judged by the sandbox monitor. The model is the
 * contract: a step's authority is kept as Codex would keep it (the current workspace, policy,
 * launcher and key form, changed one dimension at a time), and what each call permits (run inside
 * a launch of exactly its codexExecutable under exactly its state, or nothing at all) follows from
 * what it sent (authorityOf). Defects that need several calls on one process to show (a cache, a
 * worker pool, a counter, a remembered launcher) are found this way and shrunk to the shortest
 * sequence that still breaks the contract.
 */
export const sequencesHoldContract: CheckDef = {
  id: 'explore/sequences-hold-contract',
  rule: 'EXEC-1',
  level: 'MUST',
  title: 'random call sequences on one server process keep to the contract at every step',
  summary:
    'Stateful, model-based exploration: sequences of calls on one server process, where the authority changes one dimension at a time (policy, workspace, an unknown field, launcher, which state key carries it), calls arrive with no launcher or a malformed one, a state that is absent or not an object, a launcher that cannot set up a sandbox, authority smuggled in the arguments, commands drawn from the whole command grammar (every form at every size, up to about 100 KB), bursts of concurrent calls whose authority differs in policy, workspace, launcher or key form (sent at once or a few milliseconds apart), resource reads and relists. Every call must run only inside a launch of its own codexExecutable under its own state, or run nothing when its authority is missing or bad, whatever came before it. A violation is shrunk to the shortest sequence that still shows it, with the seed and path that replay it. Source: CONTRACT.md §3 EXEC-1, LAUNCH-1..3, FWD-1, FWD-2, AUTH-1, AUTH-2, AUTH-3, HTTP-1.',
  observes:
    "Each sequence gets a fresh server with its own observers; after its last step the server is stopped and the monitor judges every call of the sequence against every execution, launch and trap invocation it recorded (the same judgement as the fixed scenarios). The sequence fails on any finding of a MUST rule, a call of a burst that ran under another call's authority included (AUTH-3; findings of SHOULD rules, such as key order, are left to their own checks), and on a call with valid authority that reported success while its command never ran (to the exec tool the fixed checks drive; one command shape in four goes to one of the server's other exec tools, if any, judged by what ran). fast-check then shrinks the sequence, rerunning each candidate on a fresh server, and the report lists the minimal one step by step: the authority each call carried, the command's form and text, what ran and in which launch under whose state. The sequence generator is seeded, so a default run is reproducible, and a failure report gives the seed and path that rerun exactly that sequence.",
  why: 'Servers keep state: caches, pools, remembered launchers, counters. Their defects show on the third call, after a failure, or after a change of workspace, where a fixed script of a few calls never looks.',
  typicalMistake:
    'A worker or cache keyed on part of the authority, a launcher remembered "until it changes", or a fast path that kicks in after a few identical calls.',
  fix: "Read the authority from each call, every time; key anything you keep by the exact state JSON and launcher path, and never let one call fall back on another's.",
  needs: ['exec', 'opt-in'],
};

/** Default budget of a run: reproducible (fixed seed) and small enough for the default wall time. */
export const EXPLORE_DEFAULTS: ExploreOptions = { runs: 12, seed: 20261201 };
/** Sequences run at once: fixed (not the run's parallelism), so a seed means the same sequences on every machine. */
const WORKERS = 2;
const MAX_STEPS = 10;
/** A sequence makes at most this many calls (a repeated step makes many). */
const MAX_CALLS = 40;
/** How long an idle step waits: up to several seconds; shrinking shortens it to the shortest that still fails. */
export const IDLE_STEPS_MS = [250, 1000, 2500, 5000] as const;
/** What each sequence adds to its worker's budget (Budget): idle time and the extra calls of repeated steps. */
const IDLE_PER_SEQUENCE_MS = 300;
const REPEATS_PER_SEQUENCE = 4;
/**
 * Shrinking reruns each candidate on a fresh server: capped by count, not time, so that the
 * sequence a failure shrinks to does not depend on the machine's load.
 */
const MAX_SHRINK_RUNS = 40;
/** What a time budget allows shrinking on top of it (--explore-time): about as long as 40 reruns take under load. */
const SHRINK_ALLOWANCE_MS = 60_000;

/** A finding breaks the sequence unless it is charged to a SHOULD or INFO check. */
const isMust = (finding: Finding) => finding.check.level === 'MUST';

// ---- the model: the authority Codex would send now ----

type KeyForm = 'both' | 'current' | 'deprecated';
interface Authority {
  workspace: 0 | 1;
  policy: StateProfile;
  /** An unknown field's value: a server must forward it, and a change of it is a change of authority. */
  variant: 0 | 1;
  launcher: 'a' | 'b';
  keys: KeyForm;
}
const INITIAL: Authority = { workspace: 0, policy: 'workspace-write', variant: 0, launcher: 'a', keys: 'both' };

type Change = 'none' | 'policy' | 'workspace' | 'variant' | 'launcher' | 'keys';
type BadAuthority =
  | 'launcher-absent'
  | 'launcher-string'
  | 'launcher-relative'
  | 'launcher-missing'
  | 'launcher-not-executable'
  | 'launcher-broken'
  | 'state-absent'
  | 'state-not-object';
const BAD: BadAuthority[] = [
  'launcher-absent',
  'launcher-string',
  'launcher-relative',
  'launcher-missing',
  'launcher-not-executable',
  'launcher-broken',
  'state-absent',
  'state-not-object',
];

/** One dimension changed; `pick` chooses the new key form or policy (another than the current one). */
function changed(authority: Authority, change: Change, pick: number): Authority {
  const other = <T>(values: readonly T[], current: T): T => {
    const rest = values.filter((v) => v !== current);
    return rest[pick % rest.length]!;
  };
  switch (change) {
    case 'none':
      return authority;
    case 'policy':
      return { ...authority, policy: other(STATE_PROFILES, authority.policy) };
    case 'workspace':
      return { ...authority, workspace: authority.workspace === 0 ? 1 : 0 };
    case 'variant':
      return { ...authority, variant: authority.variant === 0 ? 1 : 0 };
    case 'launcher':
      return { ...authority, launcher: authority.launcher === 'a' ? 'b' : 'a' };
    case 'keys':
      return { ...authority, keys: other(['both', 'current', 'deprecated'] as const, authority.keys) };
  }
}

const describeAuthority = (a: Authority) =>
  `launcher ${a.launcher}, workspace w${a.workspace}, ${a.policy}, unknown field v${a.variant}, ${a.keys === 'both' ? 'both state keys' : a.keys === 'current' ? 'current state key only' : 'deprecated state key only'}`;

/** One sequence against one server: what the steps did, for judging and for the report. */
export interface Sequence {
  sub: IsolatedContext;
  /** The check each kind of call is made for (exploration: its own; the resident server: the rules' checks). */
  checks: CallChecks;
  /** Waits without holding a job slot. */
  idle: (ms: number) => Promise<void>;
  current: Authority;
  steps: { action: string; calls: { index: number; authority: string }[]; atMs?: number; repeated?: boolean }[];
  workspaces: [string, string];
  launchers: { a: string; b: string };
  /** Each state the sequence sent, with the step that first sent it, to say whose state a launch carried. */
  statesSent: { state: Record<string, unknown>; label: string }[];
  smuggling: boolean;
  /** Calls sent so far: the monitor numbers them in the order they are sent, from 1. */
  callsSent: number;
  adapter?: SessionAdapter;
  /** Sessions opened through the session adapter (when there is one), with the step that opened each. */
  sessions: { id: string; step: number }[];
  /** Nonces sent to sessions that accepted them: their commands may run a moment later. */
  sessionNonces: string[];
  resourceUri?: string | null;
  /** The everyday names the grammar's commands run under (made once per sequence). */
  kit?: Promise<CommandKit>;
  /** Stop after the first step whose calls broke a MUST rule (exploration; the resident server and the soak go on). */
  stopWhenBroken?: boolean;
  /** The server's other exec tools: exploration and the soak give them a share of their valid single calls (toolFor); the resident drives each after its core calls. */
  extraTools: readonly ExecAdapter[];
  /** The numbers of the calls sent to them. */
  extraCalls: Set<number>;
}

/** One command shape in EXTRA_SHARE goes to one of the other exec tools (by the shape: a shrunk or replayed step keeps its tool). */
const EXTRA_SHARE = 4;

/** The exec tool a valid call of command shape `shape` goes to (undefined: the primary); the call's number is noted. */
function toolFor(seq: Sequence, shape: number, index: number): ExecAdapter | undefined {
  const extra = seq.extraTools;
  if (extra.length === 0 || shape % EXTRA_SHARE !== EXTRA_SHARE - 1) return undefined;
  seq.extraCalls.add(index);
  return extra[Math.floor(shape / EXTRA_SHARE) % extra.length];
}

/** How a step names the tool it called, when it is not the primary. */
const toTool = (adapter: ExecAdapter | undefined) => (adapter ? ` to tool ${JSON.stringify(adapter.tool)}` : '');

/** The state Codex would send for the authority's policy and workspace (canaries included). */
function stateOf(seq: Sequence, a: Authority): Record<string, unknown> {
  const linuxSandboxExe = String(seq.sub.state.codexLinuxSandboxExe);
  const state = codexState(a.policy, seq.workspaces[a.workspace], { linuxSandboxExe });
  if (a.variant === 1) state.conformanceVariant = { changedBy: 'exploration', list: [] };
  return state;
}

function entriesOf(seq: Sequence, a: Authority, state = stateOf(seq, a)): SandboxEntries {
  const entries = seq.sub.codexEntries(state);
  if (seq.sub.transport === 'stdio' && a.launcher === 'b') entries.launcher = { codexExecutable: seq.launchers.b };
  if (a.keys === 'current') entries.stateDeprecated = undefined;
  if (a.keys === 'deprecated') entries.state = undefined;
  return entries;
}

/** The check a call of each kind is made for: findings the monitor does not charge to a rule's check go there. */
export interface CallChecks {
  valid: string;
  refused: string;
  broken: string;
  relative: string;
  notExecutable: string;
  smuggled: string;
}
const EXPLORATION_CHECKS: CallChecks = {
  valid: sequencesHoldContract.id,
  refused: sequencesHoldContract.id,
  broken: sequencesHoldContract.id,
  relative: sequencesHoldContract.id,
  notExecutable: sequencesHoldContract.id,
  smuggled: sequencesHoldContract.id,
};

function noteState(seq: Sequence, state: Record<string, unknown>, label: string) {
  if (!seq.statesSent.some((s) => isDeepStrictEqual(s.state, state))) seq.statesSent.push({ state, label });
}

/** Shape 0 is the plain probe; shape k is the command grammar's entry k - 1 (a form at a size). */
async function probeCommand(seq: Sequence, shape: number, nonce: string) {
  if (shape === 0) return undefined;
  seq.kit ??= commandKit(seq.sub.observers);
  const entry = GRAMMAR[(shape - 1) % GRAMMAR.length]!;
  const command = generate(await seq.kit, entry, nonce);
  return { argv: command.argv, script: command.script, form: formLabel(entry) };
}

// ---- the commands ----

/**
 * What a worker may still spend on idle steps and on the extra calls of repeated steps (the default
 * run's budget); absent while shrinking a failure (bounded by its count of reruns) and when replaying.
 * A step it cannot afford is skipped (fc.commands records which ran, so a replay skips it too).
 */
export interface Budget {
  idleMs: number;
  calls: number;
}
/** `stopped`: a step broke the contract already; the steps after it are not run (so shrinking can drop them). */
export type Model = { steps: number; budget?: Budget; stopped?: boolean };

export abstract class Step implements fc.AsyncCommand<Model, Sequence> {
  check(model: Readonly<Model>): boolean {
    return !model.stopped; // the contract holds after any history; once broken, the rest of the sequence proves nothing more
  }
  /** Runs the step, noting when it began (since the server started) on the steps it records. */
  async run(model: Model, seq: Sequence): Promise<void> {
    const atMs = Date.now() - seq.sub.serverStartedAt;
    const before = seq.steps.length;
    try {
      await this.act(model, seq);
    } finally {
      for (const step of seq.steps.slice(before)) step.atMs ??= atMs;
    }
    // fast-check drops steps that did not run when it shrinks: a broken sequence stops where it broke.
    if (seq.stopWhenBroken && (await seq.sub.findingsSoFar()).some(isMust)) model.stopped = true;
  }
  abstract act(model: Model, seq: Sequence): Promise<void>;
  abstract toString(): string;
}

/** A call with valid authority: the current one, after changing one dimension of it. */
export class Exec extends Step {
  constructor(
    readonly change: Change,
    readonly pick: number,
    readonly shape: number,
    readonly smuggle: boolean,
    readonly launcherOverHttp: boolean,
  ) {
    super();
  }
  async act(model: Model, seq: Sequence): Promise<void> {
    model.steps++;
    seq.current = changed(seq.current, this.change, this.pick);
    const state = stateOf(seq, seq.current);
    const entries = entriesOf(seq, seq.current, state);
    // Over HTTP no launcher may be trusted: send one anyway, as a misconfigured proxy might.
    if (seq.sub.transport === 'http' && this.launcherOverHttp) entries.launcher = { codexExecutable: seq.launchers.a };
    const label = `step ${seq.steps.length + 1}`;
    noteState(seq, state, label);
    const nonce = seq.sub.observers.newNonce();
    const smuggled = this.smuggle && seq.smuggling ? await smuggledArguments(seq) : undefined;
    const index = ++seq.callsSent;
    const command = await probeCommand(seq, this.shape, nonce);
    const adapter = toolFor(seq, this.shape, index);
    const call = seq.sub.execProbe(entries, {
      adapter,
      check: seq.checks.valid,
      nonce,
      command,
      extraArguments: smuggled?.arguments,
      decoy: smuggled ? { check: argumentsNotAuthority.id, markers: smuggled.markers } : undefined,
    });
    seq.steps.push({
      action: `exec${toTool(adapter)}${this.change === 'none' ? '' : ` after changing ${this.change === 'variant' ? 'an unknown field' : this.change}`}${smuggled ? ', with authority smuggled in the arguments' : ''}`,
      calls: [
        {
          index,
          authority: `${describeAuthority(seq.current)}${seq.sub.transport === 'http' ? (entries.launcher ? ' (a launcher in _meta over HTTP)' : ' (over HTTP)') : ''}`,
        },
      ],
    });
    await call;
  }
  toString(): string {
    return `Exec(${this.change}${this.change === 'keys' || this.change === 'policy' ? `:${this.pick}` : ''}, shape ${this.shape}${this.smuggle ? ', smuggle' : ''}${this.launcherOverHttp ? ', launcher over http' : ''})`;
  }
}

/** A call whose authority is missing or malformed in one way: it must run nothing. */
export class Refused extends Step {
  constructor(readonly bad: BadAuthority) {
    super();
  }
  async act(model: Model, seq: Sequence): Promise<void> {
    model.steps++;
    const sub = seq.sub;
    const entries = entriesOf(seq, seq.current);
    let expect: 'refuse' | 'attempt' = 'refuse';
    switch (this.bad) {
      case 'launcher-absent':
        entries.launcher = undefined;
        break;
      case 'launcher-string':
        entries.launcher = seq.launchers.a;
        break;
      case 'launcher-relative':
        await Promise.all([
          sub.plantTrap('relative-launcher', { dir: seq.workspaces[seq.current.workspace] }, seq.checks.relative),
          sub.plantTrap('relative-launcher', { dir: join(seq.workspaces[seq.current.workspace], 'bin') }, seq.checks.relative),
        ]);
        entries.launcher = { codexExecutable: 'codex' };
        break;
      case 'launcher-missing':
        entries.launcher = { codexExecutable: sub.observers.missingLauncherPath() };
        break;
      case 'launcher-not-executable':
        entries.launcher = { codexExecutable: await sub.plantTrap('not-executable', { executable: false }, seq.checks.notExecutable) };
        break;
      case 'launcher-broken':
        entries.launcher = { codexExecutable: await sub.observers.brokenLauncher() };
        expect = 'attempt';
        break;
      case 'state-absent':
        entries.state = undefined;
        entries.stateDeprecated = undefined;
        break;
      case 'state-not-object': {
        const text = JSON.stringify(stateOf(seq, seq.current));
        entries.state = text;
        entries.stateDeprecated = text;
        break;
      }
    }
    // Over HTTP every call is one to refuse; keep the launcher away as Codex does.
    if (sub.transport === 'http' && this.bad !== 'launcher-string') entries.launcher = undefined;
    const index = ++seq.callsSent;
    const check = this.bad === 'launcher-broken' ? seq.checks.broken : seq.checks.refused;
    const call = sub.execProbe(entries, { check, expect: sub.transport === 'http' ? 'refuse' : expect });
    seq.steps.push({
      action: `call with ${this.bad.replace('-', ' ')}`,
      calls: [{ index, authority: `${this.bad.replace('-', ' ')} (otherwise ${describeAuthority(seq.current)})` }],
    });
    await call;
  }
  toString(): string {
    return `Refused(${this.bad})`;
  }
}

/**
 * Calls in flight at once, each with authority of its own: the current one, then one per change
 * (a change of key form comes with a change of an unknown field, so that the authority differs),
 * sent at once or `delayMs` apart.
 */
export class Burst extends Step {
  constructor(
    readonly changes: Change[],
    readonly delayMs = 0,
  ) {
    super();
  }
  async act(model: Model, seq: Sequence): Promise<void> {
    model.steps++;
    const authorities = [
      seq.current,
      ...this.changes.map((c, i) => (c === 'keys' ? changed(changed(seq.current, 'keys', i), 'variant', 0) : changed(seq.current, c, i))),
    ];
    const calls: { pending: Promise<unknown>; index: number; authority: string }[] = [];
    const step = seq.steps.length + 1;
    seq.steps.push({ action: `${authorities.length} calls at once${this.delayMs ? `, ${this.delayMs} ms apart` : ''}`, calls: [] });
    for (const [i, a] of authorities.entries()) {
      if (i > 0 && this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      const state = stateOf(seq, a);
      noteState(seq, state, `step ${step} call ${i + 1}`);
      const entries = entriesOf(seq, a, state);
      const index = ++seq.callsSent;
      const pending = seq.sub.execProbe(entries, { check: seq.checks.valid, concurrent: true });
      calls.push({ pending, index, authority: describeAuthority(a) });
      seq.steps[step - 1]!.calls.push({ index, authority: describeAuthority(a) });
    }
    await Promise.all(calls.map((c) => c.pending));
  }
  toString(): string {
    return `Burst(${this.changes.join(', ')}${this.delayMs ? `, ${this.delayMs} ms apart` : ''})`;
  }
}

/** Nothing for a while: a server's defect may wait for a timer (a worker warming up, a cache expiring). */
export class Idle extends Step {
  constructor(readonly ms: number) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return super.check(model) && (!model.budget || model.budget.idleMs >= this.ms);
  }
  async act(model: Model, seq: Sequence): Promise<void> {
    model.steps++;
    if (model.budget) model.budget.idleMs -= this.ms;
    seq.steps.push({ action: `idle for ${seconds(this.ms)}`, calls: [] });
    await seq.idle(this.ms);
  }
  toString(): string {
    return `Idle(${this.ms} ms)`;
  }
}

/** The same call, `count` times in a row after changing one dimension: a defect may wait for a count of calls. */
export class Repeat extends Step {
  constructor(
    readonly change: Change,
    readonly pick: number,
    readonly count: number,
  ) {
    super();
  }
  override check(model: Readonly<Model>): boolean {
    return super.check(model) && (!model.budget || model.budget.calls >= this.count);
  }
  async act(model: Model, seq: Sequence): Promise<void> {
    model.steps++;
    if (model.budget) model.budget.calls -= this.count;
    seq.current = changed(seq.current, this.change, this.pick);
    const state = stateOf(seq, seq.current);
    noteState(seq, state, `step ${seq.steps.length + 1}`);
    // A sequence makes at most MAX_CALLS calls: a repeat stops there.
    const count = Math.max(0, Math.min(this.count, MAX_CALLS - seq.callsSent));
    const step: Sequence['steps'][number] = {
      action: `exec ${count} times in a row${this.change === 'none' ? '' : ` after changing ${this.change === 'variant' ? 'an unknown field' : this.change}`}`,
      calls: [],
      repeated: true,
    };
    seq.steps.push(step);
    for (let i = 0; i < count; i++) {
      const index = ++seq.callsSent;
      step.calls.push({ index, authority: describeAuthority(seq.current) });
      await seq.sub.execProbe(entriesOf(seq, seq.current, state), { check: seq.checks.valid });
    }
  }
  toString(): string {
    return `Repeat(${this.change}${this.change === 'keys' || this.change === 'policy' ? `:${this.pick}` : ''}, ${this.count})`;
  }
}

/** Opens a session (through the operator's session adapter) under the current authority. */
class SessionOpen extends Step {
  async act(model: Model, seq: Sequence): Promise<void> {
    model.steps++;
    const adapter = seq.adapter!;
    const index = ++seq.callsSent;
    const step = seq.steps.length + 1;
    seq.steps.push({ action: 'open a session', calls: [{ index, authority: describeAuthority(seq.current) }] });
    const state = stateOf(seq, seq.current);
    noteState(seq, state, `step ${step}`);
    const opened = await seq.sub.callTool(
      adapter.open.tool,
      renderArguments(adapter.open.arguments, [seq.sub.observers.sessionShellPath]),
      entriesOf(seq, seq.current, state),
      { check: seq.checks.valid, expect: 'run' },
    );
    const id = opened.kind === 'result' && !isRefusal(opened) ? readSessionId(opened.result, adapter.sessionId) : undefined;
    if (id !== undefined) seq.sessions.push({ id, step });
  }
  toString(): string {
    return 'SessionOpen';
  }
}

/** Sends the probe to an open session under the current authority: run under it, or refused. */
class SessionSend extends Step {
  constructor(readonly which: number) {
    super();
  }
  async act(model: Model, seq: Sequence): Promise<void> {
    model.steps++;
    const session = seq.sessions[this.which % Math.max(1, seq.sessions.length)];
    if (!session) {
      seq.steps.push({ action: 'send to a session (none is open: nothing sent)', calls: [] });
      return;
    }
    const adapter = seq.adapter!;
    const state = stateOf(seq, seq.current);
    noteState(seq, state, `step ${seq.steps.length + 1}`);
    const nonce = seq.sub.observers.newNonce();
    const argv = seq.sub.observers.probeCommand(nonce);
    const args = renderArguments(adapter.send.arguments, argv, { sessionId: session.id });
    const index = ++seq.callsSent;
    seq.steps.push({ action: `send to the session opened at step ${session.step}`, calls: [{ index, authority: describeAuthority(seq.current) }] });
    const outcome = await seq.sub.callTool(
      adapter.send.tool,
      typeof args === 'string' ? argv.map(shellQuote).join(' ') : args,
      entriesOf(seq, seq.current, state),
      { check: seq.checks.valid, nonce },
    );
    if (outcome.kind === 'result' && !isRefusal(outcome)) seq.sessionNonces.push(nonce);
  }
  toString(): string {
    return `SessionSend(${this.which})`;
  }
}

/** tools/list again, or a resource read: the server's state may be disturbed by them. */
class Other extends Step {
  constructor(readonly what: 'relist' | 'read-resource') {
    super();
  }
  async act(model: Model, seq: Sequence): Promise<void> {
    model.steps++;
    const session = seq.sub.session;
    if (this.what === 'relist') {
      seq.steps.push({ action: 'tools/list', calls: [] });
      await session.request('tools/list', {}, 10_000);
      return;
    }
    seq.steps.push({ action: 'resources/read', calls: [] });
    if (seq.resourceUri === undefined) {
      const listed = await session.request('resources/list', {}, 10_000);
      const resources = 'result' in listed && isObject(listed.result) && Array.isArray(listed.result.resources) ? listed.result.resources : [];
      const first = resources.find((r) => isObject(r) && typeof r.uri === 'string') as { uri: string } | undefined;
      seq.resourceUri = first?.uri ?? null;
    }
    if (seq.resourceUri) await session.readResource(seq.resourceUri, undefined, 10_000);
  }
  toString(): string {
    return this.what === 'relist' ? 'Relist' : 'ReadResource';
  }
}

async function smuggledArguments(seq: Sequence): Promise<{ arguments: Record<string, unknown>; markers: string[] }> {
  const trap = await seq.sub.plantTrap('launcher-in-arguments', {}, seq.checks.smuggled);
  const permissive = { ...seq.sub.state, permissionProfile: { type: 'disabled' }, sandboxCwd: pathToFileURL(join(seq.workspaces[0], 'from-arguments')).href };
  return {
    arguments: {
      codexExecutable: trap,
      sandboxState: permissive,
      'codex/sandbox-state': permissive,
      'codex/sandbox-launcher': { codexExecutable: trap },
      _meta: { 'codex/sandbox-state': permissive, 'codex/sandbox-launcher': { codexExecutable: trap } },
    },
    markers: [JSON.stringify(permissive.sandboxCwd)],
  };
}

/** An idle step (shrinking shortens it: constantFrom shrinks toward the shorter waits). */
export const idleStep = (): fc.Arbitrary<Idle> => fc.constantFrom(...IDLE_STEPS_MS).map((ms) => new Idle(ms));
/** A repeated call, 2 to 30 times (shrinking lowers the count). */
const repeatStep = (): fc.Arbitrary<Repeat> =>
  fc
    .tuple(fc.constantFrom<Change>('none', 'policy', 'workspace', 'variant', 'launcher'), fc.nat({ max: 2 }), fc.integer({ min: 2, max: 30 }))
    .map(([change, pick, count]) => new Repeat(change, pick, count));

/** The calls with valid authority and with missing or malformed authority, one at a time: the resident server's and the soak's traffic. */
export function singleCalls(options: { smuggle: boolean; launcherOverHttp: boolean }): fc.Arbitrary<Step>[] {
  const change = fc.constantFrom<Change>('none', 'policy', 'workspace', 'variant', 'launcher', 'keys');
  const exec = fc
    .tuple(
      change,
      fc.nat({ max: 2 }),
      fc.constantFrom(0, 0, 1, 2, 3, 4, 5, 6, 7, 8),
      options.smuggle ? fc.boolean() : fc.constant(false),
      fc.boolean().map((b) => options.launcherOverHttp && b),
    )
    .map(([c, k, shape, s, h]): Step => new Exec(c, k, shape, s, h));
  const refused = fc.constantFrom(...BAD).map((bad): Step => new Refused(bad));
  return [exec, exec, exec, refused];
}

/** The commands of a sequence, weighted toward the valid calls whose history matters. */
function commandArbitrary(ctx: ScenarioContext, replayPath?: string): fc.Arbitrary<Iterable<fc.AsyncCommand<Model, Sequence>>> {
  const change = fc.constantFrom<Change>('none', 'none', 'none', 'policy', 'workspace', 'variant', 'launcher', 'keys');
  const pick = fc.nat({ max: 2 });
  const sometimes = fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });
  const exec = fc
    .tuple(
      change,
      pick,
      // The plain probe, or a command of the grammar (a form at a size).
      fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 3, arbitrary: fc.integer({ min: 1, max: GRAMMAR.length }) }),
      sometimes,
      fc.boolean(),
    )
    .map(([c, k, shape, s, h]) => new Exec(c, k, shape, s, h));
  const refused = fc.constantFrom(...BAD).map((bad) => new Refused(bad));
  const burst = fc
    .tuple(
      fc.array(fc.constantFrom<Change>('policy', 'workspace', 'variant', 'launcher', 'keys'), { minLength: 1, maxLength: 2 }),
      fc.constantFrom(0, 0, 5, 20),
    )
    .map(([changes, delayMs]) => new Burst(changes, delayMs));
  const sessions = ctx.sessionAdapter
    ? [fc.constant(new SessionOpen()), fc.nat({ max: 1 }).map((k) => new SessionSend(k)), fc.nat({ max: 1 }).map((k) => new SessionSend(k))]
    : [];
  const capabilities = ctx.handshake.initializeResult.capabilities;
  const others: ('relist' | 'read-resource')[] = isObject(capabilities) && isObject(capabilities.resources) ? ['relist', 'read-resource'] : ['relist'];
  const other = fc.constantFrom(...others).map((what) => new Other(what));
  return fc.commands(
    [exec, exec, exec, exec, exec, refused, refused, burst, other, idleStep(), repeatStep(), ...sessions],
    // fc.commands shrinks by what actually ran, so replaying a shrunk sequence needs that record too.
    { maxCommands: MAX_STEPS, ...(replayPath !== undefined ? { replayPath } : {}) },
  );
}

// ---- running and judging one sequence ----

export interface SequenceOutcome {
  run: IsolatedRun<Sequence>;
  violations: Finding[];
  /** Calls that were allowed to run and did: a sequence of nothing but refusals tests little. */
  executed: number;
}

/** A sequence on `sub`, before its first step. */
export async function newSequence(ctx: ScenarioContext, sub: IsolatedContext, checks: CallChecks = EXPLORATION_CHECKS): Promise<Sequence> {
  return {
    sub,
    checks,
    idle: (ms) => ctx.idle(ms),
    current: INITIAL,
    steps: [],
    workspaces: [sub.observers.workspaceDir, await sub.observers.workspaceVariant('w1')],
    launchers: { a: sub.observers.launcherPath, b: sub.transport === 'stdio' ? await sub.observers.secondLauncher() : sub.observers.launcherPath },
    statesSent: [],
    smuggling: isObject(renderArguments(sub.exec?.arguments, [])),
    callsSent: 0,
    adapter: ctx.sessionAdapter,
    sessions: [],
    sessionNonces: [],
    extraTools: [],
    extraCalls: new Set(),
  };
}

/**
 * Runs one sequence on a fresh server. It stops at the step that broke a MUST rule (so shrinking
 * drops the steps after it), except when replaying: whether a break shows at once depends on when
 * the records are written, and a replay must run exactly the steps it was given.
 */
async function runSequence(
  ctx: ScenarioContext,
  commands: Iterable<fc.AsyncCommand<Model, Sequence>>,
  budget?: Budget,
  stopWhenBroken = true,
): Promise<SequenceOutcome> {
  const run = await ctx.isolated(async (sub) => {
    const seq = await newSequence(ctx, sub);
    seq.stopWhenBroken = stopWhenBroken;
    seq.extraTools = sub.execTools;
    await fc.asyncModelRun(() => ({ model: { steps: 0, budget }, real: seq }), commands);
    // A session runs what it accepted asynchronously: give those commands a moment before the server stops.
    if (seq.sessionNonces.length > 0) await awaitProbeRuns(sub, seq.sessionNonces);
    return seq;
  });
  return judgeSequence(run, sequencesHoldContract);
}

/** What breaks a sequence: the monitor's MUST findings, and a valid call that reported success while its command never ran (charged to `check`). */
export function judgeSequence(run: IsolatedRun<Sequence>, check: CheckDef): SequenceOutcome {
  const violations = run.findings.filter(isMust);
  let executed = 0;
  for (const call of run.calls) {
    if (call.expect !== 'run' || !call.nonce || !call.outcome) continue;
    const ran = probeRunsOf(run.observations, call.nonce).length > 0 || run.observations.launches.some((l) => carriesNonce(l.argv, call.nonce!));
    if (ran) executed++;
    // Another exec tool may take commands in a form the probe does not run in (code, not shell): it is judged by what ran.
    else if (call.outcome.kind === 'result' && !isRefusal(call.outcome) && !run.value?.extraCalls.has(call.index)) {
      violations.push({
        check,
        scenario: call.scenario,
        transport: call.transport,
        call: call.index,
        message: `${call.scenario} call #${call.index}${call.atMs === undefined ? '' : ` (sent ${seconds(call.atMs)} after its server started)`}: reported success, but its command never ran`,
        expected: 'the command executed inside a launch of the codexExecutable sent (or the call refused)',
        actual: summarizeOutcome(call.outcome),
      });
    }
  }
  return { run, violations, executed };
}

/** A sequence's steps in words: what each call carried, and what ran for it, in which launch under whose state. */
export function storyOf(outcome: SequenceOutcome): CounterexampleStep[] {
  const { run } = outcome;
  const seq = run.value;
  if (!seq) return [];
  const callByIndex = new Map(run.calls.map((c) => [c.index, c]));
  const broken = new Set(outcome.violations.map((v) => v.call));
  return seq.steps.map((step, i) => {
    // A repeated call is told once: its first and last calls, and any call that broke the contract.
    const told = step.repeated ? step.calls.filter((c, k) => k === 0 || k === step.calls.length - 1 || broken.has(c.index)) : step.calls;
    const authority = step.repeated
      ? step.calls.length
        ? [`calls #${step.calls[0]!.index} to #${step.calls.at(-1)!.index}, each: ${step.calls[0]!.authority}`]
        : []
      : step.calls.map((c) => c.authority);
    return {
      n: i + 1,
      action: `${step.action}${commandOf(told.map(({ index }) => callByIndex.get(index)))}`,
      authority,
      ran: told.flatMap(({ index }) => {
        const call = callByIndex.get(index);
        return call ? whatRan(seq, call, run.observations) : [];
      }),
      response: told.map(({ index }) => {
        const outcome = callByIndex.get(index)?.outcome;
        return `call #${index}: ${outcome ? responseText(outcome) : '(no answer)'}`;
      }),
      ...(step.atMs !== undefined ? { atMs: step.atMs } : {}),
    };
  });
}

/** The command a step's calls asked for, as " (command, <form>: <text>)" with the nonce as <nonce> (a replay reads the same). */
function commandOf(calls: (MonitoredCall | undefined)[]): string {
  const call = calls.find((c) => c?.command);
  if (!call?.command) return '';
  return commandLabel({ ...call.command, text: call.nonce ? call.command.text.split(call.nonce).join('<nonce>') : call.command.text });
}

function responseText(outcome: RawOutcome): string {
  if (outcome.kind !== 'result') return describeOutcome(outcome);
  const text = JSON.stringify(summarizeOutcome(outcome));
  return `${isRefusal(outcome) ? 'refused' : 'succeeded'}: ${text.length > 160 ? `${text.slice(0, 160)}…` : text}`;
}

function whatRan(seq: Sequence, call: MonitoredCall, observations: Observations): string[] {
  if (!call.nonce) return [];
  const launches = new Map(observations.launches.map((l) => [l.id, l]));
  const lines: string[] = [];
  const describeLaunch = (id: string) => {
    const launch = launches.get(id);
    if (!launch) return `outside any launch (${id ? `unknown launch ${id}` : 'no sandbox'})`;
    const parsed = parseLaunchArgv(launch.argv);
    const json = parsed.stateArguments.length === 1 ? parseJson(parsed.stateArguments[0]!) : undefined;
    const forwarded = json?.ok ? json.value : undefined;
    const owner = seq.statesSent.find((s) => isDeepStrictEqual(s.state, forwarded));
    return `inside launch ${launch.id} of launcher ${launch.launcher} with ${owner ? `the state of ${owner.label}` : forwarded === undefined ? 'no readable state' : 'a state no call sent'}`;
  };
  for (const probe of probeRunsOf(observations, call.nonce)) lines.push(`call #${call.index}: the command ran ${describeLaunch(probe.launchId)}`);
  if (lines.length === 0) {
    const launched = observations.launches.filter((l) => carriesNonce(l.argv, call.nonce!));
    for (const launch of launched) lines.push(`call #${call.index}: handed to ${describeLaunch(launch.id)} (the command itself left no record)`);
  }
  return lines.length ? lines : [`call #${call.index}: nothing ran`];
}

// ---- the exploration ----

interface WorkerResult {
  seed: number;
  sequences: number;
  shrinks: number;
  executed: number;
  failure?: SequenceOutcome;
  path?: string;
  infrastructure?: string;
}

interface Exploration {
  deadline?: number;
  /** Set once any worker found a failure or hit a wall: the others stop starting sequences. */
  stopped: boolean;
  /** Set when no sequence has executed anything and the control shows none will (ControlFacts.blocker): the verdict. */
  blocked?: Verdict;
  /** How many sequences have executed anything, over every worker. */
  executed(): number;
  tick(): void;
}

/**
 * After a sequence, over stdio: when no sequence so far executed anything and the control's call
 * shows that nothing will (it was rejected, or executed nothing at all), further sequences would
 * start servers for nothing.
 */
async function stopWhenBlocked(ctx: ScenarioContext, shared: Exploration): Promise<void> {
  if (ctx.transport !== 'stdio' || shared.executed() > 0 || shared.blocked) return;
  const { blocker } = await ctx.control();
  if (!blocker || shared.executed() > 0) return;
  shared.blocked = blocker;
  shared.stopped = true;
}

/** One fast-check run of `runs` sequences from `result.seed`, filling in `result` as it goes. */
async function exploreWorker(
  ctx: ScenarioContext,
  result: WorkerResult,
  runs: number,
  shared: Exploration,
  replay?: { path: string; commands?: string },
): Promise<void> {
  const seed = result.seed;
  const budget: Budget = { idleMs: IDLE_PER_SEQUENCE_MS * runs, calls: REPEATS_PER_SEQUENCE * runs };
  const property = fc.asyncProperty(commandArbitrary(ctx, replay?.commands), async (commands) => {
    if (result.infrastructure || (shared.stopped && !result.failure)) return true;
    if (result.failure && result.shrinks >= MAX_SHRINK_RUNS) return true;
    let outcome: SequenceOutcome;
    try {
      // Shrinking and replaying are not held to the budget: the failure's own idle steps and repeats must run.
      outcome = await runSequence(ctx, commands, result.failure || replay ? undefined : budget, !replay);
    } catch (error) {
      result.infrastructure = (error as Error).message;
      shared.stopped = true;
      return true;
    }
    if (outcome.run.error && outcome.violations.length === 0) {
      // A step that threw (a connection that died, a timeout) without any violation: not the server's fault we can name.
      result.infrastructure ??= `a sequence could not finish: ${(outcome.run.error as Error).message ?? String(outcome.run.error)}`;
      shared.stopped = true;
      return true;
    }
    if (result.failure) result.shrinks++;
    else {
      result.sequences++;
      result.executed += outcome.executed;
    }
    shared.tick();
    if (outcome.violations.length === 0) {
      await stopWhenBlocked(ctx, shared);
      return true;
    }
    shared.stopped = true;
    result.failure = outcome;
    return false;
  });
  const remaining = shared.deadline === undefined ? undefined : Math.max(1, shared.deadline - Date.now());
  const details = await fc.check(property, {
    seed,
    numRuns: runs,
    ...(replay ? { path: replay.path, endOnFailure: true } : {}),
    ...(remaining !== undefined ? { interruptAfterTimeLimit: remaining } : {}),
  });
  if (details.failed) {
    // fast-check prints the commands' own replay record with the counterexample: /*replayPath="…"*/.
    const commands = /replayPath="([^"]*)"/.exec(String(details.counterexample?.[0] ?? ''))?.[1];
    result.path = `${details.counterexamplePath ?? ''}${commands ? `@${commands}` : ''}`;
  }
}

/** How many sequences a run of `options` makes on `transport`: over HTTP nothing may ever run, so every step is judged the same way: a third of the budget. */
const sequencesOn = (transport: Transport, options: ExploreOptions): number => (transport === 'http' ? Math.max(1, Math.ceil(options.runs / 3)) : options.runs);

/** Explores with `options` and decides the check. */
export async function explore(ctx: ScenarioContext, options: ExploreOptions): Promise<Verdict> {
  options = { ...options, runs: sequencesOn(ctx.transport, options) };
  const deadline = options.timeMs !== undefined ? Date.now() + options.timeMs : undefined;
  const replay = options.replay;
  const plans = replay
    ? [{ seed: replay.seed, runs: 1, path: replay.path }]
    : Array.from({ length: Math.min(WORKERS, options.runs) }, (_, k) => ({
        seed: (options.seed + k) | 0,
        runs: Math.floor(options.runs / WORKERS) + (k < options.runs % WORKERS ? 1 : 0),
        path: undefined,
      }));
  const results: WorkerResult[] = [];
  const shared: Exploration = {
    deadline,
    stopped: false,
    executed: () => results.reduce((n, r) => n + r.executed, 0),
    tick: () => {
      const run = results.reduce((n, r) => n + r.sequences, 0);
      const shrinking = results.reduce((n, r) => n + r.shrinks, 0);
      ctx.progress(shrinking ? `shrinking a failure: ${shrinking} reruns` : `${run}/${options.runs} sequences`);
    },
  };
  results.push(...plans.map((p) => ({ seed: p.seed, sequences: 0, shrinks: 0, executed: 0 })));
  const replayOf = (path: string | undefined) => {
    if (path === undefined) return undefined;
    const at = path.indexOf('@');
    return at < 0 ? { path } : { path: path.slice(0, at), commands: path.slice(at + 1) };
  };
  await Promise.all(plans.map((p, k) => exploreWorker(ctx, results[k]!, p.runs, shared, replayOf(p.path))));
  const sequences = results.reduce((n, r) => n + r.sequences, 0);
  const executed = results.reduce((n, r) => n + r.executed, 0);
  const failed = results.find((r) => r.failure);
  if (failed?.failure) return failure(failed, failed.failure);
  if (shared.blocked && !replay) {
    ctx.startsSaved(options.runs - sequences);
    return shared.blocked;
  }
  const broken = results.find((r) => r.infrastructure);
  if (broken) return { status: 'error', message: `exploration stopped after ${sequences} sequence${sequences === 1 ? '' : 's'}: ${broken.infrastructure}` };
  if (sequences === 0) return couldNotRun('the exploration budget ran out before any sequence ran');
  // Over stdio the valid calls must have run something for the sequences to say anything; over HTTP nothing may run.
  if (executed === 0 && ctx.transport === 'stdio')
    return couldNotRun(`${sequences} sequence${sequences === 1 ? '' : 's'} ran, but no call with valid authority executed anything, so nothing was judged`);
  const seeds = results.map((r) => r.seed).join(', ');
  return pass(
    replay
      ? `the replayed sequence (${replay.seed}:${replay.path}) held the contract`
      : `${sequences} sequence${sequences === 1 ? '' : 's'} of up to ${MAX_STEPS} steps (seed${results.length === 1 ? '' : 's'} ${seeds}) held the contract; ${executed} executions judged`,
  );
}

/** A failing sequence as the reports show it (host exploration's too): its replay token, how it was found, its story, what it broke. */
export function counterexampleOf(
  worker: { seed: number; path?: string; sequences: number; shrinks: number },
  steps: CounterexampleStep[],
  broken: Counterexample['broken'],
): Counterexample {
  const path = worker.path ?? '';
  return { replay: `${worker.seed}:${path}`, seed: worker.seed, path, sequencesRun: worker.sequences, shrinks: worker.shrinks, steps, broken };
}

function failure(worker: WorkerResult, outcome: SequenceOutcome): Verdict {
  const steps = storyOf(outcome);
  const first = outcome.violations[0]!;
  const counterexample = counterexampleOf(
    worker,
    steps,
    outcome.violations.map((v) => ({ rule: v.check.rule, check: v.check.id, message: v.message })),
  );
  const rules = [...new Set(counterexample.broken.map((b) => `${b.rule} (${b.check})`))];
  return fail(`a sequence of ${steps.length} step${steps.length === 1 ? '' : 's'} broke ${rules.join(', ')}: ${first.message}`, {
    expected: first.expected,
    actual: first.actual,
    diff: [...(first.diff ?? []), ...outcome.violations.slice(1, 6).map((v) => `! ${v.message}`)],
    counterexample,
  });
}

export const exploreScenario: Scenario = {
  id: 'explore/sequences',
  title: 'random call sequences, each on a fresh server, shrunk to the smallest that breaks the contract',
  checks: [sequencesHoldContract],
  needs: ['exec', 'opt-in'],
  transports: ['stdio', 'http'],
  long: true,
  // Its sequences draw every form of authority: one the control's call did not use may launch.
  ownCallForms: true,
  // Its calls go to fresh servers of its own; it reads the tools and the opt-in from the shared one's greeting.
  shares: 'handshake',
  // A sequence's servers are fresh; a replay makes one run, plus its shrinking if it fails.
  isolatedRuns: (options, transport) =>
    !options.explore || options.explore.runs <= 0 ? 0 : options.explore.replay ? 1 : sequencesOn(transport, options.explore),
  // A budget in time is the exploration's own bound (shrinking included); a budget in sequences has only the run timeout.
  timeoutMs: (options, base) => (options.explore?.timeMs !== undefined ? base + options.explore.timeMs + SHRINK_ALLOWANCE_MS : Number.MAX_SAFE_INTEGER),
  run: async (ctx) => {
    const options = ctx.options.explore;
    const verdict = !options || options.runs <= 0 ? notApplicable('exploration is turned off', 'explore-off') : await explore(ctx, options);
    return new Map([[sequencesHoldContract.id, verdict]]);
  },
};

/** The scenarios of this area, in report order (suites/index.ts lists the areas). */
export const exploreScenarios: Scenario[] = [exploreScenario];
