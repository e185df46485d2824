import type { ConnectionPurpose, SandboxEntries, Transport } from '../../harness/codex-wire.js';
import type { CommandShape, ExecAdapter, SessionAdapter } from '../../harness/exec-adapter.js';
import type { QueuePair } from '../../harness/session-pairs.js';
import type { LanguageId } from '../../harness/languages.js';
import type { Connection } from '../../harness/target.js';
import type { HostTarget } from '../../harness/host-mode/drive.js';
import type { Handshake, CodexSession, RawOutcome } from '../../harness/codex-session.js';
import type { Observations, ScenarioObservers } from '../../harness/observers.js';
import type { ElicitationAnswer } from '../../harness/elicitation.js';
import type { TranscriptEntry } from '../../harness/transcript.js';

export type Level = 'MUST' | 'SHOULD' | 'INFO';

/** What a call carried, as a conforming server must read it. */
export type Authority = { kind: 'valid'; codexExecutable: string; state: Record<string, unknown> } | { kind: 'none'; why: string };

/**
 * What a call permits: `run` (launches of its authority, executions inside them), `refuse`
 * (nothing launched, nothing executed), `attempt` (a launch of its authority may be tried, but the
 * command must never execute: the launcher cannot set up a sandbox).
 */
export type Expectation = 'run' | 'refuse' | 'attempt';

export interface MonitoredCall {
  /** Position in its scenario, from 1. */
  index: number;
  scenario: string;
  transport: Transport;
  /** The check this call was made for: findings that are about its purpose are charged to it. */
  check: string;
  /** Ties executions to the call; calls that repeat another's arguments share its nonce. */
  nonce?: string;
  tool: string;
  /** For an argv tool: the argv asked for, which must follow `--` exactly when launched directly. */
  argv?: string[];
  /** The command asked for, as findings show it: its form in the command grammar and its text (trimmed, neutralised). */
  command?: { form: string; text: string };
  sent: SandboxEntries;
  authority: Authority;
  expect: Expectation;
  /** Sent while other calls of the scenario were in flight (a state mix-up is then AUTH-3's). */
  concurrent?: boolean;
  /**
   * Values the suite put where only a wrong reading would take them (the deprecated key in a
   * conflict, a state in the arguments): a forwarded state that carries one of `markers` (JSON
   * text) is charged to `check`; any other difference stays FWD-2's.
   */
  decoy?: { check: string; markers: string[] };
  /** The check a launch under another call's authority is charged to (default AUTH-2's or AUTH-3's). */
  authorityCheck?: string;
  /** When it was sent, in ms since its server was started: a defect may need time or many calls to show. */
  atMs?: number;
  /** When it was sent and answered (epoch ms): two concurrent calls overlapped only if each was sent before the other was answered. */
  window?: { sent: number; answered?: number };
  outcome?: RawOutcome;
}

export interface Finding {
  /** The check it is charged to (its rule and level decide what the finding costs). */
  check: CheckDef;
  /** Charged to a rule-level check; the call's own check is the fallback when that one is not reported. */
  fallback?: CheckDef;
  scenario: string;
  transport: Transport;
  call?: number;
  message: string;
  expected?: unknown;
  actual?: unknown;
  diff?: string[];
}

/** Every rule of CONTRACT.md (§3 for servers, §4 for hosts), by its stable ID. */
export const RULES = [
  'CAP-1',
  'CAP-2',
  'ALIAS-1',
  'ALIAS-2',
  'EXEC-1',
  'FWD-1',
  'FWD-2',
  'FWD-3',
  'LAUNCH-1',
  'LAUNCH-2',
  'LAUNCH-3',
  'HTTP-1',
  'HTTP-2',
  'AUTH-1',
  'AUTH-2',
  'AUTH-3',
  'RES-1',
  'CAT-1',
  'CAT-2',
  'CAT-3',
  'HOST-1',
  'HOST-2',
  'HOST-3',
  'HOST-4',
] as const;
export type RuleId = (typeof RULES)[number];
/**
 * What the suites decide about a check, ungraded: a finding is `fail` at every level. The CLI's
 * graded statuses (`warn` for a finding that does not fail the run, and the baseline's `xfail` and
 * `xpass`) are its own: cli/grade.ts GradedStatus.
 */
