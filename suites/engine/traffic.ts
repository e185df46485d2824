import * as fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { codexState, STATE_PROFILES, type SandboxEntries, type StateProfile } from '../../harness/codex-wire.js';
import { takesProperties, type ExecAdapter, type SessionAdapter } from '../../harness/exec-adapter.js';
import { describeOutcome, isRefusal, type RawOutcome } from '../../harness/codex-session.js';
import type { Observations } from '../../harness/observers.js';
import { isObject } from '../../harness/json.js';
import { smuggledAuthority } from '../server/authority.js';
import { commandKit, grammarProbe, GRAMMAR, type SlowForm } from '../server/commands.js';
import { plantRelativeTraps } from '../server/launcher.js';
import { awaitProbeRuns, carriesNonce, commandLabel, parseLaunchArgv, parseJson, probeRunsOf, summarizeOutcome } from './judge.js';
import type { CheckDef, CounterexampleStep, ExploreOptions, Finding, IsolatedContext, IsolatedRun, MonitoredCall, ProbeOptions } from './model.js';
import { seconds } from './suite-run.js';
import { argumentChoices, openSession, sendToSession } from './tool-calls.js';

/**
 * The call traffic of exploration, the resident server and the soak: one Traffic per server,
 * holding the contract's model (the authority Codex would send now, changed one dimension at a
 * time; what each call permits follows from what it sent) and sending every call through `send`,
 * which keeps the books (the state noted, the call numbered, the step's record) and calls through
 * the one seam that builds a call's arguments (execProbe, tool-calls.ts). The steps below only
 * choose what to send and say it in words; the drivers (explore.ts, lifetime.ts) choose the steps.
 */

/** Default budget of exploration: reproducible (fixed seed) and small enough for the default wall time; the soak's seed too. */
export const EXPLORE_DEFAULTS: ExploreOptions = { runs: 2, seed: 20261201 };
/** How long an idle step waits: up to several seconds; shrinking shortens it to the shortest that still fails. */
export const IDLE_STEPS_MS = [250, 1000, 2500, 5000] as const;
/** A server's traffic makes at most this many calls through repeated steps (a repeat stops there). */
const MAX_CALLS = 40;
/** One command shape in EXTRA_SHARE goes to one of the other exec tools (by the shape: a shrunk or replayed step keeps its tool). */
const EXTRA_SHARE = 4;

/** A finding breaks the traffic unless it is charged to a SHOULD or INFO check. */
export const isMust = (finding: Finding): boolean => finding.check.level === 'MUST';

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

export type Change = 'none' | 'policy' | 'workspace' | 'variant' | 'launcher' | 'keys';
export const BAD = [
  'launcher-absent',
  'launcher-string',
  'launcher-relative',
  'launcher-missing',
  'launcher-not-executable',
  'launcher-broken',
  'state-absent',
  'state-not-object',
] as const;
export type BadAuthority = (typeof BAD)[number];

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

/** How a step names a change before its call: '' for none. */
const afterChanging = (change: Change) => (change === 'none' ? '' : ` after changing ${change === 'variant' ? 'an unknown field' : change}`);

/** The check a call of each kind is made for: findings the monitor does not charge to a rule's check go there. */
export interface CallChecks {
  valid: string;
  refused: string;
  broken: string;
  relative: string;
  notExecutable: string;
  smuggled: string;
  /** A session sent a call whose launcher, or else whose state, differs from the one it was opened under. */
  sessionLauncher: string;
  sessionState: string;
}

/** Every kind of call charged to one check (exploration's, the soak's). */
export const chargedTo = (check: string): CallChecks => ({
  valid: check,
  refused: check,
  broken: check,
  relative: check,
  notExecutable: check,
  smuggled: check,
  sessionLauncher: check,
  sessionState: check,
});

