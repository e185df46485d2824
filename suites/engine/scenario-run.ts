import { join } from 'node:path';
import { TargetStartError } from '../../harness/codex-session.js';
import type { ProcessScope } from '../../harness/process-scope.js';
import type { TranscriptEntry } from '../../harness/transcript.js';
import type { Job } from './jobs.js';
import {
  couldNotRun,
  notApplicable,
  resultOf,
  type CheckDef,
  type CheckResult,
  type ElicitationRecord,
  type Finding,
  type Hint,
  type ScenarioRecord,
  type ScenarioTiming,
  type Verdict,
} from './model.js';
import { MAX_TIMER_MS, sessionAllowed } from './plan.js';
import { MonitorLog } from './server-calls.js';
import { seconds, type SuiteRun } from './suite-run.js';
import { decideVerdict, type JobEnd } from './verdict.js';

/** Drives one scenario job once it is under way (server mode starts servers, host mode drives a host). */
export type ScenarioDriver = (run: ScenarioRun, scope: ProcessScope) => Promise<void>;

const needsHttp = () => notApplicable('needs a Streamable HTTP target', 'http-target');

/**
 * One scenario on one transport: what was decided before it ran, running it in a scope of its
 * own under its time budget, how it ended, and its record. The final verdicts come from
 * decideVerdict, once the monitor has judged every call of the run.
 */
export class ScenarioRun {
  /** Verdicts reached before the end (verdict.ts, step 1): the first one for a check wins. */
  private readonly early = new Map<string, Verdict>();
  /** Set once the job has ended or was given up on: a verdict the scenario reaches later comes too late to count. */
  private sealed = false;
  end: JobEnd = {};
  /** Its calls, for the monitor: its own, or its shared server's (Scenario.shares). */
  log = new MonitorLog();
  readonly dir: string;
  /** When it started (after any wait for the control's facts). */
  t0 = Date.now();
  /** Whether a server (or host) of this job got through startup. */
  startedHere = false;
  timing?: ScenarioTiming;
  /** Moves the scenario's deadline (set while it runs). */
  private moveDeadline: (to: (deadline: number) => number) => void = () => undefined;
  /** Every connection's traffic, in order (set by the driver). */
  transcript: TranscriptEntry[] = [];
  /** What the server asked through elicitation/create, on any of its connections, and what it was answered (set by the driver). */
  elicitations: ElicitationRecord[] = [];
  private endedAt = Date.now();
  private scope?: ProcessScope;
  /** How many of its waits are under way: its acting slot is lent while any is. */
  private idlers = 0;
  /** Whether it holds an acting slot (JobPool), and whether it lent it for a wait. */
  private acting = false;
  private lent = false;

  constructor(
    readonly suite: SuiteRun,
    readonly job: Job,
    index: number,
  ) {
    // Fixed width: a command naming a path in it is as long whatever the job's place in the queue (a replay's included).
    this.dir = join(suite.root, String(index).padStart(3, '0'));
  }

  get scenario() {
    return this.job.scenario;
  }

  decide(checkId: string, verdict: Verdict): void {
    if (!this.sealed && !this.early.has(checkId)) this.early.set(checkId, verdict);
  }

  decided(checkId: string): boolean {
    return this.early.has(checkId);
  }

  /** Started once on this transport: its target is alive. */
  serverStarted(): void {
    this.startedHere = true;
    this.suite.startedOnce.add(this.job.transport);
    if (this.scenario.isControl && this.job.transport === 'stdio') this.suite.control.serverUp();
  }

  async execute(drive: ScenarioDriver): Promise<void> {
    for (const check of this.scenario.checks) {
      const unmet = this.job.runs
        ? this.staticNeed(check)
        : this.job.transport === 'http'
          ? needsHttp()
          : notApplicable('needs a stdio target', 'stdio-target');
      if (unmet) this.decide(check.id, unmet);
    }
    await this.controlDecides();
    this.t0 = Date.now();
    const blocker = this.blocker() ?? this.knownBlocker();
    if (blocker) this.end = { undecided: blocker };
    // A resident decides no check of its own: it runs for the calls it makes.
    if (!blocker && (this.scenario.resident || this.scenario.checks.some((c) => !this.decided(c.id)))) await this.runScoped(drive);
    else this.publishControl('the control scenario did not run');
    this.endedAt = Date.now();
    // A resident scenario is not one of the jobs the progress line counts.
    if (!this.scenario.resident) this.suite.done++;
    const { scenario, transport } = this.job;
    this.suite.progress({ kind: 'scenario-end', scenario: scenario.id, transport, done: this.suite.done, total: this.suite.total });
  }

