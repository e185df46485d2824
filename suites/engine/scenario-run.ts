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
  type Deadline,
  type ElicitationRecord,
  type Finding,
  type Hint,
  type ScenarioRecord,
  type ScenarioTiming,
  type Verdict,
} from './model.js';
import { MAX_TIMER_MS, sessionAllowed } from './plan.js';
import { JobSlot } from './pool.js';
import { MonitorLog } from './server-calls.js';
import { seconds, type SuiteRun } from './suite-run.js';
import { decideVerdict, type JobEnd } from './verdict.js';

/** Drives one scenario job once it is under way (server mode starts servers, host mode drives a host). */
export type ScenarioDriver = (run: ScenarioRun, scope: ProcessScope) => Promise<void>;

const needsHttp = () => notApplicable('needs a Streamable HTTP target', 'http-target');

/** Verdicts reached before the end (verdict.ts, step 1): the first one for a check wins; none once sealed (the job ended or was given up). */
class EarlyVerdicts {
  private readonly verdicts = new Map<string, Verdict>();
  private sealed = false;

  decide(checkId: string, verdict: Verdict): void {
    if (!this.sealed && !this.verdicts.has(checkId)) this.verdicts.set(checkId, verdict);
  }
  has(checkId: string): boolean {
    return this.verdicts.has(checkId);
  }
  get(checkId: string): Verdict | undefined {
    return this.verdicts.get(checkId);
  }
  /** A verdict the scenario reaches from now on comes too late to count. */
  seal(): void {
    this.sealed = true;
  }
}

/**
 * A running scenario's scope and time budget: a timer gives the scope up when its deadline passes.
 * A wait for a turn to act moves the deadline (that time is not the scenario's); a resident's life
 * caps it or renews it (Deadline); once the scenario is over nothing moves it.
 */
class ScenarioBudget implements Deadline {
  private deadline: number;
  private timer?: NodeJS.Timeout;
  private over = false;
  timedOut = false;

  constructor(
    readonly scope: ProcessScope,
    private readonly budgetMs: number,
  ) {
    this.deadline = Date.now() + budgetMs;
    this.arm();
  }

  move(to: (deadline: number) => number): void {
    this.deadline = to(this.deadline);
    if (!this.timedOut && !this.over) this.arm();
  }
  cap(ms: number): void {
    this.move((deadline) => Math.min(deadline, Date.now() + ms));
  }
  renew(ms: number): void {
    this.move(() => Date.now() + ms);
  }
  stop(): void {
    this.over = true;
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    const fire = () => {
      this.timedOut = true;
      this.scope.abort(`the scenario did not finish within the scenario timeout (${seconds(this.budgetMs)})`);
    };
    this.timer = setTimeout(fire, Math.min(Math.max(0, this.deadline - Date.now()), MAX_TIMER_MS));
  }
}

/**
 * One scenario on one transport: what was decided before it ran, running it in a scope of its
 * own under its time budget, how it ended, and its record. The final verdicts come from
 * decideVerdict, once the monitor has judged every call of the run.
 */
export class ScenarioRun {
  private readonly early = new EarlyVerdicts();
  end: JobEnd = {};
  /** Its calls, for the monitor: its own, or its shared server's (Scenario.shares). */
  log = new MonitorLog();
  readonly dir: string;
  /** When it started (after any wait for the control's facts) and ended, and where its time went (set by the driver). */
  readonly clock: { t0: number; endedAt: number; timing?: ScenarioTiming } = { t0: Date.now(), endedAt: Date.now() };
  /** Whether a server (or host) of this job got through startup. */
  startedHere = false;
  /** What its servers recorded (set by the driver): every connection's traffic in order, and what they asked through elicitation/create and were answered. */
  recorded: { transcript: TranscriptEntry[]; elicitations: ElicitationRecord[] } = { transcript: [], elicitations: [] };
  /** Its scope and time budget, once it runs. */
  private budget?: ScenarioBudget;
  /** Its acting slot (JobPool): the control acts at once (the others may wait on its facts while they hold their slots), and so does a resident, which waits most of the time. */
  readonly slot: JobSlot;

  constructor(
    readonly suite: SuiteRun,
    readonly job: Job,
    index: number,
  ) {
    // Fixed width: a command naming a path in it is as long whatever the job's place in the queue (a replay's included).
    this.dir = join(suite.root, String(index).padStart(3, '0'));
    const pool = job.scenario.isControl || job.scenario.resident ? undefined : suite.pool;
    // Time spent waiting for a turn to act is not the scenario's.
    this.slot = new JobSlot(pool, (waited) => this.budget?.move((deadline) => deadline + waited));
  }