/** What the users of Traffic vary, fixed when it is made. */
export interface TrafficOptions {
  /** The check each kind of call is made for (exploration: its own; the resident: the rules' checks). */
  checks: CallChecks;
  /** Waits without holding a job slot (the soak's never runs past its end). */
  idle: (ms: number) => Promise<void>;
  /** Waits without holding a job slot, for as long as asked: for the time of a slow command answered early (settle). Default: idle. */
  linger?: (ms: number) => Promise<void>;
  /** Stop after the first step whose calls broke a MUST rule (exploration; the resident and the soak go on). */
  stopWhenBroken: boolean;
  /** The server's other exec tools: a share of the valid single calls goes to them (exploration, the soak). */
  extraTools: readonly ExecAdapter[];
  /** The session pairs (the operator's adapter, else every pair detected), for the session steps. */
  sessionAdapters: readonly SessionAdapter[];
}

/** What one step did, for the story: its text, its calls and the authority each carried, when it began. */
interface StepRecord {
  n: number;
  action: string;
  calls: { index: number; authority: string }[];
  atMs?: number;
  repeated?: boolean;
}

/** One call of a step: with valid authority (the current one unless given), or missing or malformed authority. */
export type Call =
  | {
      kind: 'valid';
      authority?: Authority;
      /** Shape 0 is the plain probe; shape k the command grammar's entry k - 1 (a form at a size). */
      shape?: number;
      /** Another exec tool than the primary (extraToolFor). */
      tool?: ExecAdapter;
      smuggle?: boolean;
      /** Over HTTP, a launcher sent anyway, as a misconfigured proxy might. */
      launcherOverHttp?: boolean;
      /** In flight with the step's other calls (a burst). */
      concurrent?: boolean;
      /** Which of the tool's argument choices (argumentChoices: optional values, a code tool's language) the call sets, modulo their count. */
      choice?: number;
      /** A command that takes seconds (SLOW_FORMS), and how many, instead of the shape's. */
      slow?: { form: SlowForm; ms: number };
    }
  | { kind: 'bad'; bad: BadAuthority };

/** A session opened through a session pair: the step that opened it, under which authority, and how many calls were sent to it. */
interface OpenSession {
  id: string;
  step: number;
  pair: SessionAdapter;
  authority: Authority;
  sends: number;
}

/** The traffic on one server: the model, the books, and every call it sent. */
export class Traffic {
  private current: Authority = INITIAL;
  private readonly steps: StepRecord[] = [];
  /** Each state sent, with the step that first sent it, to say whose state a launch carried. */
  private readonly statesSent: { state: Record<string, unknown>; label: string }[] = [];
  /** Calls sent so far: the monitor numbers them in the order they are sent, from 1. */
  private sent = 0;
  private readonly sessions: OpenSession[] = [];
  /** Nonces sent to sessions that accepted them: their commands may run a moment later. */
  private readonly sessionNonces: string[] = [];
  /**
   * Until when a slow command answered before its time could still be running (0: none): one run in
   * the background, or killed at a timeout. settle() keeps the server until then.
   */
  private slowUntil = 0;
  /** Calls sent without waiting for their answer (beside): settle() waits for them. */
  private readonly inFlight: Promise<void>[] = [];
  /** Work run one piece after another beside the other calls (inOrderBeside): settle() waits for it. */
  private besideChain: Promise<void> = Promise.resolve();
  private resourceUri?: string | null;
  /** The numbers of the calls sent to the other exec tools (judged by what ran: they may take code, not shell). */
  private readonly extraCalls = new Set<number>();
  /** Whether the exec tool's arguments are an object, so that authority can be smuggled into them. */
  readonly smuggles: boolean;

  private constructor(
    private readonly sub: IsolatedContext,
    private readonly options: TrafficOptions,
    private readonly workspaces: [string, string],
    private readonly launchers: { a: string; b: string },
  ) {
    this.smuggles = takesProperties(sub.exec?.arguments);
  }

  /** Traffic on `sub`'s server, before its first step. */
  static async on(sub: IsolatedContext, options: TrafficOptions): Promise<Traffic> {
    const workspaces: [string, string] = [sub.observers.workspaceDir, await sub.observers.workspaceVariant('w1')];
    const b = sub.transport === 'stdio' ? await sub.observers.secondLauncher() : sub.observers.launcherPath;
    return new Traffic(sub, options, workspaces, { a: sub.observers.launcherPath, b });
  }