  /**
   * Takes an acting slot (JobPool.act) before the scenario acts on its server. The control acts at
   * once (the others may wait on its facts while they hold their slots), and so does a resident,
   * which waits most of the time. Time spent waiting for a turn is not the scenario's.
   */
  async act(): Promise<void> {
    const pool = this.scenario.isControl || this.scenario.resident ? undefined : this.suite.pool;
    if (!pool) return;
    const waitStarted = Date.now();
    await pool.act();
    this.acting = true;
    const waited = Date.now() - waitStarted;
    if (waited >= 100) this.moveDeadline((deadline) => deadline + waited);
  }

  // ---- a resident's life (Scenario.resident; runner.ts: head start, capResident) ----
  // The resolvers before their promises: a field declared after one would be initialized after its executor ran, and undo it.
  private callingResolve: () => void = () => undefined;
  private coreResolve: () => void = () => undefined;
  /** Resolves once a resident's first call goes out, or it has none to make, or it ended (Lifetime.underWay). */
  readonly calling: Promise<void> = new Promise((resolve) => (this.callingResolve = resolve));
  /** Resolves once a resident made its core calls (Lifetime.coreDone): until then the others' end does not cut it short. */
  readonly core: Promise<void> = new Promise((resolve) => (this.coreResolve = resolve));
  madeCore = false;

  underWay(): void {
    this.callingResolve();
  }

  coreMade(): void {
    this.madeCore = true;
    this.coreResolve();
  }

  /** Until its core calls are made, a resident may go on `ms` past its latest progress (untilCore). */
  private coreWindowMs?: number;

  /** Once the others are done: cut a resident that makes no progress for `ms` before its core calls are made. */
  untilCore(ms: number): void {
    this.coreWindowMs = ms;
    this.capDeadline(ms);
  }

  /** The scenario noted progress (a call answered): a resident still on its core gets its window again. */
  noteProgress(): void {
    if (this.coreWindowMs !== undefined && !this.madeCore) this.moveDeadline(() => Date.now() + this.coreWindowMs!);
  }

  /** Why this transport's resident did not finish, when it charges `checkId` (verdict.ts, step 6). */
  private residentUnfinishedFor(checkId: string): string | undefined {
    const unfinished = this.suite.residentsUnfinished.get(this.job.transport);
    return unfinished?.charges.has(checkId) ? unfinished.why : undefined;
  }

  /** Ends its budget at most `ms` from now (a resident once the others are done). */
  capDeadline(ms: number): void {
    this.moveDeadline((deadline) => Math.min(deadline, Date.now() + ms));
  }

  /** Gives the acting slot back, if it holds one. */
  rest(): void {
    if (!this.acting) return;
    this.acting = false;
    this.suite.pool?.rest();
  }

  /** Waits `ms` (less if the scenario is given up), lending the acting slot meanwhile (`waiting`). */
  idle(ms: number): Promise<void> {
    return this.waiting(
      new Promise<void>((resolve) => {
        let forget = () => {};
        const timer = setTimeout(() => {
          forget();
          resolve();
        }, ms);
        forget =
          this.scope?.onAbort(() => {
            clearTimeout(timer);
            resolve();
          }) ?? forget;
      }),
    );
  }

  /**
   * Awaits `work` that only waits (an idle step, a server starting) without holding an acting
   * slot: the slot is lent while any wait of this job is under way, and taken back before it goes on.
   */
  async waiting<T>(work: Promise<T>): Promise<T> {
    if (this.idlers++ === 0 && this.acting) {
      this.rest();
      this.lent = true;
    }
    try {
      return await work;
    } finally {
      if (--this.idlers === 0 && this.lent) {
        this.lent = false;
        await this.act();
      }
    }
  }