export type Status = 'pass' | 'fail' | 'skip' | 'error';
export type SkipReason = 'not-applicable' | 'could-not-run';
/** What a check needs from the target before it can say anything. */
export type Need = 'exec' | 'opt-in' | 'http' | 'session' | 'resources' | 'codex' | 'soak';

/** A check as `list` and `explain` show it: static, known before anything runs. */
export interface CheckDef {
  id: string;
  rule: RuleId;
  level: Level;
  title: string;
  /** The rule, in our words. */
  summary: string;
  /**
   * What the suite observes to reach the verdict, concretely, and why a server cannot satisfy
   * the check while breaking its rule elsewhere in the same run.
   */
  observes: string;
  why: string;
  typicalMistake: string;
  fix: string;
  needs: Need[];
  /**
   * The sandbox monitor charges its findings of this kind to this check whatever call they came
   * from (MonitorRole); one check per role in a run.
   */
  monitors?: MonitorRole;
}

/**
 * The kinds of finding the sandbox monitor charges to a rule-level check rather than to the
 * check the call was made for.
 */
export type MonitorRole =
  | 'exec' // EXEC-1: an execution outside any launch
  | 'launcher' // LAUNCH-1: another executable ran
  | 'argv-shape' // FWD-1
  | 'state-unchanged' // FWD-2
  | 'fidelity' // FWD-3
  | 'stale-authority' // AUTH-2: an earlier call's authority used
  | 'concurrent-authority' // AUTH-3: a concurrent call's authority used
  | 'http'; // HTTP-1: anything that ran for a call over HTTP

/** What a scenario decides about one check. */
export type Verdict =
  | { status: 'pass'; note?: string; control?: ControlCall }
  | { status: 'fail'; message: string; expected?: unknown; actual?: unknown; diff?: string[]; counterexample?: Counterexample }
  | { status: 'skip'; reason: SkipReason; message: string; blockedBy?: string; hint?: Hint }
  | { status: 'error'; message: string; hint?: Hint };

/**
 * What the user can do about a verdict, as a code: the CLI words it with its own flags and config
 * keys (suites and harness hold no flag text).
 */
export type Hint =
  | 'assume-opt-in' // the server did not opt in: sandbox keys can be sent anyway
  | 'http-target' // an HTTP target is needed
  | 'stdio-target' // a stdio target is needed
  | 'real-codex' // a real Codex CLI is needed
  | 'session-adapter' // a session adapter is needed
  | 'exec-adapter' // the exec tool and its arguments can be named
  | 'scenario-timeout' // the scenario's budget can be raised
  | 'run-timeout' // the run's budget can be raised
  | 'explore-off' // exploration was turned off
  | 'elicitation' // the server's elicitation was declined or cancelled: it can be accepted
  | 'soak-off'; // the soak (one long-lived server per transport) was not asked for

export interface CheckResult {
  id: string;
  rule: string;
  level: Level;
  title: string;
  status: Status;
  reason?: SkipReason;
  /** For could-not-run: the check whose failure kept this one from running. */
  blockedBy?: string;
  /** What the user can do about it (the CLI words it). */
  hint?: Hint;
  message?: string;
  expected?: unknown;
  actual?: unknown;
  diff?: string[];
  /** For exploration: the smallest call sequence found that breaks the contract. */
  counterexample?: Counterexample;
  /** For a pass that rests on a control: that control's call and what ran for it. */
  control?: ControlCall;
  /** With `scenario`, the scenario run (ScenarioRecord) that decided it: its transcript and timing are there. */
  transport: Transport;
  scenario: string;
}

/**
 * One scenario as it ran on one transport. Results point at it by (scenario, transport): every
 * check it decided shares its transcript and timing, which the reports keep once.
 */
export interface ScenarioRecord {
  id: string;
  title: string;
  transport: Transport;
  /** The checks of the scenario the run reports (--only/--skip), in the scenario's order. */
  checks: string[];
  /** When it started, in ms from the start of the run (0 for one that did not run), and how long it took. */
  startMs: number;
  durationMs: number;
  /** False when it did not run (its checks were decided without it: not applicable, a dead target, a timeout). */
  ran: boolean;
  /**
   * Every connection it opened, in the order it opened them (a host scenario's are the host runs'),
   * each on the scenario's clock, an exploration sequence's own server too.
   */
  transcript: TranscriptEntry[];
  timing?: ScenarioTiming;
}