  /** Calls sent so far. */
  get calls(): number {
    return this.sent;
  }

  /** Changes one dimension of the current authority. */
  move(change: Change, pick: number): void {
    this.current = changed(this.current, change, pick);
  }

  /** The authorities of a burst: the current one, then one per change (a change of key form comes with one of an unknown field, so that they differ). */
  burst(changes: readonly Change[]): Authority[] {
    const current = this.current;
    return [current, ...changes.map((c, i) => (c === 'keys' ? changed(changed(current, 'keys', i), 'variant', 0) : changed(current, c, i)))];
  }

  /** The exec tool a valid call of command shape `shape` goes to: one of the other exec tools for one shape in EXTRA_SHARE, else the primary (undefined). */
  extraToolFor(shape: number): ExecAdapter | undefined {
    const extra = this.options.extraTools;
    if (extra.length === 0 || shape % EXTRA_SHARE !== EXTRA_SHARE - 1) return undefined;
    return extra[Math.floor(shape / EXTRA_SHARE) % extra.length];
  }

  /** How many more calls a repeated step may make (MAX_CALLS over the whole traffic). */
  callsLeft(count: number): number {
    return Math.max(0, Math.min(count, MAX_CALLS - this.sent));
  }

  /** Begins a step's record: its text says what the host did. */
  begin(action: string, repeated = false): StepRecord {
    const step: StepRecord = { n: this.steps.length + 1, action, calls: [], ...(repeated ? { repeated } : {}) };
    this.steps.push(step);
    return step;
  }

  /**
   * Runs one step (`act`), noting when it began (since the server started) on the records it made;
   * true when the traffic stops here (stopWhenBroken, and a MUST rule is broken by now).
   */
  async take(act: () => Promise<void>): Promise<boolean> {
    const atMs = Date.now() - this.sub.serverStartedAt;
    const before = this.steps.length;
    try {
      await act();
    } finally {
      for (const step of this.steps.slice(before)) step.atMs ??= atMs;
    }
    return this.options.stopWhenBroken && (await this.sub.findingsSoFar()).some(isMust);
  }

  /**
   * Sends one call of `step`: its authority's entries (the state noted, for a valid one), its
   * number and record, then the call itself, charged to the check of its kind. A concurrent call
   * is registered before the first wait, so that the calls of a burst go out at once, in order.
   */
  async send(step: StepRecord, call: Call): Promise<void> {
    if (call.kind === 'bad') return this.sendBad(step, call.bad);
    const authority = call.authority ?? this.current;
    const state = this.stateOf(authority);
    const entries = this.entriesOf(authority, state);
    const http = this.sub.transport === 'http';
    if (http && call.launcherOverHttp) entries.launcher = { codexExecutable: this.launchers.a };
    this.noteState(state, call.concurrent ? `step ${step.n} call ${step.calls.length + 1}` : `step ${step.n}`);
    const smuggled = call.smuggle && this.smuggles ? await this.smuggledArguments() : undefined;
    const index = this.number(
      step,
      describeAuthority(authority),
      call.concurrent || step.repeated || !http ? '' : entries.launcher ? ' (a launcher in _meta over HTTP)' : ' (over HTTP)',
    );
    if (call.tool) this.extraCalls.add(index);
    const choices = argumentChoices(call.tool ?? this.sub.exec!, 'all');
    const choice = choices[(call.choice ?? 0) % choices.length]!.values;
    const options: ProbeOptions = { check: this.options.checks.valid, ...(call.concurrent ? { concurrent: true } : {}), ...smuggled, ...choice };
    if (!call.shape && !call.tool && !smuggled && !call.slow) {
      await this.sub.execProbe(entries, options);
      return;
    }
    const entry = call.slow ? { ...call.slow, size: '100 B' as const } : call.shape ? GRAMMAR[(call.shape - 1) % GRAMMAR.length] : undefined;
    // A slow command's findings name the tool too, primary or not: what reruns a slow command is that tool's watchdog.
    const adapter = call.tool ?? (call.slow ? this.sub.exec : undefined);
    const sentAt = Date.now();
    await grammarProbe(this.sub, entry, entries, { ...options, ...(adapter ? { adapter } : {}) });
    // Answered before its command could have ended (over stdio, where it may run): what the server does with it meanwhile counts too.
    if (call.slow && !http && Date.now() < sentAt + call.slow.ms) this.slowUntil = Math.max(this.slowUntil, sentAt + call.slow.ms);
  }