  /** Needs known before anything starts (verdict.ts, 1a). */
  private staticNeed(check: CheckDef): Verdict | undefined {
    const { plan } = this.suite;
    if (check.needs.includes('codex') && !plan.realCodex) return notApplicable('needs a real Codex CLI', 'real-codex');
    if (check.needs.includes('soak') && !plan.options.soak) return notApplicable('the soak was not asked for', 'soak-off');
    if (check.needs.includes('http') && !plan.targets.http) return needsHttp();
    if (check.needs.includes('session') && !plan.session) return notApplicable('needs a session adapter', 'session-adapter');
    if (check.needs.includes('session') && !sessionAllowed(plan)) {
      return notApplicable(
        "the session adapter's tools are not enabled for this server in the Codex config (enabled_tools, disabled_tools)",
        'session-adapter',
      );
    }
    return undefined;
  }

  /** Why the job must not start at all (verdict.ts, 1b). */
  private blocker(): Verdict | undefined {
    const { suite, job } = this;
    const dead = suite.deadAtStart.get(job.transport);
    if (dead) return couldNotRun(`target failed to start: ${dead.message}`);
    if (suite.runExpired) return couldNotRun(`${suite.runExpired} before this scenario started`, undefined, 'run-timeout');
    return undefined;
  }

  /** The checks still to decide, when the job runs at all (a resident or the control decides none that way). */
  private open(): CheckDef[] {
    const { job, scenario } = this;
    return !job.runs || scenario.isControl || scenario.resident ? [] : scenario.checks.filter((c) => !this.decided(c.id));
  }

  /**
   * A job of exec checks over stdio waits for the control's facts before it starts (Control.settled:
   * not longer than a healthy control call takes), so that whether it starts (knownBlocker) does not
   * depend on timing; one of `ownCallForms` does not wait: nothing but a rejected adapter call keeps it from starting.
   */
  private async controlDecides(): Promise<void> {
    // A long scenario does not wait: it is the run's critical path on a correct server (a slow
    // starter's 2 s would be added to it), and exploration stops on its own when nothing runs.
    if (this.scenario.long) return;
    if (this.job.transport === 'stdio' && !this.scenario.ownCallForms && this.open().some((c) => c.needs.includes('exec'))) await this.suite.control.settled;
  }

  /** A blocker already known for every check still to decide (SuiteRun.knownBlocker): its server would show nothing more. */
  private knownBlocker(): Verdict | undefined {
    const open = this.open();
    const blockers = open.map((c) => this.suite.knownBlocker(c, this.job.transport, this.scenario.ownCallForms));
    if (open.length === 0 || !blockers.every(Boolean)) return undefined;
    // A scenario on the shared server would have started none of its own.
    if (!this.scenario.shares) this.suite.startsSaved++;
    return blockers[0];
  }