/** One elicitation/create a server sent during a scenario, and the host's answer (the report lists them). */
export interface ElicitationRecord {
  scenario: string;
  transport: Transport;
  mode: 'form' | 'url';
  /** The server's own words: hostile text, sanitized before any report shows it. */
  message: string;
  action: ElicitationAnswer;
}

/** Where a scenario's time went (ms): a host scenario's is all `runMs`; `closeMs` is set once its servers are gone. */
export interface ScenarioTiming {
  observersMs: number;
  startupMs: number;
  runMs: number;
  closeMs?: number;
}

export const scenarioKey = (scenario: string, transport: Transport): string => `${scenario}|${transport}`;

/** Finds the scenario record a result points at. */
export function scenarioFinder(scenarios: readonly ScenarioRecord[]): (result: Pick<CheckResult, 'scenario' | 'transport'>) => ScenarioRecord | undefined {
  const byKey = new Map(scenarios.map((s) => [scenarioKey(s.id, s.transport), s]));
  return (result) => byKey.get(scenarioKey(result.scenario, result.transport));
}

/** Whether the exec tool works at all with everything Codex would send: the positive control. */
export interface ControlFacts {
  /** True only when the control's command ran inside a launch of the launcher sent (the probe's own record, tied to that launch). */
  works: boolean;
  detail: string;
  /** The control's call and what ran for it: what a check that passes on the control shows. */
  call?: ControlCall;
  /** Each other exec tool's own control (its call with everything Codex sends, over stdio), by tool name: what that tool's refusals rest on. */
  tool?(name: string): Promise<ControlFacts>;
  /**
   * Set when the control shows that no exec check can run: the adapter's own call was rejected as
   * invalid, or an answered call with everything Codex sends executed nothing at all. What the
   * checks that depend on the control get without starting a server (ScenarioRun).
   */
  blocker?: Verdict;
}

/** A control's call as reports show it (a pass that rests on it names it): the tool, the command, what ran and the answer. */
export interface ControlCall {
  tool: string;
  command?: { form: string; text: string };
  /** What ran: the probe, inside which launch. */
  ran: string;
  response: unknown;
}

/**
 * A failing call sequence, shrunk: what each step sent and what ran, the rules it broke, and how
 * to rerun exactly it (`replay`, "<seed>:<path>", fast-check's own reproduction coordinates).
 */
export interface Counterexample {
  replay: string;
  seed: number;
  path: string;
  /** How many sequences ran before this one failed (on its worker), and how many shrink steps followed. */
  sequencesRun: number;
  shrinks: number;
  steps: CounterexampleStep[];
  broken: { rule: RuleId | string; check: string; message: string }[];
}

export interface CounterexampleStep {
  n: number;
  /** What the host did: "exec probe", "call without a launcher", "3 calls at once", "tools/list" … */
  action: string;
  /** The authority each call of the step carried, in words. */
  authority: string[];
  /** What executed for the step, and in which launch (or "nothing"). */
  ran: string[];
  response: string[];
  /** When the step began, in ms since the sequence's server was started. */
  atMs?: number;
}

/** Random call sequences against one fresh server each (explore/sequences-hold-contract). */
export interface ExploreOptions {
  /** Sequences to run, over all workers; 0 turns exploration off. */
  runs: number;
  seed: number;
  /** Wall-clock budget; the sequences not started by then are not run. */
  timeMs?: number;
  /** Rerun exactly one sequence: fast-check's seed and path. */
  replay?: { seed: number; path: string };
}

export interface RunOptions {
  assumeOptIn: boolean;
  callTimeoutMs: number;
  startupTimeoutMs: number;
  /** How many startups the catalog scenario overlaps (CAT-1, CAT-2); default 3. */
  catalogStartups?: number;
  /** Exploration budget; absent means off. */
  explore?: ExploreOptions;
  /** How the host answers the server's `elicitation/create` (harness/elicitation.ts); default accept. */
  elicitation?: ElicitationAnswer;
  /** The soak (explore/soak-holds-contract): one long-lived server per transport for this long; absent means off. */
  soak?: { seconds: number };
  /** The resident server (one per transport, for the whole run); on unless false. */
  resident?: boolean;
  /** How long the long commands of the resident and the soak run (--slow-command); absent: as long as a default run affords (suites/server/lifetime.ts). */
  slowCommandMs?: number;
}