  /**
   * Sends a call without waiting for its answer: the next steps go on beside it, and settle()
   * waits for it. It is registered with the monitor before this returns, so that the calls keep the
   * numbers they were given here.
   */
  async beside(step: StepRecord, call: Call): Promise<void> {
    // Made before the call: from here to its registration the call waits on nothing but microtasks.
    await commandKit(this.sub.observers);
    const sent = this.send(step, call);
    // settle() rethrows its error; until then it must not count as unhandled.
    sent.catch(() => undefined);
    this.inFlight.push(sent);
    await new Promise((resolve) => setImmediate(resolve));
  }

  /** Runs `work` beside the other calls, after the work given before it (their calls stay in order); settle() waits for it. */
  inOrderBeside(work: () => Promise<void>): void {
    this.besideChain = this.besideChain.then(work);
    this.besideChain.catch(() => undefined);
  }

  /** A call whose authority is missing or malformed in one way: it must run nothing. */
  private async sendBad(step: StepRecord, bad: BadAuthority): Promise<void> {
    const { sub } = this;
    const checks = this.options.checks;
    const entries = this.entriesOf(this.current);
    const workspace = this.workspaces[this.current.workspace];
    switch (bad) {
      case 'launcher-absent':
        entries.launcher = undefined;
        break;
      case 'launcher-string':
        entries.launcher = this.launchers.a;
        break;
      case 'launcher-relative':
        await plantRelativeTraps(sub, workspace, checks.relative);
        entries.launcher = { codexExecutable: 'codex' };
        break;
      case 'launcher-missing':
        entries.launcher = { codexExecutable: sub.observers.missingLauncherPath() };
        break;
      case 'launcher-not-executable':
        entries.launcher = { codexExecutable: await sub.plantTrap('not-executable', { executable: false }, checks.notExecutable) };
        break;
      case 'launcher-broken':
        entries.launcher = { codexExecutable: await sub.observers.brokenLauncher() };
        break;
      case 'state-absent':
        entries.state = entries.stateDeprecated = undefined;
        break;
      case 'state-not-object':
        entries.state = entries.stateDeprecated = JSON.stringify(this.stateOf(this.current));
        break;
    }
    // Over HTTP every call is one to refuse; keep the launcher away as Codex does.
    if (sub.transport === 'http' && bad !== 'launcher-string') entries.launcher = undefined;
    const broken = bad === 'launcher-broken';
    this.number(step, `${bad.replace('-', ' ')} (otherwise ${describeAuthority(this.current)})`);
    await sub.execProbe(entries, { check: broken ? checks.broken : checks.refused, expect: broken && sub.transport !== 'http' ? 'attempt' : 'refuse' });
  }

  /** Session pair `pair`, modulo their count. */
  sessionPair(pair: number): SessionAdapter {
    return this.options.sessionAdapters[pair % this.options.sessionAdapters.length]!;
  }

  /** Opens a session on session pair `pair` (modulo their count) under the current authority. */
  async openSession(step: StepRecord, pair: number): Promise<void> {
    const adapter = this.sessionPair(pair);
    // Read once: the other calls may change the current authority while the open is in flight.
    const authority = this.current;
    const state = this.stateOf(authority);
    this.number(step, describeAuthority(authority));
    this.noteState(state, `step ${step.n}`);
    const entries = this.entriesOf(authority, state);
    const { id } = await openSession(this.sub, adapter, entries, { check: this.options.checks.valid });
    if (id !== undefined) this.sessions.push({ id, step: step.n, pair: adapter, authority, sends: 0 });
  }

