import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Transport } from '../../harness/codex-wire.js';
import type { ExecAdapter, SessionAdapter, ToolAccount } from '../../harness/exec-adapter.js';
import { sweepRun, trackTempDir } from '../../harness/process-registry.js';
import { ProcessScope } from '../../harness/process-scope.js';
import { connect, type Connection } from '../../harness/target.js';
import type { CheckIndex } from './checks.js';
import type { Control, Job } from './jobs.js';
import { didNotOptIn, type CheckDef, type Lifetime, type ResidentLife, type Verdict } from './model.js';
import type { JobPool } from './pool.js';
import { SharedServers } from './shared-server.js';
import { defaultScenarioTimeoutMs, DEFAULT_RUN_TIMEOUT_MS, MAX_TIMER_MS, type Connector, type ProgressEvent, type RunPlan, type StartFailure } from './plan.js';

export const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * What the jobs of one run share: its temp dir and process scope, the control, what was learnt
 * about each transport's target (started once, dead at start, did not opt in), the jobs under
 * way, the servers still closing, and the counts the report shows.
 */
export class SuiteRun {
  readonly started = Date.now();
  /** Neutral name: a server must not be able to tell the suite's commands by their paths. */
  readonly root = mkdtempSync(join(tmpdir(), 'tmp-'));
  readonly scope = new ProcessScope();
  readonly scenarioTimeoutMs: number;
  readonly connect: Connector;
  serverStarts = 0;
  /** The starts by why they were made (StartReason): the report header's account of the processes. */
  readonly startsBy = new Map<string, number>();
  scenariosRun = 0;
  /** Server starts left out because a known blocker decided their checks (knownBlocker). */
  startsSaved = 0;
  /** Scenarios that ran on a shared server rather than a fresh one of their own, less the shared servers started. */
  startsShared = 0;
  /** The longest a command the run sent was made to run (its slow commands), in ms; 0 when it sent none. */
  longestCommandMs = 0;
  done = 0;
  readonly startedOnce = new Set<Transport>();
  readonly deadAtStart = new Map<Transport, StartFailure>();
  /** Transports on which a server was seen not to opt in (sandboxOptIn). */
  readonly notOptedIn = new Set<Transport>();
  /** Called once a server has started and greeted (its opt-in known). */
  onServerKnown: () => void = () => undefined;
  /** Per transport, the first call that should have run and was refused after a declined or cancelled elicitation (verdict.ts, step 5). */
  readonly refusedAfterElicitation = new Map<Transport, string>();
  /** Each resident job's life (ScenarioBase.resident), made before the jobs start. */
  readonly residents = new Map<Job, ResidentLife>();
  /** Per transport, a resident that crashed or was cut before its core calls: the checks it charges, and why in words (verdict.ts, step 6). */
  readonly residentsUnfinished = new Map<Transport, { charges: Set<string>; why: string }>();
  /** Set when the run's own timeout expired. */
  runExpired?: string;
  /** The first exec adapter and server identity a connection resolved, for the report header. */
  exec?: ExecAdapter;
  /** Every tool the first connection listed, and what the suite does with it (the report header's list). */
  tools?: ToolAccount[];
  /** The session adapters the first connection resolved: the operator's, or the pairs detected (the report header's list). */
  sessions?: SessionAdapter[];
  server?: { info: unknown; capabilities: unknown };
  private readonly inFlight = new Map<Job, ProcessScope>();
  /** Servers being stopped in the background while the workers go on; awaited before the run ends. */
  private readonly closing: Promise<unknown>[] = [];
  /** Every scenario's work, also those given up on: awaited, briefly, before the temp dir goes. */
  private readonly works: Promise<unknown>[] = [];
  private readonly forget: (() => void)[];
  private readonly runTimer: NodeJS.Timeout;
  /** The servers the scenarios of each transport share (Scenario.shares). */
  readonly shared: SharedServers;
  /** The job slots, once the jobs run: a job that only waits lends its slot (JobSlot.waiting). */
  pool?: JobPool;
  private othersFinished!: () => void;
  /** What a resident scenario knows of the others: when they are all done, and how far they got (what it says of itself: ScenarioRun). */
  readonly lifetime: Pick<Lifetime, 'othersDone' | 'progress' | 'spare'> = {
    othersDone: new Promise<void>((resolve) => (this.othersFinished = resolve)),
    progress: () => (this.total === 0 ? 1 : this.done / this.total),
    spare: () => this.pool?.spare ?? false,
  };

