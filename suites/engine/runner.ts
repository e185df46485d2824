import { mkdtempSync, rmSync } from 'node:fs';
import { chmod, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codexSandboxEntries, codexState, STATE_KEY, STATE_KEY_DEPRECATED, type ConnectionPurpose } from '../../harness/codex-wire.js';
import { adapterRejection, resolveExecAdapter, renderCommand, usesShellString, type ExecAdapter, type SessionAdapter } from '../../harness/exec-adapter.js';
import type { SandboxEntries } from '../../harness/codex-wire.js';
import { TargetStartError } from '../../harness/codex-session.js';
import { ScenarioObservers, type Observations } from '../../harness/observers.js';
import { containment, type Containment } from '../../harness/containment.js';
import { sweepRun, trackTempDir } from '../../harness/process-registry.js';
import { ProcessScope } from '../../harness/process-scope.js';
import { oversizedMessages } from '../../harness/stdio-transport.js';
import { connect, type Connection, type HttpTarget, type StdioTarget } from '../../harness/target.js';
import type { Transport } from '../../harness/codex-wire.js';
import type { HostTarget } from '../../harness/host-mode/drive.js';
import type { TranscriptEntry } from '../../harness/transcript.js';
import {
  couldNotRun,
  notApplicable,
  type CallOptions,
  type CheckDef,
  type CheckResult,
  type ControlFacts,
  resultOf,
  type Hint,
  type IsolatedContext,
  type RunOptions,
  type AnyScenario,
  drivesHost,
  type HostScenario,
  type Scenario,
  type ScenarioRecord,
  type ScenarioTiming,
  type ScenarioContext,
  type Verdict,
} from './model.js';
import { isObject } from '../../harness/json.js';
import type { RawOutcome } from '../../harness/codex-session.js';
import { authorityOf, monitor, type CanonicalChecks, type Finding, type MonitoredCall } from './monitor.js';
import { argvShape, fidelity, stateUnchanged } from '../server/forwarding.js';
import { runsGivenExecutable } from '../server/launcher.js';
import { concurrentCalls, stateFollowsCall } from '../server/authority.js';
import { executesInsideLaunch } from '../server/execution.js';
import { httpFailsClosed } from '../server/transport.js';
import { runPool } from './pool.js';

/** Where the monitor charges findings that are not about their call's own purpose. */
const CANONICAL: CanonicalChecks = {
  exec: executesInsideLaunch.id,
  launcher: runsGivenExecutable.id,
  argvShape: argvShape.id,
  stateUnchanged: stateUnchanged.id,
  fidelity: fidelity.id,
  staleAuthority: stateFollowsCall.id,
  concurrentAuthority: concurrentCalls.id,
  http: httpFailsClosed.id,
};

/** A fresh server of an isolated run, with its own observers (removed with `remove`). */
interface IsolatedServer {
  observers: ScenarioObservers;
  connection: Connection;
  remove(): Promise<void>;
}

/** What one scenario asked of the server, for the monitor. */
interface MonitorLog {
  calls: MonitoredCall[];
  trapOwners: Map<string, string>;
  observers?: ScenarioObservers;
  findings: Finding[];
  exec?: ExecAdapter;
  lingerMs: number;
}

export interface RunPlan {
  /** At least one of the two (server mode); none in host mode. */
  targets: { stdio?: StdioTarget; http?: HttpTarget };
  /** Host mode: the host its scenarios (HostScenario) drive, over these transports. */
  host?: HostTarget;
  exec?: { tool: string; arguments?: unknown; source: 'flag' | 'config' };
  options: RunOptions;
  jobs: number;
  /** Which checks to report (--only / --skip). */
  select: (checkId: string) => boolean;
  realCodex?: string;
  session?: SessionAdapter;
  resourceReadMeta?: Record<string, unknown>;
  /** Budget of one scenario, startup included (--scenario-timeout); default: defaultScenarioTimeoutMs(options). */
  scenarioTimeoutMs?: number;
  /** Budget of the whole run (--run-timeout); default DEFAULT_RUN_TIMEOUT_MS. */
  runTimeoutMs?: number;
  /** Called as scenarios start and finish (the CLI's live progress line). */
  onProgress?: (event: ProgressEvent) => void;
}

export type ProgressEvent =
  | { kind: 'start'; total: number }
  | { kind: 'scenario-start'; scenario: string; transport: Transport }
  | { kind: 'scenario-note'; scenario: string; transport: Transport; note: string }
  | { kind: 'scenario-end'; scenario: string; transport: Transport; done: number; total: number };