/** What every server scenario acts through (the runner's server driver makes it); the resident and exploration have their parts too. */
export interface EveryScenarioContext {
  readonly options: RunOptions;
  readonly transport: Transport;
  readonly session: CodexSession;
  readonly handshake: Handshake;
  readonly observers: ScenarioObservers;
  /** The exec adapter; absent when the target has none (checks needing it are skipped first). */
  readonly exec?: ExecAdapter;
  /** The server's other exec tools (detected or named), each given the fixed EXEC-1/LAUNCH calls (execution/every-exec-tool). */
  readonly execTools: readonly ExecAdapter[];
  /** True when the server opted in (or --assume-opt-in): Codex then sends sandbox keys. */
  readonly optedIn: boolean;
  /** The positive control's facts, published by the control scenario. */
  control(): Promise<ControlFacts>;
  publishControl(facts: ControlFacts): void;
  observe(): Promise<Observations>;
  /** What the sandbox monitor finds in this server's calls so far (its verdict comes once the server is gone; this is a look before). */
  findingsSoFar(): Promise<Finding[]>;
  /** When this server was started (epoch ms): calls are timed from it. */
  readonly serverStartedAt: number;
  /** The default state of this scenario (workspace-write on its own workspace, with canaries). */
  readonly state: Record<string, unknown>;
  /** The sandbox entries Codex would send for `state` (none when the server did not opt in). */
  codexEntries(state?: unknown): SandboxEntries;
  /**
   * Asks the server to run the probe through its exec tool with these sandbox entries. The call
   * is registered with the sandbox monitor, which judges everything it caused once the scenario
   * is over.
   */
  execProbe(sandbox: SandboxEntries, options?: ProbeOptions): Promise<ExecProbe>;
  /** Any other tools/call (a session's), registered with the monitor like execProbe's. */
  callTool(tool: string, args: unknown, sandbox: SandboxEntries, options?: CallOptions): Promise<RawOutcome>;
  /**
   * Keeps this scenario's servers up for `ms` after it ends, in the background, so that the
   * monitor also sees a command that runs late (the worker is free meanwhile).
   */
  lingerAfter(ms: number): void;
  /**
   * Plants a trap (see ScenarioObservers.trap; `executable: false` leaves off the execute bit)
   * whose firing is charged to `check` (default: this scenario's first check).
   */
  plantTrap(name: string, where?: { dir?: string; file?: string; executable?: boolean }, check?: string): Promise<string>;
  /** Caller `_meta` for resource reads (already accepted by Codex's HOST-3 rule), if configured. */
  readonly resourceReadMeta?: Record<string, unknown>;
  /** The operator's session adapter, else every session pair detected in the tool list (checks needing 'session' are not applicable without one). */
  readonly sessionAdapters: readonly SessionAdapter[];
  /** Queue pairs detected in the tool list (harness/session-pairs.ts): a submit tool and the collect tool that takes its job id. */
  readonly queuePairs: readonly QueuePair[];
  /** Another connection to the target (a fresh server for a started target; an inventory one if asked); closed by the runner. */
  openConnection(purpose?: ConnectionPurpose): Promise<Connection>;
  /** How far a long scenario got, for the live progress line (e.g. "5/12 sequences"). */
  progress(note: string): void;
  /** Waits `ms` without holding one of the run's job slots (another scenario runs meanwhile); cut short when the scenario is given up. */
  idle(ms: number): Promise<void>;
}

/** What only the long-lived traffic uses: exploration's and the soak's fresh servers, and what they spared. */
export interface ExplorationContext {
  /**
   * Runs `body` against a fresh server with observers of its own, closes that server, and judges
   * every call `body` made with the sandbox monitor at once (not at the end of the run): each
   * exploration sequence is one such run.
   */
  isolated<T>(body: (sub: IsolatedContext) => Promise<T>, options?: { timed?: boolean }): Promise<IsolatedRun<T>>;
  /** Counts server starts the scenario left out because a known blocker had decided what they would show (the report's stats). */
  startsSaved(starts: number): void;
}