  constructor(
    readonly plan: RunPlan,
    readonly checks: CheckIndex,
    readonly control: Control,
    readonly total: number,
  ) {
    this.scenarioTimeoutMs = plan.scenarioTimeoutMs ?? defaultScenarioTimeoutMs(plan.options);
    this.connect = plan.connect ?? connect;
    this.shared = new SharedServers(this);
    this.forget = [trackTempDir(this.root)];
    const runTimeoutMs = Math.min(plan.runTimeoutMs ?? DEFAULT_RUN_TIMEOUT_MS, MAX_TIMER_MS);
    this.runTimer = setTimeout(() => {
      this.runExpired = `the run timeout (${seconds(runTimeoutMs)}) expired`;
      this.scope.abort(this.runExpired);
    }, runTimeoutMs);
    const abort = () => this.scope.abort('the run was aborted');
    plan.signal?.addEventListener('abort', abort);
    this.forget.push(() => plan.signal?.removeEventListener('abort', abort));
    if (plan.signal?.aborted) abort();
  }

  /**
   * What keeps `check` from running on `transport` (undefined: a transport without a target) whatever
   * the user adds, once known: a server that did not opt in, or the control's blocker (over stdio,
   * where the control runs). A scenario of `ownCallForms` is kept only by a rejected adapter call.
   */
  knownBlocker(check: CheckDef, transport: Transport | undefined, ownCallForms = false): Verdict | undefined {
    const notOptedIn = transport ? this.notOptedIn.has(transport) : this.notOptedIn.size > 0;
    if (check.needs.includes('opt-in') && notOptedIn && !this.plan.options.assumeOptIn) return didNotOptIn();
    const control = this.control.known?.blocker;
    if (!control || !check.needs.includes('exec') || (transport ?? 'stdio') !== 'stdio') return undefined;
    return ownCallForms && !(control.status === 'skip' && control.hint === 'exec-adapter') ? undefined : control;
  }

  /** One more server started, and why (`<scenario id>: <what for>`, or the shared servers'). */
  countStart(why: string): void {
    this.serverStarts++;
    this.startsBy.set(why, (this.startsBy.get(why) ?? 0) + 1);
  }

  /** Every scenario but the residents has finished. */
  othersDone(): void {
    this.othersFinished();
  }

  progress(event: ProgressEvent): void {
    this.plan.onProgress?.(event);
  }

  /** A job under way in `scope`, with its work (awaited at the end, even if given up on). */
  begin(job: Job, scope: ProcessScope, work: Promise<unknown>): void {
    this.inFlight.set(job, scope);
    this.works.push(work.catch(() => undefined));
  }

  finish(job: Job): void {
    this.inFlight.delete(job);
  }

  /** Dead at the first startup: nothing queued for this transport starts, and the jobs waiting on a startup stop now. */
  targetDied(job: Job, failure: StartFailure): void {
    if (this.startedOnce.has(job.transport) || this.deadAtStart.has(job.transport)) return;
    this.deadAtStart.set(job.transport, failure);
    for (const [other, scope] of this.inFlight)
      if (other !== job && other.transport === job.transport) scope.abort(`target failed to start: ${failure.message}`);
  }

  /** Stops `connections` in the background (after `lingerMs` unless aborted); `then` runs once they are closed. */
  closeLater(connections: Connection[], lingerMs: number, then: (closeMs: number) => void): void {
    // A timer that holds the event loop: the run is not over until these servers are closed.
    const linger = new Promise<void>((resolve) => setTimeout(resolve, this.scope.aborted === undefined ? lingerMs : 0));
    const closed = linger.then(async () => {
      const closeStarted = Date.now();
      await Promise.allSettled(connections.map((c) => c.close()));
      then(Date.now() - closeStarted);
    });
    this.closing.push(closed);
  }

  /** Nothing of the run may start from here on: whatever it started stops, then the sweep ends what nobody stopped. */
  async stop(): Promise<void> {
    clearTimeout(this.runTimer);
    this.scope.abort('the run is over');
    await Promise.race([Promise.allSettled(this.works), sleep(2000)]);
    await Promise.allSettled(this.closing);
    sweepRun(this.scope);
  }

  /** The temp dir goes once the monitor has read every log in it (off the event loop: other runs may share it). */
  async removeFiles(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
    for (const forget of this.forget) forget();
  }
}