/** A scenario never needs more than two startups and three calls in a row when every step keeps to its own timeout. */
export const defaultScenarioTimeoutMs = (options: RunOptions): number => 2 * options.startupTimeoutMs + 3 * options.callTimeoutMs;
export const DEFAULT_RUN_TIMEOUT_MS = 30 * 60 * 1000;
/** The longest delay a timer can hold (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

const NOT_OPTED_IN = 'the server did not opt in (see capability/advertised), so Codex sends it no sandbox keys';
const didNotOptIn = () => couldNotRun(NOT_OPTED_IN, undefined, 'assume-opt-in');
const needsHttp = () => notApplicable('needs a Streamable HTTP target', 'http-target');

/** Needs known before anything starts: a real Codex, a transport the plan has. */
function staticUnmet(check: CheckDef, plan: RunPlan): Verdict | undefined {
  if (check.needs.includes('codex') && !plan.realCodex) return notApplicable('needs a real Codex CLI', 'real-codex');
  if (check.needs.includes('http') && !plan.targets.http) return needsHttp();
  if (check.needs.includes('session') && !plan.session) {
    return notApplicable('needs a session adapter', 'session-adapter');
  }
  return undefined;
}

export interface RunReport {
  /** Every scenario job, in the scenario list's order: what the results point at. */
  scenarios: ScenarioRecord[];
  /** In the scenario list's order; each names its scenario and transport. */
  results: CheckResult[];
  /** Set when the target never got through startup in any scenario. */
  startFailure?: { message: string; stderrTail: string };
  serverInfo?: unknown;
  capabilities?: unknown;
  /** The transports the plan had targets for (whatever --only selected). */
  transports?: Transport[];
  /** How the run made sure nothing it started outlives it (harness/containment.ts, harness/process-registry.ts). */
  containment?: Containment;
  /** The exec adapter the run used (from the first connection that resolved one), and where it came from. */
  exec?: ExecAdapter;
  durationMs: number;
  /** How much was started: server starts (scenario connections and extra ones) and scenarios run (the time per phase is in `scenarios`). */
  stats?: { serverStarts: number; scenariosRun: number };
}

/** Codex's opt-in test: either state key under `capabilities.experimental`, with an object value. */
export function sandboxOptIn(initializeResult: Record<string, unknown>): boolean {
  const experimental = isObject(initializeResult.capabilities) ? initializeResult.capabilities.experimental : undefined;
  if (!isObject(experimental)) return false;
  return [STATE_KEY, STATE_KEY_DEPRECATED].some((key) => isObject(experimental[key]));
}