/** What only the resident uses: the rest of the run, and the tools its server lists later. */
export interface ResidentContext {
  /** The rest of the run, as a resident scenario (ScenarioBase.resident) sees it. */
  readonly lifetime: Lifetime;
  /**
   * A later listing of this server's tools: resolved as detection resolves the first (the named
   * tools, the tool filter, --skip-tool), the tools not listed before added to the
   * report's list (noting `when`), and the exec tools among them returned, to be driven.
   */
  newExecTools(tools: Record<string, unknown>[], when: string): ExecAdapter[];
}

/** The context a server scenario runs with: every scenario's part, exploration's and the resident's. */
export type ScenarioContext = EveryScenarioContext & ExplorationContext & ResidentContext;

/** What a resident scenario knows of the run around it. */
export interface Lifetime {
  /** Resolves once every other scenario of the run has finished. */
  readonly othersDone: Promise<void>;
  /** The share of the other scenarios finished, 0 to 1. */
  progress(): number;
  /** Whether a job slot is free with no scenario left to start: calls made now take nothing from the others. */
  spare(): boolean;
  /** What the resident says of itself (ResidentLife): a milestone reached, a call answered. */
  reached(milestone: ResidentMilestone): void;
  answered(): void;
}

/**
 * A resident's milestones: `calling`, its server is up and its first call goes out (or it has none
 * to make): the others may start; `core`, it made the calls a defect on a count or a timer needs.
 */
export type ResidentMilestone = 'calling' | 'core';

/** A running scenario's deadline, as a resident's life moves it. */
export interface Deadline {
  /** Ends the budget at most `ms` from now. */
  cap(ms: number): void;
  /** Sets the end `ms` from now. */
  renew(ms: number): void;
}

/**
 * A resident's life (suites/server/lifetime.ts), as the runner drives it: the residents start
 * first, the others once each is `calling` (at most `headStartMs` later); once the others are done,
 * `othersDone` cuts its deadline as its life says; `unfinished` says what its end leaves unjudged.
 */
export interface ResidentLife {
  readonly headStartMs: number;
  /** Resolves once it reached 'calling' (the runner also says so when the resident ends). */
  readonly calling: Promise<void>;
  reached(milestone: ResidentMilestone): void;
  /** One of its calls was answered. */
  answered(): void;
  /** Called once every other scenario is done, with its deadline and the run's scenario timeout. */
  othersDone(deadline: Deadline, scenarioTimeoutMs: number): Promise<void>;
  /** Why the checks it charges are not judged in full when it ended by `reason` (`crashed`: a bug of ours); undefined when they are. */
  unfinished(reason: string, crashed: boolean): string | undefined;
}

/** What a body of ScenarioContext.isolated can do: calls on its own server, watched by its own observers. */
export type IsolatedContext = Pick<
  ScenarioContext,
  | 'transport'
  | 'session'
  | 'handshake'
  | 'observers'
  | 'exec'
  | 'execTools'
  | 'state'
  | 'codexEntries'
  | 'execProbe'
  | 'callTool'
  | 'plantTrap'
  | 'observe'
  | 'findingsSoFar'
  | 'serverStartedAt'
>;

export interface IsolatedRun<T> {
  value?: T;
  /** What `body` threw, if it did (its calls are judged all the same). */
  error?: unknown;
  calls: MonitoredCall[];
  observations: Observations;
  findings: Finding[];
}

/** How the monitor should see a call (defaults: the scenario's first check; expectation from the authority sent). */
export interface CallOptions {
  check?: string;
  nonce?: string;
  /** The argv of an argv tool, which must follow `--` exactly when it is launched directly. */
  argv?: string[];
  /** The command as findings show it (MonitoredCall.command). */
  command?: MonitoredCall['command'];
  /** 'attempt': the launcher is expected to fail; the command must never execute. */
  expect?: Expectation;
  concurrent?: boolean;
  decoy?: MonitoredCall['decoy'];
  authorityCheck?: string;
  /** Its command runs this long (a slow command): the call gets that long on top of the call timeout, and the report says the longest sent. */
  runsForMs?: number;
}