  /** The session `which` picks among those open, if any. */
  session(which: number): OpenSession | undefined {
    return this.sessions[which % Math.max(1, this.sessions.length)];
  }

  /** The sessions open, in the order they were opened. */
  get openSessions(): readonly OpenSession[] {
    return this.sessions;
  }

  /**
   * Sends the probe to an open session: under the current authority, or (`change`) under the
   * session's own with one dimension changed. It must run in the session under that authority, or
   * be refused; a run in the session's launch under a changed launcher or state is charged to the
   * session checks.
   */
  async sendToSession(step: StepRecord, session: OpenSession, change?: Change): Promise<void> {
    const authority = change === undefined ? this.current : changed(session.authority, change, 0);
    const state = this.stateOf(authority);
    this.noteState(state, `step ${step.n}`);
    this.number(step, describeAuthority(authority));
    const entries = this.entriesOf(authority, state);
    const { checks } = this.options;
    const check =
      authority.launcher !== session.authority.launcher
        ? checks.sessionLauncher
        : isDeepStrictEqual(state, this.stateOf(session.authority))
          ? undefined
          : checks.sessionState;
    session.sends++;
    const { nonce, outcome } = await sendToSession(this.sub, session.pair, session.id, entries, {
      check: checks.valid,
      ...(check ? { authorityCheck: check } : {}),
    });
    if (outcome.kind === 'result' && !isRefusal(outcome)) this.sessionNonces.push(nonce);
  }

  /** tools/list again, or a resource read (the first resource listed): the server's state may be disturbed by them. */
  async other(what: 'relist' | 'read-resource'): Promise<void> {
    const session = this.sub.session;
    if (what === 'relist') {
      await session.request('tools/list', {}, 10_000);
      return;
    }
    if (this.resourceUri === undefined) {
      const listed = await session.request('resources/list', {}, 10_000);
      const resources = 'result' in listed && isObject(listed.result) && Array.isArray(listed.result.resources) ? listed.result.resources : [];
      const first = resources.find((r) => isObject(r) && typeof r.uri === 'string') as { uri: string } | undefined;
      this.resourceUri = first?.uri ?? null;
    }
    if (this.resourceUri) await session.readResource(this.resourceUri, undefined, 10_000);
  }

  idle(ms: number): Promise<void> {
    return this.options.idle(ms);
  }

  /**
   * Waits for the calls sent beside the others, and for the time of every slow command answered
   * before it was up (a server that runs it in the background, or killed it at a timeout, may still
   * start something for it: a watchdog's rerun elsewhere); a session runs what it accepted
   * asynchronously: gives those commands a moment before the server stops.
   */
  async settle(): Promise<void> {
    await this.besideChain;
    await Promise.all(this.inFlight.splice(0));
    const left = this.slowUntil - Date.now();
    if (left > 0) await (this.options.linger ?? this.options.idle)(left);
    if (this.sessionNonces.length > 0) await awaitProbeRuns(this.sub, this.sessionNonces);
  }

  /** Whether call `index` went to another exec tool than the primary. */
  wentToExtraTool(index: number): boolean {
    return this.extraCalls.has(index);
  }

  /** Numbers the next call and records it on its step. */
  private number(step: StepRecord, authority: string, suffix = ''): number {
    const index = ++this.sent;
    step.calls.push({ index, authority: `${authority}${suffix}` });
    return index;
  }

  /** The state Codex would send for the authority's policy and workspace (canaries included). */
  private stateOf(a: Authority): Record<string, unknown> {
    const linuxSandboxExe = String(this.sub.state.codexLinuxSandboxExe);
    const state = codexState(a.policy, this.workspaces[a.workspace], { linuxSandboxExe });
    if (a.variant === 1) state.conformanceVariant = { changedBy: 'exploration', list: [] };
    return state;
  }