class Control {
  private resolve!: (facts: ControlFacts) => void;
  readonly facts = new Promise<ControlFacts>((resolve) => (this.resolve = resolve));
  publish(facts: ControlFacts): void {
    this.resolve(facts);
  }
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** Messages over 1 MB are summarized once the checks are judged: a run's memory stays bounded. */
function compactTranscript(connection: Connection | undefined): void {
  for (const entry of connection?.transcript.entries ?? []) {
    if (!('message' in entry) || typeof entry.message !== 'object' || entry.message === null) continue;
    const bytes = oversizedMessages.get(entry.message);
    if (bytes === undefined) continue;
    const original = entry.message as Record<string, unknown>;
    entry.message = { jsonrpc: original.jsonrpc, id: original.id, conformanceNote: `a message of ${bytes} bytes, not kept in the transcript (over 1 MB)` };
  }
}

/** True when the scenario saw anything execute: a launch (not Codex's capability probe), the probe, or a trap. */
const anythingRan = (observations: Observations) =>
  observations.launches.some((l) => !l.isCapabilityProbe) || observations.probeRuns.length > 0 || observations.trapCalls.length > 0;

export async function runSuite(plan: RunPlan, scenarios: AnyScenario[]): Promise<RunReport> {
  const started = Date.now();
  // Neutral names: a server must not be able to tell the suite's commands by their paths.
  const root = mkdtempSync(join(tmpdir(), 'tmp-'));
  const forgetRoot = trackTempDir(root);
  const runScope = new ProcessScope();
  const control = new Control();
  const report: RunReport = { scenarios: [], results: [], durationMs: 0 };
  let serverStarts = 0;
  let scenariosRun = 0;
  // Per transport: whether a startup ever succeeded, and the first startup failure before that.
  const startedOnce = new Set<Transport>();
  const deadAtStart = new Map<Transport, { message: string; stderrTail: string }>();
  const scenarioTimeoutMs = plan.scenarioTimeoutMs ?? defaultScenarioTimeoutMs(plan.options);
  const runTimeoutMs = plan.runTimeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
  let runExpired: string | undefined;

  const transports: Transport[] = plan.host?.transports ?? (['stdio', 'http'] as const).filter((t) => plan.targets[t]);
  // One job per scenario and transport it applies to; a scenario for a transport the plan lacks
  // still reports its checks (as not applicable), on the transport it is for.
  interface Job {
    scenario: AnyScenario;
    transport: Transport;
    runs: boolean;
  }
  const jobs: Job[] = [];
  for (const scenario of scenarios) {
    if (!scenario.checks.some((c) => plan.select(c.id))) continue;
    const usable = scenario.transports.filter((t) => transports.includes(t));
    if (usable.length === 0) jobs.push({ scenario, transport: scenario.transports[0]!, runs: false });
    for (const transport of usable) jobs.push({ scenario, transport, runs: true });
  }
  // The control runs whenever another scenario waits on it, and goes first, so that a single
  // worker never waits on a scenario still queued behind it.
  const controlScenario = scenarios.find((s) => s.isControl);
  const hasControlJob = jobs.some((j) => j.scenario === controlScenario && j.transport === 'stdio');
  if (!plan.targets.stdio) control.publish({ works: false, detail: 'no stdio target ran the control call; give the stdio command too' });
  // Only scenarios that run commands wait on the control: without them it would be a server start for nothing.
  const needsControl = jobs.some((j) => j.runs && (j.scenario.needs.includes('exec') || j.scenario.checks.some((c) => c.needs.includes('exec'))));
  const queue: Job[] =
    controlScenario && plan.targets.stdio && !hasControlJob && needsControl
      ? [{ scenario: controlScenario, transport: 'stdio', runs: true }, ...jobs]
      : [...jobs];
  if (!queue.some((j) => j.scenario === controlScenario && j.transport === 'stdio')) {
    control.publish({ works: false, detail: 'the control scenario did not run (no selected check runs a command over stdio)' });
  }
  // The control first; then the long scenarios, so that none of them is left for the end alone.
  const rank = (job: Job) => (job.scenario.isControl ? 0 : job.scenario.long ? 1 : 2);
  queue.sort((a, b) => rank(a) - rank(b));
  const resultsByJob = new Map<Job, CheckResult[]>();
  const recordsByJob = new Map<Job, ScenarioRecord>();
  const logsByJob = new Map<Job, MonitorLog>();
  // Transports on which a server was seen not to opt in (see sandboxOptIn).
  const notOptedIn = new Set<Transport>();

  // Jobs under way, with their scopes: a target found dead at startup aborts the others of its transport.
  const inFlight = new Map<Job, ProcessScope>();
  // Servers being stopped in the background while the workers go on; awaited before the run ends.
  const closing: Promise<unknown>[] = [];
  // Every scenario's work, also those given up on (a timeout): awaited, briefly, before the temp dir goes.
  const works: Promise<unknown>[] = [];
  let done = 0;

  const runOne = async (job: Job, index: number): Promise<void> => {
    const { scenario } = job;
    const dir = join(root, String(index));
    const t0 = Date.now();
    const verdicts = new Map<string, Verdict>();
    let connection: Connection | undefined;
    // A host scenario's transcript (a server scenario's is its connection's).
    let hostTranscript: TranscriptEntry[] | undefined;
    const extraConnections: Connection[] = [];
    // The unanswered calls of the isolated runs' servers (only these lists: their connections are closed and let go run by run).
    const isolatedUnanswered: (readonly string[])[] = [];
    const log: MonitorLog = { calls: [], trapOwners: new Map(), findings: [], lingerMs: 0 };
    logsByJob.set(job, log);
    // Set when the scenario runs.
    let ranTiming: ScenarioTiming | undefined;
    for (const check of scenario.checks) {
      const verdict = job.runs ? staticUnmet(check, plan) : job.transport === 'http' ? needsHttp() : notApplicable('needs a stdio target', 'stdio-target');
      if (verdict) verdicts.set(check.id, verdict);
    }
    const target = plan.targets[job.transport];
    const dead = deadAtStart.get(job.transport);
    const undecided = (verdict: Verdict) => {
      for (const check of scenario.checks) if (!verdicts.has(check.id)) verdicts.set(check.id, verdict);
    };
    if (dead) {
      undecided(couldNotRun(`target failed to start: ${dead.message}`));
    } else if (runExpired) {
      undecided(couldNotRun(`${runExpired} before this scenario started`, undefined, 'run-timeout'));
    } else if (notOptedIn.has(job.transport) && !plan.options.assumeOptIn && scenario.checks.every((c) => verdicts.has(c.id) || c.needs.includes('opt-in'))) {
      // A server that did not opt in gets no sandbox keys from Codex: starting it again for every
      // scenario that needs them would learn nothing.
      undecided(didNotOptIn());
    } else if ((plan.host ?? target) && scenario.checks.some((c) => !verdicts.has(c.id))) {
      scenariosRun++;
      plan.onProgress?.({ kind: 'scenario-start', scenario: scenario.id, transport: job.transport });
      const scope = runScope.child();
      inFlight.set(job, scope);
      const timing: ScenarioTiming = (ranTiming = { observersMs: 0, startupMs: 0, runMs: 0 });
      let startedHere = false;
      let scenarioTimedOut = false;
      const budgetMs = Math.min(scenario.timeoutMs?.(plan.options, scenarioTimeoutMs) ?? scenarioTimeoutMs, MAX_TIMER_MS);
      const timer = setTimeout(() => {
        scenarioTimedOut = true;
        scope.abort(`the scenario did not finish within the scenario timeout (${seconds(budgetMs)})`);
      }, budgetMs);
      const work = scope.run(async () => {
        if (drivesHost(scenario)) {
          const driven = await driveHost(scenario, plan.host!, job.transport, plan.select, scope);
          hostTranscript = driven.transcript;
          if (driven.startFailure) throw new TargetStartError(driven.startFailure.message, driven.startFailure.stderrTail);
          startedHere = true;
          startedOnce.add(job.transport);
          for (const [id, verdict] of driven.verdicts) if (!verdicts.has(id)) verdicts.set(id, verdict);
          timing.runMs = Date.now() - t0;
          return;
        }
        if (!target) throw new Error(`no ${job.transport} target for a server scenario`);
        try {
          const observers = await ScenarioObservers.create(dir, { realCodex: plan.realCodex });
          log.observers = observers;
          timing.observersMs = Date.now() - t0;
          serverStarts++;
          connection = await connect(target, observers.pathTrapDir, plan.options.startupTimeoutMs);
          timing.startupMs = Date.now() - t0 - timing.observersMs;
          startedHere = true;
          startedOnce.add(job.transport);
          const openConnection = async (purpose?: ConnectionPurpose) => {
            if (scope.aborted !== undefined) throw new Error(scope.aborted);
            serverStarts++;
            const extra = await connect(target, observers.pathTrapDir, plan.options.startupTimeoutMs, purpose);
            extraConnections.push(extra);
            if (scope.aborted !== undefined) void extra.close();
            return extra;
          };
          if (!sandboxOptIn(connection.handshake.initializeResult)) notOptedIn.add(job.transport);
          let isolatedRuns = 0;
          const openIsolated = async (): Promise<IsolatedServer> => {
            if (scope.aborted !== undefined) throw new Error(scope.aborted);
            const own = join(dir, `x${++isolatedRuns}`);
            const fresh = await ScenarioObservers.create(own, { realCodex: plan.realCodex });
            serverStarts++;
            const remove = () => rm(own, { recursive: true, force: true });
            try {
              const isolated = await connect(target, fresh.pathTrapDir, plan.options.startupTimeoutMs);
              isolatedUnanswered.push(isolated.session.unansweredCalls);
              return { observers: fresh, connection: isolated, remove };
            } catch (error) {
              await remove();
              throw error;
            }
          };
          await runWithConnection(plan, scenario, connection, observers, control, verdicts, openConnection, openIsolated, log);
          timing.runMs = Date.now() - t0 - timing.observersMs - timing.startupMs;
          // Verdicts reached on calls that got no answer, when nothing ran at all, rest on an
          // absence the server never finished: they say "error", not "fail". Every server of the
          // scenario counts: its own, the extra connections, the isolated runs'.
          const unanswered = [connection, ...extraConnections].flatMap((c) => c.session.unansweredCalls).concat(...isolatedUnanswered);
          if (unanswered.length > 0 && [...verdicts.values()].some((v) => v.status === 'fail') && !anythingRan(await observers.read())) {
            const cause = unanswered[0]!;
            for (const [id, verdict] of verdicts) {
              if (verdict.status === 'fail')
                verdicts.set(id, {
                  status: 'error',
                  message: `a call got no answer (${cause}) and nothing ran, so this cannot be judged (it would read: ${verdict.message})`,
                });
            }
          }
        } finally {
          // The verdicts are in: the servers stop in the background while the worker moves on.
          const all = [connection, ...extraConnections];
          let closeStarted = Date.now();
          closing.push(
            // A timer that holds the event loop: the run is not over until these servers are closed.
            new Promise<void>((resolve) => setTimeout(resolve, scope.aborted === undefined ? log.lingerMs : 0))
              .then(() => {
                closeStarted = Date.now();
                return Promise.allSettled(all.map((c) => c?.close()));
              })
              .then(async () => {
                timing.closeMs = Date.now() - closeStarted;
                all.forEach(compactTranscript);
              }),
          );
        }
      });
      works.push(work.catch(() => undefined));
      const aborted = new Promise<string>((resolve) => scope.onAbort(resolve));
      try {
        await Promise.race([work, aborted]);
      } catch (error) {
        if (scope.aborted === undefined) {
          if (error instanceof TargetStartError) {
            if (!startedHere && !startedOnce.has(job.transport) && !deadAtStart.has(job.transport)) {
              // Dead at the first startup: nothing queued for this transport starts, and the
              // scenarios already waiting on a startup stop waiting now.
              deadAtStart.set(job.transport, { message: error.message, stderrTail: error.stderrTail });
              for (const [other, otherScope] of inFlight) {
                if (other !== job && other.transport === job.transport) otherScope.abort(`target failed to start: ${error.message}`);
              }
            }
            undecided(couldNotRun(`target failed to start: ${error.message}`));
          } else {
            undecided({ status: 'error', message: `scenario crashed: ${(error as Error).stack ?? String(error)}` });
          }
        }
      } finally {
        clearTimeout(timer);
        inFlight.delete(job);
      }
      const reason = scope.aborted;
      if (reason !== undefined) {
        // Given up on: the scenario's own verdicts (if it reaches any) come too late to count.
        scope.abort(reason); // (already) aborted: its servers are being stopped
        const neverStarted = !startedHere;
        const hint: Hint | undefined = scenarioTimedOut ? 'scenario-timeout' : reason === runExpired ? 'run-timeout' : undefined;
        const given: Verdict = { status: 'error', message: reason, ...(hint ? { hint } : {}) };
        undecided(reason.startsWith('target failed to start') && neverStarted ? couldNotRun(reason) : given);
        for (const check of scenario.checks) {
          const verdict = verdicts.get(check.id);
          if (verdict && verdict.status !== 'skip') verdicts.set(check.id, given);
        }
      }
      if (scenario.isControl && job.transport === 'stdio') control.publish({ works: false, detail: reason ?? 'the control scenario did not finish' });
    } else if (scenario.isControl && job.transport === 'stdio') {
      control.publish({ works: false, detail: 'the control scenario did not run' });
    }
    if (!report.exec && log.exec) report.exec = log.exec;
    if (connection && !report.serverInfo) {
      report.serverInfo = connection.handshake.initializeResult.serverInfo;
      report.capabilities = connection.handshake.initializeResult.capabilities;
    }
    const reported = scenario.checks.filter((check) => plan.select(check.id));
    recordsByJob.set(job, {
      id: scenario.id,
      title: scenario.title,
      transport: job.transport,
      checks: reported.map((check) => check.id),
      startMs: ranTiming ? t0 - started : 0,
      durationMs: Date.now() - t0,
      ran: ranTiming !== undefined,
      transcript: hostTranscript ?? scenarioTranscript(connection, extraConnections),
      ...(ranTiming ? { timing: ranTiming } : {}),
    });
    resultsByJob.set(
      job,
      reported.map((check) => toResult(check, verdicts.get(check.id), scenario, job.transport)),
    );
    done++;
    plan.onProgress?.({ kind: 'scenario-end', scenario: scenario.id, transport: job.transport, done, total: queue.length });
  };

  const runTimer = setTimeout(() => {
    runExpired = `the run timeout (${seconds(runTimeoutMs)}) expired`;
    runScope.abort(runExpired);
  }, runTimeoutMs);
  try {
    plan.onProgress?.({ kind: 'start', total: queue.length });
    await runPool(
      plan.jobs,
      queue.map((job, index) => () => runOne(job, index)),
    );
  } finally {
    clearTimeout(runTimer);
    // Nothing of the run may start from here on; whatever it started stops, then the sweep
    // ends what nobody stopped, with whatever escaped its process group.
    runScope.abort('the run is over');
    await Promise.race([Promise.allSettled(works), sleep(2000)]);
    await Promise.allSettled(closing);
    sweepRun(runScope);
    // Every server is gone, and so is whatever escaped them: whatever was going to run has run.
    // Now every call of every scenario is judged against everything its observers recorded.
    await Promise.all([...logsByJob.values()].map((log) => judgeCalls(log)));
    applyFindings(
      [...resultsByJob.values()].flat(),
      [...logsByJob.values()].flatMap((l) => l.findings),
    );
    rmSync(root, { recursive: true, force: true });
    forgetRoot();
  }
  // Report order follows the scenario list, whatever order they finished in.
  report.results = jobs.flatMap((job) => resultsByJob.get(job) ?? []);
  report.scenarios = jobs.flatMap((job) => recordsByJob.get(job) ?? []);
  if (startedOnce.size === 0 && deadAtStart.size > 0) report.startFailure = deadAtStart.get('stdio') ?? [...deadAtStart.values()][0];
  report.stats = { serverStarts, scenariosRun };
  report.transports = transports;
  // Host mode's hosts run in process groups of their own, not in the servers' containment.
  if (!plan.host) report.containment = containment();
  report.durationMs = Date.now() - started;
  return report;
}

async function runWithConnection(
  plan: RunPlan,
  scenario: Scenario,
  connection: Connection,
  observers: ScenarioObservers,
  control: Control,
  verdicts: Map<string, Verdict>,
  openConnection: (purpose?: ConnectionPurpose) => Promise<Connection>,
  openIsolated: () => Promise<IsolatedServer>,
  log: MonitorLog,
): Promise<void> {
  const { handshake } = connection;
  const optedIn = plan.options.assumeOptIn || sandboxOptIn(handshake.initializeResult);
  const adapter = resolveExecAdapter(handshake.tools, plan.exec);
  const exec: ExecAdapter | undefined = 'missing' in adapter ? undefined : adapter;
  log.exec = exec;

  // Checks whose needs the target cannot meet are decided here, before the scenario acts.
  const unmet = (check: CheckDef): Verdict | undefined => {
    if (check.needs.includes('exec') && !exec) return notApplicable('missing' in adapter ? adapter.missing : '', 'exec-adapter');
    if (check.needs.includes('opt-in') && !optedIn) {
      return didNotOptIn();
    }
    return undefined;
  };
  for (const check of scenario.checks) {
    const verdict = unmet(check);
    if (verdict) verdicts.set(check.id, verdict);
  }
  const runnable = scenario.checks.some((check) => !verdicts.has(check.id));
  if (!runnable) {
    if (scenario.isControl && connection.transport === 'stdio') control.publish({ works: false, detail: 'the exec checks could not run' });
    return;
  }

  const surface = (on: Connection, watched: ScenarioObservers, calls: MonitorLog) => callSurface(plan, scenario, on, watched, exec, optedIn, calls);
  const spares: Promise<IsolatedServer>[] = [];
  const startSpare = () => {
    const spare = openIsolated();
    spare.catch(() => undefined); // awaited by the run that takes it, or at the end
    return spare;
  };
  const ctx: ScenarioContext = {
    options: plan.options,
    optedIn,
    control: () => control.facts,
    publishControl: (facts) => control.publish(facts),
    sessionAdapter: plan.session,
    resourceReadMeta: plan.resourceReadMeta,
    openConnection: (purpose) => openConnection(purpose),
    progress: (note) => plan.onProgress?.({ kind: 'scenario-note', scenario: scenario.id, transport: connection.transport, note }),
    ...surface(connection, observers, log),
    lingerAfter: (ms) => {
      log.lingerMs = Math.max(log.lingerMs, ms);
    },
    isolated: async (body) => {
      // The next isolated run's server starts while this one runs: a fresh server each time, but
      // its startup (most of a short sequence's cost) overlaps the sequence before it.
      const fresh = await (spares.shift() ?? openIsolated());
      spares.push(startSpare());
      const own: MonitorLog = { calls: [], trapOwners: new Map(), findings: [], lingerMs: 0, observers: fresh.observers };
      let value, error: unknown;
      try {
        value = await body(surface(fresh.connection, fresh.observers, own));
      } catch (caught) {
        error = caught;
      } finally {
        await fresh.connection.close().catch(() => undefined);
      }
      const observations = await fresh.observers.read();
      const findings = monitor({
        calls: own.calls,
        observations,
        launcherName: (path) => fresh.observers.launcherName(path),
        trapOwners: own.trapOwners,
        canonical: CANONICAL,
      });
      await fresh.remove();
      return { value, error, calls: own.calls, observations, findings };
    },
  };
  let decided: Map<string, Verdict>;
  try {
    decided = await scenario.run(ctx);
  } finally {
    // Spares no run took: stopped and removed.
    await Promise.all(
      spares.splice(0).map(async (spare) => {
        const unused = await spare.catch(() => undefined);
        await unused?.connection.close().catch(() => undefined);
        await unused?.remove();
      }),
    );
  }
  // Our own call rejected as invalid (a schema error, an unknown tool) says nothing of the server's
  // sandboxing: the checks it fed could not run. Only calls that should have run count: a
  // refusal of a call without authority may well come as "invalid params".
  const rejected = log.calls.map((call) => (call.expect === 'run' && call.outcome ? adapterRejection(call.outcome) : undefined)).find(Boolean);
  for (const check of scenario.checks) {
    if (rejected && exec && check.needs.includes('exec') && !verdicts.has(check.id)) {
      verdicts.set(check.id, couldNotRun(`the exec adapter's call was rejected: ${rejected.slice(0, 300)}`, undefined, 'exec-adapter'));
    }
  }
  for (const [id, verdict] of decided) if (!verdicts.has(id)) verdicts.set(id, verdict);
}

/** The calls a scenario (or one isolated run of it) makes on a connection, each registered with the monitor. */
function callSurface(
  plan: RunPlan,
  scenario: Scenario,
  connection: Connection,
  observers: ScenarioObservers,
  exec: ExecAdapter | undefined,
  optedIn: boolean,
  log: MonitorLog,
): IsolatedContext {
  // Codex's workspace-write state; its codexLinuxSandboxExe must work when a real codex enforces it.
  const state = codexState('workspace-write', observers.workspaceDir, { linuxSandboxExe: plan.realCodex ?? observers.launcherPath });
  async function monitoredCall(tool: string, args: unknown, sandbox: SandboxEntries, options: CallOptions): Promise<RawOutcome> {
    const authority = authorityOf(sandbox, connection.transport);
    const call: MonitoredCall = {
      index: log.calls.length + 1,
      scenario: scenario.id,
      transport: connection.transport,
      check: options.check ?? scenario.checks[0]!.id,
      nonce: options.nonce,
      tool,
      argv: options.argv,
      sent: sandbox,
      authority,
      expect: options.expect ?? (authority.kind === 'valid' ? 'run' : 'refuse'),
      concurrent: options.concurrent,
      decoy: options.decoy,
      authorityCheck: options.authorityCheck,
    };
    log.calls.push(call);
    call.outcome = await connection.session.callTool(tool, args, sandbox, plan.options.callTimeoutMs);
    return call.outcome;
  }
  return {
    transport: connection.transport,
    session: connection.session,
    handshake: connection.handshake,
    observers,
    exec,
    state,
    observe: () => observers.read(),
    codexEntries: (s: unknown = state) => (optedIn ? codexSandboxEntries(s, connection.transport, observers.launcherPath) : {}),
    callTool: (tool, args, sandbox, options = {}) => monitoredCall(tool, args, sandbox, options),
    plantTrap: async (name, where = {}, check = scenario.checks[0]!.id) => {
      log.trapOwners.set(name, check);
      const path = await observers.trap(name, where);
      if (where.executable === false) await chmod(path, 0o644);
      return path;
    },
    execProbe: async (sandbox, options = {}) => {
      if (!exec) throw new Error('execProbe called without an exec adapter');
      const nonce = options.nonce ?? observers.newNonce();
      const command = options.command?.argv ?? observers.probeCommand(nonce);
      const shellString = usesShellString(exec.arguments);
      const rendered = renderCommand(exec.arguments, command, options.command?.script, { cwd: observers.workspaceDir });
      const args = isObject(rendered) && options.extraArguments ? { ...rendered, ...options.extraArguments } : rendered;
      const outcome = await monitoredCall(exec.tool, args, sandbox, { ...options, nonce, argv: shellString ? undefined : command });
      return { nonce, command, arguments: args, outcome };
    },
  };
}

async function judgeCalls(log: MonitorLog): Promise<void> {
  const observers = log.observers;
  if (!observers || log.calls.length + log.trapOwners.size === 0) return;
  const observations = await observers.read().catch(() => undefined);
  if (observations)
    log.findings = monitor({
      calls: log.calls,
      observations,
      launcherName: (path) => observers.launcherName(path),
      trapOwners: log.trapOwners,
      canonical: CANONICAL,
    });
}

const MAX_FINDINGS_SHOWN = 12;

/**
 * Folds the monitor's findings into the results: a finding fails the check it is charged to (on
 * its transport), or its call's own check when that one is not in this run. A verdict that
 * already failed keeps its message and gains the findings as diff lines.
 */
function applyFindings(results: CheckResult[], findings: Finding[]): void {
  const row = (check: string, transport: Transport) => results.find((r) => r.id === check && r.transport === transport);
  const charged = new Map<CheckResult, Finding[]>();
  for (const finding of findings) {
    const target = row(finding.check, finding.transport) ?? (finding.fallback ? row(finding.fallback, finding.transport) : undefined);
    if (target) charged.set(target, [...(charged.get(target) ?? []), finding]);
  }
  for (const [result, unsorted] of charged) {
    // The check's own scenario first, then the others, each in call order.
    const rank = (f: Finding) => (f.scenario === result.scenario ? '' : f.scenario);
    const list = [...unsorted].sort((a, b) => rank(a).localeCompare(rank(b)) || (a.call ?? 0) - (b.call ?? 0));
    const lines = list.slice(0, MAX_FINDINGS_SHOWN).map((f) => `! ${f.message}`);
    if (list.length > MAX_FINDINGS_SHOWN) lines.push(`! … and ${list.length - MAX_FINDINGS_SHOWN} more`);
    if (result.status === 'fail') {
      // The scenario's own verdict already speaks for its own calls; add what happened elsewhere.
      const elsewhere = list.filter((f) => f.scenario !== result.scenario);
      if (elsewhere.length) result.diff = [...(result.diff ?? []), ...elsewhere.slice(0, MAX_FINDINGS_SHOWN).map((f) => `! ${f.message}`)];
      continue;
    }
    const first = list[0]!;
    // Graded (SHOULD or INFO findings as warnings, --strict) by the CLI, with the baseline.
    result.status = 'fail';
    delete result.reason;
    result.message =
      list.length === 1 ? first.message : `${first.message} (and ${list.length - 1} more finding${list.length === 2 ? '' : 's'} of the sandbox monitor)`;
    result.expected = first.expected;
    result.actual = first.actual;
    // The first finding is the message; the others follow the diff, one line each.
    result.diff = [...(first.diff ?? []), ...lines.slice(1)];
    if (result.diff.length === 0) delete result.diff;
  }
}

function toResult(check: CheckDef, verdict: Verdict | undefined, scenario: AnyScenario, transport: Transport): CheckResult {
  const decided: Verdict = verdict ?? { status: 'error', message: `scenario ${scenario.id} reached no verdict for this check` };
  const { id, rule, level, title } = check;
  return resultOf(decided, { id, rule, level, title, transport, scenario: scenario.id });
}

/**
 * A server scenario's transcript (its ScenarioRecord's): its connection's, then each further
 * connection's (the catalog's overlapping startups, a session's second server) under a note
 * naming it, on the same clock. (An isolated run's server, one per exploration sequence, is left
 * out: its calls are in the counterexample.)
 */
function scenarioTranscript(main: Connection | undefined, extras: Connection[]): TranscriptEntry[] {
  if (!main || extras.length === 0) return main?.transcript.entries ?? [];
  const onMainClock = (connection: Connection): TranscriptEntry[] => {
    // Copies: compacted now (the originals are again when their server is closed).
    compactTranscript(connection);
    const shift = connection.transcript.started - main.transcript.started;
    return connection.transcript.entries.map((entry) => ({ ...entry, t: entry.t + shift }));
  };
  return [
    ...main.transcript.entries,
    ...extras.flatMap((connection, index): TranscriptEntry[] => [
      { t: connection.transcript.started - main.transcript.started, dir: 'note', text: `connection ${index + 2} of this scenario` },
      ...onMainClock(connection),
    ]),
  ];
}

/** Runs a host scenario in the job's scope: the host it drives is stopped when the scope is aborted. */
async function driveHost(scenario: HostScenario, host: HostTarget, transport: Transport, selected: (checkId: string) => boolean, scope: ProcessScope) {
  const controller = new AbortController();
  const forget = scope.onAbort((reason) => controller.abort(reason));
  try {
    return await scenario.drive({ host, transport, selected, signal: controller.signal });
  } finally {
    forget();
  }
}