export interface ProbeOptions extends Omit<CallOptions, 'argv' | 'command'> {
  /** Another exec tool to call (default: the scenario's exec adapter). */
  adapter?: ExecAdapter;
  /** Optional properties of the tool set on this call (suites/engine/tool-calls.ts; default: none). */
  optional?: Readonly<Record<string, unknown>>;
  /** A code tool's language for this call (default: the first it offers that this machine runs). */
  language?: LanguageId;
  /** Another shape of the tool's command than its template's (harness/exec-adapter.ts commandShapes; default: the template's). */
  shape?: CommandShape;
  /** Extra tool arguments (AUTH-1 smuggles authority in them). */
  extraArguments?: Record<string, unknown>;
  /**
   * The command: an argv (for a shell-string tool it is shell-quoted), or a script for a
   * shell-string tool, and its form in the command grammar (suites/server/commands.ts). Default: the probe.
   */
  command?: { argv: string[]; script?: string; form?: string };
}

export interface ExecProbe {
  nonce: string;
  command: string[];
  /** The command as findings show it (MonitoredCall.command). */
  shown?: { form: string; text: string };
  arguments: unknown;
  outcome: RawOutcome;
}

/** What every scenario has, whether it starts a server (Scenario) or drives a host (HostScenario). */
export interface ScenarioBase {
  id: string;
  title: string;
  checks: CheckDef[];
  needs: Need[];
  transports: Transport[];
  /** The scenario whose exec call is the positive control for the others. */
  isControl?: boolean;
  /** Takes several times a plain scenario (extra servers, waits): started early so it is not the run's tail. */
  long?: boolean;
  /**
   * Its calls carry the authority in forms the control's call does not (one state key alone), or
   * draw every form (exploration): a control call that executed nothing does not decide whether
   * they run anything, so it starts even then. Only a rejected adapter call keeps it from starting.
   */
  ownCallForms?: boolean;
  /** Its own time budget, when the plain scenario timeout (`base`) does not fit it (exploration). */
  timeoutMs?: (options: RunOptions, base: number) => number;
  /**
   * How many isolated runs (ScenarioContext.isolated) it is going to make on `transport`: their
   * servers start beside its first one, as many at once as the spare pool allows, so that a slow
   * starter's start-ups overlap rather than queue (only once the target is known to start and opt in).
   */
  isolatedRuns?: (options: RunOptions, transport: Transport) => number;
  /**
   * Which server it runs on. Absent: a fresh one of its own, for a scenario about what a fresh
   * process does (fail closed before any valid call, the catalog at startup) or needing a real
   * Codex. 'calls': the server its transport's sharing scenarios share, its calls in turn with
   * theirs (one scenario after another, in report order, so that a server that keeps state meets
   * the same history in every run); the monitor attributes every call, and a defect that builds
   * up over calls shows the more. 'handshake': it makes no calls on it, only reads its greeting
   * (and may list its tools again), so any time on the shared one; its own calls go to fresh servers.
   */
  shares?: 'calls' | 'handshake';
  /**
   * Taking turns, it also sends calls without valid authority over stdio (which Codex never does):
   * it goes after those that send none, so that a server that guards itself after such calls (refusing
   * what follows) still shows the others what Codex would see.
   */
  lastTurn?: boolean;
  /**
   * A resident scenario: it decides no check of its own (`checks` is empty). Its server starts
   * before the other scenarios, which wait for it to send its first call (ResidentLife), and
   * lives until they are all done, outside the job slots; the
   * monitor charges what its calls break to the checks of the rules broken. It runs when one of
   * `charges` is selected; `life` makes its lifecycle, one per run of it.
   */
  resident?: { charges: string[]; life(options: RunOptions): ResidentLife };
}

/** A scenario of server mode: the runner starts the server and hands the scenario the connection. */
export interface Scenario extends ScenarioBase {
  run(ctx: ScenarioContext): Promise<Map<string, Verdict>>;
}

/**
 * A scenario of host mode (suites/host/scenario.ts): no server is started; it drives the plan's host
 * (RunPlan.host) against recording servers and judges what they saw. The runner gives it the same
 * jobs, timeouts, progress, results and cleanup as a server scenario.
 */
export interface HostScenario extends ScenarioBase {
  drive(ctx: HostDriveContext): Promise<HostDriven>;
}