  private entriesOf(a: Authority, state = this.stateOf(a)): SandboxEntries {
    const entries = this.sub.codexEntries(state);
    if (this.sub.transport === 'stdio' && a.launcher === 'b') entries.launcher = { codexExecutable: this.launchers.b };
    if (a.keys === 'current') entries.stateDeprecated = undefined;
    if (a.keys === 'deprecated') entries.state = undefined;
    return entries;
  }

  private noteState(state: Record<string, unknown>, label: string): void {
    if (!this.statesSent.some((s) => isDeepStrictEqual(s.state, state))) this.statesSent.push({ state, label });
  }

  /** Authority smuggled in the arguments (AUTH-1): a trap launcher, and a state with sandboxing disabled. */
  private async smuggledArguments() {
    const trap = await this.sub.plantTrap('launcher-in-arguments', {}, this.options.checks.smuggled);
    const sandboxCwd = pathToFileURL(join(this.workspaces[0], 'from-arguments')).href;
    return smuggledAuthority(trap, { ...this.sub.state, permissionProfile: { type: 'disabled' }, sandboxCwd });
  }

  /** The steps in words: what each call carried, and what ran for it, in which launch under whose state. */
  story(outcome: TrafficOutcome): CounterexampleStep[] {
    const { run } = outcome;
    const callByIndex = new Map(run.calls.map((c) => [c.index, c]));
    const broken = new Set(outcome.violations.map((v) => v.call));
    return this.steps.map((step) => {
      // A repeated call is told once: its first and last calls, and any call that broke the contract.
      const told = step.repeated ? step.calls.filter((c, k) => k === 0 || k === step.calls.length - 1 || broken.has(c.index)) : step.calls;
      const first = step.calls[0];
      const authority = !step.repeated
        ? step.calls.map((c) => c.authority)
        : first
          ? [`calls #${first.index} to #${step.calls.at(-1)!.index}, each: ${first.authority}`]
          : [];
      const calls = told.map(({ index }) => ({ index, call: callByIndex.get(index) }));
      return {
        n: step.n,
        action: `${step.action}${commandOf(calls.map((c) => c.call))}`,
        authority,
        ran: calls.flatMap(({ call }) => (call ? this.whatRan(call, run.observations) : [])),
        response: calls.map(({ index, call }) => `call #${index}: ${call?.outcome ? responseText(call.outcome) : '(no answer)'}`),
        ...(step.atMs !== undefined ? { atMs: step.atMs } : {}),
      };
    });
  }