  get scenario() {
    return this.job.scenario;
  }

  /** Its deadline, for a resident's life to cap or renew (nothing before it runs). */
  get deadline(): Deadline {
    return { cap: (ms) => this.budget?.cap(ms), renew: (ms) => this.budget?.renew(ms) };
  }

  decide(checkId: string, verdict: Verdict): void {
    this.early.decide(checkId, verdict);
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
    this.clock.t0 = Date.now();
    const blocker = this.blocker() ?? this.knownBlocker();
    if (blocker) this.end = { undecided: blocker };
    // A resident decides no check of its own: it runs for the calls it makes.
    if (!blocker && (this.scenario.resident || this.scenario.checks.some((c) => !this.decided(c.id)))) await this.runScoped(drive);
    else this.publishControl('the control scenario did not run');
    this.clock.endedAt = Date.now();
    // A resident scenario is not one of the jobs the progress line counts.
    if (!this.scenario.resident) this.suite.done++;
    const { scenario, transport } = this.job;
    this.suite.progress({ kind: 'scenario-end', scenario: scenario.id, transport, done: this.suite.done, total: this.suite.total });
  }

  /** Why this transport's resident did not finish, when it charges `checkId` (verdict.ts, step 6). */
  private residentUnfinishedFor(checkId: string): string | undefined {
    const unfinished = this.suite.residentsUnfinished.get(this.job.transport);
    return unfinished?.charges.has(checkId) ? unfinished.why : undefined;
  }

  /** Waits `ms` (less if the scenario is given up), lending the acting slot meanwhile. */
  idle(ms: number): Promise<void> {
    return this.slot.waiting(
      new Promise<void>((resolve) => {
        let forget = () => {};
        const timer = setTimeout(() => {
          forget();
          resolve();
        }, ms);
        forget =
          this.budget?.scope.onAbort(() => {
            clearTimeout(timer);
            resolve();
          }) ?? forget;
      }),
    );
  }

  /** Needs known before anything starts (verdict.ts, 1a). */
  private staticNeed(check: CheckDef): Verdict | undefined {
    const { plan } = this.suite;
    if (check.needs.includes('codex') && !plan.realCodex) return notApplicable('needs a real Codex CLI', 'real-codex');
    if (check.needs.includes('soak') && !plan.options.soak) return notApplicable('the soak was not asked for', 'soak-off');
    if (check.needs.includes('http') && !plan.targets.http) return needsHttp();
    // Without the operator's adapter, session pairs are looked for in the tool list (server-driver.ts).
    if (check.needs.includes('session') && plan.session && !sessionAllowed(plan)) {
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
    this.clock.timing = { observersMs: 0, startupMs: 0, runMs: 0 };
    const budgetMs = Math.min(scenario.timeoutMs?.(suite.plan.options, suite.scenarioTimeoutMs) ?? suite.scenarioTimeoutMs, MAX_TIMER_MS);
    const budget = new ScenarioBudget(scope, budgetMs);
    this.budget = budget;
    const work = scope.run(() => drive(this, scope));
    suite.begin(job, scope, work);
    const aborted = new Promise<string>((resolve) => scope.onAbort(resolve));
    try {
      await Promise.race([work, aborted]);
    } catch (error) {
      if (scope.aborted === undefined) this.failed(error);
    } finally {
      this.early.seal();
      budget.stop();
      suite.finish(job);
    }
    if (scope.aborted !== undefined) this.givenUp(scope.aborted, budget.timedOut);
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

  /** A resident that crashed, or was cut before its core calls (ResidentLife.unfinished): what they would have shown is missing from the checks it charges. */
  private unfinished(reason: string, crashed: boolean): void {
    const { resident } = this.scenario;
    const why = this.suite.residents.get(this.job)?.unfinished(reason, crashed);
    if (resident && why !== undefined) this.suite.residentsUnfinished.set(this.job.transport, { charges: new Set(resident.charges), why });
  }

  /** Given up on: the scenario's own verdicts (if it reaches any) come too late to count. */
  private givenUp(reason: string, timedOut: boolean): void {
    // A resident cut short before its core: a server slow enough on a long-lived process would otherwise hide what those calls show.
    this.unfinished(reason, false);
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
      startMs: this.clock.timing ? this.clock.t0 - suite.started : 0,
      durationMs: this.clock.endedAt - this.clock.t0,
      ran: this.clock.timing !== undefined,
      transcript: this.recorded.transcript,
      ...(this.clock.timing ? { timing: this.clock.timing } : {}),
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