export interface HostDriveContext {
  readonly host: HostTarget;
  readonly transport: Transport;
  /** Whether a check of the scenario is in the run (a host run no selected check needs is not started). */
  selected(checkId: string): boolean;
  /** Aborted when the runner gives up on the scenario (its timeout, the run's timeout, the run's end). */
  readonly signal: AbortSignal;
}

export interface HostDriven {
  verdicts: Map<string, Verdict>;
  /** What the recording servers saw, and the notes of driving the host: the scenario record's transcript. */
  transcript: TranscriptEntry[];
  /** Set when the host failed and nothing of it reached a recording server: the host could not be started. */
  startFailure?: { message: string; stderrTail: string };
}

export type AnyScenario = Scenario | HostScenario;
export const drivesHost = (scenario: AnyScenario): scenario is HostScenario => 'drive' in scenario;

export const pass = (note?: string, control?: ControlCall): Verdict => ({ status: 'pass', note, ...(control ? { control } : {}) });
export const fail = (message: string, details: { expected?: unknown; actual?: unknown; diff?: string[]; counterexample?: Counterexample } = {}): Verdict => ({
  status: 'fail',
  message,
  ...details,
});
export const couldNotRun = (message: string, blockedBy?: string, hint?: Hint): Verdict => ({
  status: 'skip',
  reason: 'could-not-run',
  message,
  ...(blockedBy ? { blockedBy } : {}),
  ...(hint ? { hint } : {}),
});
/** The check that decides whether the server opts in (CAP-1): what a check that needs sandbox keys is blocked by. */
export const OPT_IN_CHECK = 'capability/advertised';
/**
 * A check that needs the sandbox keys, on a server that did not opt in: one cause, one verdict,
 * blocked by CAP-1's check. `hint` only where --assume-opt-in would make the check run.
 */
export const blockedByOptIn = (message: string, hint?: Hint): Verdict => couldNotRun(message, OPT_IN_CHECK, hint);
export const didNotOptIn = (): Verdict => blockedByOptIn('the server did not opt in, so Codex sends it no sandbox keys', 'assume-opt-in');
export const notApplicable = (message: string, hint?: Hint): Verdict => ({ status: 'skip', reason: 'not-applicable', message, ...(hint ? { hint } : {}) });

/**
 * A verdict as a result, ungraded: a finding is `fail` at every level; the CLI grades it (SHOULD
 * and INFO findings warn unless --strict) and applies the baseline.
 */
export function resultOf(verdict: Verdict, base: Pick<CheckResult, 'id' | 'rule' | 'level' | 'title' | 'transport' | 'scenario'>): CheckResult {
  switch (verdict.status) {
    case 'pass':
      return { ...base, status: 'pass', message: verdict.note, ...(verdict.control ? { control: verdict.control } : {}) };
    case 'fail':
      return {
        ...base,
        status: 'fail',
        message: verdict.message,
        expected: verdict.expected,
        actual: verdict.actual,
        diff: verdict.diff,
        ...(verdict.counterexample ? { counterexample: verdict.counterexample } : {}),
      };
    case 'skip':
      return {
        ...base,
        status: 'skip',
        reason: verdict.reason,
        message: verdict.message,
        ...(verdict.blockedBy ? { blockedBy: verdict.blockedBy } : {}),
        ...(verdict.hint ? { hint: verdict.hint } : {}),
      };
    case 'error':
      return { ...base, status: 'error', message: verdict.message, ...(verdict.hint ? { hint: verdict.hint } : {}) };
  }
}

/**
 * `scenario` on its transport's shared server, its calls in turn with the other such scenarios'
 * (ScenarioBase.shares); `last` for one that also sends calls without valid authority (lastTurn).
 */
export const takingTurns = (scenario: Scenario, turn: { last?: boolean } = {}): Scenario => ({
  ...scenario,
  shares: 'calls',
  ...(turn.last ? { lastTurn: true } : {}),
});

/** A scenario that decides exactly one check: most scenarios are. */
export function singleCheckScenario(check: CheckDef, judge: (ctx: ScenarioContext) => Promise<Verdict>, transports: Transport[] = ['stdio']): Scenario {
  return {
    id: check.id,
    title: check.title,
    checks: [check],
    needs: check.needs,
    transports,
    run: async (ctx) => new Map<string, Verdict>([[check.id, await judge(ctx)]]),
  };
}