  private whatRan(call: MonitoredCall, observations: Observations): string[] {
    if (!call.nonce) return [];
    const launches = new Map(observations.launches.map((l) => [l.id, l]));
    const describeLaunch = (id: string) => {
      const launch = launches.get(id);
      if (!launch) return `outside any launch (${id ? `unknown launch ${id}` : 'no sandbox'})`;
      const parsed = parseLaunchArgv(launch.argv);
      const json = parsed.stateArguments.length === 1 ? parseJson(parsed.stateArguments[0]!) : undefined;
      const forwarded = json?.ok ? json.value : undefined;
      const owner = this.statesSent.find((s) => isDeepStrictEqual(s.state, forwarded));
      return `inside launch ${launch.id} of launcher ${launch.launcher} with ${owner ? `the state of ${owner.label}` : forwarded === undefined ? 'no readable state' : 'a state no call sent'}`;
    };
    const lines = probeRunsOf(observations, call.nonce).map((probe) => `call #${call.index}: the command ran ${describeLaunch(probe.launchId)}`);
    if (lines.length === 0) {
      const launched = observations.launches.filter((l) => carriesNonce(l.argv, call.nonce!));
      for (const launch of launched) lines.push(`call #${call.index}: handed to ${describeLaunch(launch.id)} (the command itself left no record)`);
    }
    return lines.length ? lines : [`call #${call.index}: nothing ran`];
  }
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

// ---- the steps: each chooses what to send, and says it ----

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

export abstract class Step implements fc.AsyncCommand<Model, Traffic> {
  check(model: Readonly<Model>): boolean {
    return !model.stopped; // the contract holds after any history; once broken, the rest of the sequence proves nothing more
  }
  async run(model: Model, traffic: Traffic): Promise<void> {
    model.steps++;
    // fast-check drops steps that did not run when it shrinks: a broken sequence stops where it broke.
    if (await traffic.take(() => this.act(model, traffic))) model.stopped = true;
  }
  abstract act(model: Model, traffic: Traffic): Promise<void>;
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
  async act(_model: Model, traffic: Traffic): Promise<void> {
    traffic.move(this.change, this.pick);
    const tool = traffic.extraToolFor(this.shape);
    const smuggle = this.smuggle && traffic.smuggles;
    const step = traffic.begin(
      `exec${tool ? ` to tool ${JSON.stringify(tool.tool)}` : ''}${afterChanging(this.change)}${smuggle ? ', with authority smuggled in the arguments' : ''}`,
    );
    // The tool's argument choice follows from the draws already made (a new draw would change every seeded sequence).
    const choice = this.shape * 3 + this.pick;
    await traffic.send(step, { kind: 'valid', shape: this.shape, smuggle, launcherOverHttp: this.launcherOverHttp, choice, ...(tool ? { tool } : {}) });
  }
  toString(): string {
    return `Exec(${this.change}${this.change === 'keys' || this.change === 'policy' ? `:${this.pick}` : ''}, shape ${this.shape}${this.smuggle ? ', smuggle' : ''}${this.launcherOverHttp ? ', launcher over http' : ''})`;
  }
}

/** A command that takes `ms` (SLOW_FORMS) under the current authority, left running beside the next steps (Traffic.beside). */
export class SlowExec extends Step {
  constructor(
    readonly form: SlowForm,
    readonly ms: number,
  ) {
    super();
  }
  async act(_model: Model, traffic: Traffic): Promise<void> {
    const step = traffic.begin(`exec a slow command (${seconds(this.ms)}), left running beside the next steps`);
    await traffic.beside(step, { kind: 'valid', slow: { form: this.form, ms: this.ms }, concurrent: true });
  }
  toString(): string {
    return `SlowExec(${this.form}, ${this.ms} ms)`;
  }
}

/** A call whose authority is missing or malformed in one way: it must run nothing. */
export class Refused extends Step {
  constructor(readonly bad: BadAuthority) {
    super();
  }
  async act(_model: Model, traffic: Traffic): Promise<void> {
    await traffic.send(traffic.begin(`call with ${this.bad.replace('-', ' ')}`), { kind: 'bad', bad: this.bad });
  }
  toString(): string {
    return `Refused(${this.bad})`;
  }
}

/** Calls in flight at once, each with authority of its own (Traffic.burst), sent at once or `delayMs` apart. */
export class Burst extends Step {
  constructor(
    readonly changes: Change[],
    readonly delayMs = 0,
  ) {
    super();
  }
  async act(_model: Model, traffic: Traffic): Promise<void> {
    const authorities = traffic.burst(this.changes);
    const step = traffic.begin(`${authorities.length} calls at once${this.delayMs ? `, ${this.delayMs} ms apart` : ''}`);
    const calls: Promise<void>[] = [];
    for (const [i, authority] of authorities.entries()) {
      if (i > 0 && this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      calls.push(traffic.send(step, { kind: 'valid', authority, concurrent: true }));
    }
    await Promise.all(calls);
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
  async act(model: Model, traffic: Traffic): Promise<void> {
    if (model.budget) model.budget.idleMs -= this.ms;
    traffic.begin(`idle for ${seconds(this.ms)}`);
    await traffic.idle(this.ms);
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
  async act(model: Model, traffic: Traffic): Promise<void> {
    if (model.budget) model.budget.calls -= this.count;
    traffic.move(this.change, this.pick);
    const count = traffic.callsLeft(this.count);
    const step = traffic.begin(`exec ${count} times in a row${afterChanging(this.change)}`, true);
    for (let i = 0; i < count; i++) await traffic.send(step, { kind: 'valid' });
  }
  toString(): string {
    return `Repeat(${this.change}${this.change === 'keys' || this.change === 'policy' ? `:${this.pick}` : ''}, ${this.count})`;
  }
}

/** Opens a session on session pair `pair` (modulo their count) under the current authority. */
export class SessionOpen extends Step {
  constructor(readonly pair = 0) {
    super();
  }
  async act(_model: Model, traffic: Traffic): Promise<void> {
    await traffic.openSession(traffic.begin(`open a session (${traffic.sessionPair(this.pair).open.tool})`), this.pair);
  }
  toString(): string {
    return this.pair === 0 ? 'SessionOpen' : `SessionOpen(pair ${this.pair})`;
  }
}

/** Sends the probe to an open session under the current authority: run under it, or refused. */
export class SessionSend extends Step {
  constructor(readonly which: number) {
    super();
  }
  async act(_model: Model, traffic: Traffic): Promise<void> {
    const session = traffic.session(this.which);
    if (!session) traffic.begin('send to a session (none is open: nothing sent)');
    else await traffic.sendToSession(traffic.begin(`send to the session opened at step ${session.step}`), session);
  }
  toString(): string {
    return `SessionSend(${this.which})`;
  }
}

/** What a session's sends change of its own authority, by how many it had: its own first, then one dimension at a time. */
const SESSION_CHANGES: readonly Change[] = ['none', 'policy', 'launcher', 'workspace', 'variant'];

/** Sends the probe to every open session, each under its own authority with the next dimension of SESSION_CHANGES changed. */
export class SessionRound extends Step {
  async act(_model: Model, traffic: Traffic): Promise<void> {
    for (const session of traffic.openSessions) {
      const change = SESSION_CHANGES[session.sends % SESSION_CHANGES.length]!;
      const how = change === 'none' ? ' under its own authority' : `${afterChanging(change)} of its authority`;
      const step = traffic.begin(`send to the session opened at step ${session.step} (${session.pair.open.tool})${how}`);
      await traffic.sendToSession(step, session, change);
    }
  }
  toString(): string {
    return 'SessionRound';
  }
}

/** tools/list again, or a resource read: the server's state may be disturbed by them. */
export class Other extends Step {
  constructor(readonly what: 'relist' | 'read-resource') {
    super();
  }
  async act(_model: Model, traffic: Traffic): Promise<void> {
    traffic.begin(this.what === 'relist' ? 'tools/list' : 'resources/read');
    await traffic.other(this.what);
  }
  toString(): string {
    return this.what === 'relist' ? 'Relist' : 'ReadResource';
  }
}

// ---- the draws exploration, the resident and the soak share ----

/** An idle step (shrinking shortens it: constantFrom shrinks toward the shorter waits). */
export const idleStep = (): fc.Arbitrary<Step> => fc.constantFrom(...IDLE_STEPS_MS).map((ms) => new Idle(ms));

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

// ---- judging a server's traffic ----

export interface TrafficOutcome {
  run: IsolatedRun<Traffic>;
  violations: Finding[];
  /** Calls that were allowed to run and did: traffic of nothing but refusals tests little. */
  executed: number;
}

/** What breaks the traffic: the monitor's MUST findings, and a valid call that reported success while its command never ran (charged to `check`). */
export function judgeTraffic(run: IsolatedRun<Traffic>, check: CheckDef): TrafficOutcome {
  const violations = run.findings.filter(isMust);
  let executed = 0;
  for (const call of run.calls) {
    if (call.expect !== 'run' || !call.nonce || !call.outcome) continue;
    // An execution is the probe's own record of its run: a launch whose command never ran shows nothing.
    const ran = probeRunsOf(run.observations, call.nonce).length > 0;
    if (ran) executed++;
    // Another exec tool may take commands in a form the probe does not run in (code, not shell): it is judged by what ran.
    else if (call.outcome.kind === 'result' && !isRefusal(call.outcome) && !run.value?.wentToExtraTool(call.index)) {
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