  private async runScoped(drive: ScenarioDriver): Promise<void> {
    const { suite, job, scenario } = this;
    suite.scenariosRun++;
    suite.progress({ kind: 'scenario-start', scenario: scenario.id, transport: job.transport });
    const scope = suite.scope.child();
    this.scope = scope;
    this.timing = { observersMs: 0, startupMs: 0, runMs: 0 };
    const budgetMs = Math.min(scenario.timeoutMs?.(suite.plan.options, suite.scenarioTimeoutMs) ?? suite.scenarioTimeoutMs, MAX_TIMER_MS);
    let timedOut = false;
    let deadline = Date.now() + budgetMs;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => {
          timedOut = true;
          scope.abort(`the scenario did not finish within the scenario timeout (${seconds(budgetMs)})`);
        },
        Math.min(Math.max(0, deadline - Date.now()), MAX_TIMER_MS),
      );
    };
    arm();
    // Time spent waiting for a turn to act (JobPool) is not the scenario's.
    this.moveDeadline = (to) => {
      deadline = to(deadline);
      if (!timedOut) arm();
    };
    const work = scope.run(() => drive(this, scope));
    suite.begin(job, scope, work);
    const aborted = new Promise<string>((resolve) => scope.onAbort(resolve));
    try {
      await Promise.race([work, aborted]);
    } catch (error) {
      if (scope.aborted === undefined) this.failed(error);
    } finally {
      this.sealed = true;
      clearTimeout(timer);
      suite.finish(job);
    }
    if (scope.aborted !== undefined) this.givenUp(scope.aborted, timedOut);
    this.publishControl(scope.aborted ?? 'the control scenario did not finish');
  }

  private failed(error: unknown): void {
    if (error instanceof TargetStartError) {
      if (!this.startedHere) {
        const { message, stderrTail, endedBeforeInitialize } = error;
        this.suite.targetDied(this.job, { message, stderrTail, transport: this.job.transport, endedBeforeInitialize });
      }
      this.end.undecided = couldNotRun(`target failed to start: ${error.message}`);
    } else {
      this.end.undecided = { status: 'error', message: `scenario crashed: ${(error as Error).stack ?? String(error)}` };
      // A resident decides no check of its own: what it would have shown is missing from the checks it charges.
      this.unfinished(this.end.undecided.message, true);
    }
  }

  /** A resident that crashed (`always`), or did not make its core calls: what they would have shown is missing from the checks it charges. */
  private unfinished(why: string, always = false): void {
    const { resident } = this.scenario;
    if (resident && (always || !this.madeCore)) this.suite.residentsUnfinished.set(this.job.transport, { charges: new Set(resident.charges), why });
  }

  /** Given up on: the scenario's own verdicts (if it reaches any) come too late to count. */
  private givenUp(reason: string, timedOut: boolean): void {
    // A resident cut short before its core: a server slow enough on a long-lived process would otherwise hide what those calls show.
    this.unfinished(`its core calls did not finish: ${reason}`);
    const hint: Hint | undefined = timedOut ? 'scenario-timeout' : reason === this.suite.runExpired ? 'run-timeout' : undefined;
    const verdict: Verdict = { status: 'error', message: reason, ...(hint ? { hint } : {}) };
    const neverStarted = reason.startsWith('target failed to start') && !this.startedHere;
    this.end.givenUp = { verdict, undecided: neverStarted ? couldNotRun(reason) : verdict };
  }

  /** The control publishes its facts when it runs; whatever else happens to it, others must not wait on it. */
  private publishControl(detail: string): void {
    if (this.scenario.isControl && this.job.transport === 'stdio') this.suite.control.publish({ works: false, detail });
  }

  /** The record of this job, with the checks the run reports. */
  record(): ScenarioRecord {
    const { scenario, job, suite } = this;
    return {
      id: scenario.id,
      title: scenario.title,
      transport: job.transport,
      checks: this.reported().map((check) => check.id),
      startMs: this.timing ? this.t0 - suite.started : 0,
      durationMs: this.endedAt - this.t0,
      ran: this.timing !== undefined,
      transcript: this.transcript,
      ...(this.timing ? { timing: this.timing } : {}),
    };
  }

  reported(): CheckDef[] {
    return this.scenario.checks.filter((check) => this.suite.plan.select(check.id));
  }

  /**
   * A not-applicable check's hint (what to add to make it apply) only when following it would make
   * it run: with a known blocker (SuiteRun.knownBlocker) it would only turn into a could-not-run.
   */
  private withoutDeadEndHint(check: CheckDef, verdict: Verdict): Verdict {
    if (verdict.status !== 'skip' || verdict.reason !== 'not-applicable' || !verdict.hint) return verdict;
    const blocker = this.suite.knownBlocker(check, this.job.runs ? this.job.transport : undefined, this.scenario.ownCallForms);
    if (!blocker || blocker.status !== 'skip') return verdict;
    const { hint: _dropped, ...rest } = verdict;
    return { ...rest, message: `${verdict.message} (adding it would not help: ${blocker.message})` };
  }

  /** The final results of the reported checks, given the findings charged to each (verdict.ts). */
  results(findingsOf: (checkId: string) => Finding[]): CheckResult[] {
    const { scenario, job } = this;
    return this.reported().map((check) => {
      const verdict = decideVerdict({
        check,
        scenario: scenario.id,
        early: this.early.get(check.id),
        end: this.end,
        findings: findingsOf(check.id),
        elicitationElsewhere: this.suite.refusedAfterElicitation.get(job.transport),
        residentUnfinished: this.residentUnfinishedFor(check.id),
      });
      return resultOf(this.withoutDeadEndHint(check, verdict), {
        id: check.id,
        rule: check.rule,
        level: check.level,
        title: check.title,
        transport: job.transport,
        scenario: scenario.id,
      });
    });
  }
}
