import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ConnectionPurpose } from '../../harness/codex-wire.js';
import { ScenarioObservers } from '../../harness/observers.js';
import type { CodexSession } from '../../harness/codex-session.js';
import type { ProcessScope } from '../../harness/process-scope.js';
import { SparePool } from '../../harness/spare-pool.js';
import type { Connection, Target } from '../../harness/target.js';
import type { Scenario } from './model.js';
import type { SharedServer } from './shared-server.js';
import type { ScenarioRun } from './scenario-run.js';
import { scenarioTranscript, type SharedPart } from './transcripts.js';

/** How many isolated runs' transcripts a scenario keeps: far above exploration's default 12 sequences and 40 shrink reruns per worker. */
const MAX_ISOLATED_KEPT = 200;

/** A fresh server of an isolated run, with its own observers (removed with `remove`). */
export interface IsolatedServer {
  observers: ScenarioObservers;
  connection: Connection;
  /** When it was started (epoch ms). */
  startedAt: number;
  remove(): Promise<void>;
}

/**
 * The servers of one server scenario: its first one (with the scenario's observers), the further
 * connections it opens, and the fresh servers of its isolated runs (one kept starting ahead).
 * Every start is counted; the calls none of them answered are kept for the verdict.
 */
export class ScenarioServers {
  observers?: ScenarioObservers;
  main?: Connection;
  /** When the first server was started (epoch ms). */
  mainStartedAt = Date.now();
  readonly extras: Connection[] = [];
  /** The isolated runs' connections, in the order they were taken: the transcript records each (up to a bound: memory). */
  private readonly isolated: Connection[] = [];
  private isolatedUnkept = 0;
  /** The unanswered calls of the isolated runs' servers (only these lists: their connections are let go run by run). */
  private readonly isolatedUnanswered: (readonly string[])[] = [];
  private isolatedRuns = 0;
  /** Every session of every server of the scenario (isolated runs' too): their elicitations go to the record. */
  private readonly sessions: CodexSession[] = [];
  /** Whether anything executed on the server of an isolated run (their observers are removed run by run). */
  isolatedRan = false;
  private primed = false;
  private released = false;
  /** The transport's shared server, when the scenario runs on it, and where its part of that server's records begins. */
  private shared?: SharedServer;
  private from = { entries: 0, unanswered: 0, elicitations: 0 };
  private givenBack = false;
  private forgetAbort: () => void = () => undefined;
  /** Set by the driver once the scenario has run to its end (not given up, not crashed). */
  completed = false;
  readonly spares = new SparePool<IsolatedServer>(
    () => this.openIsolated(),
    async (server) => {
      await server.connection.close().catch(() => undefined);
      await server.remove();
    },
    // Over stdio, when the control's call ran nothing and no isolated run has yet: exploration stops
    // after such a run (explore.ts stopWhenBlocked), so a server started ahead would be for nothing.
    () => this.run.job.transport === 'stdio' && Boolean(this.run.suite.control.known?.blocker) && !this.isolatedRan,
  );

  constructor(
    private readonly run: ScenarioRun,
    private readonly target: Target,
    private readonly scope: ProcessScope,
  ) {
    // Its isolated runs may begin before they are known to be worth starting ahead (primeIsolated):
    // none of them then starts a spare that no run will take.
    const runs = (run.scenario as Scenario).isolatedRuns?.(run.suite.plan.options, run.job.transport);
    if (runs !== undefined) this.spares.expect(runs);
  }

  /** The scenario's observers and first server, timed: its own, or its transport's shared one (Scenario.shares). */
  async openMain(): Promise<Connection> {
    const { run } = this;
    const { suite } = run;
    const timing = run.clock.timing!;
    if (run.scenario.shares && !suite.shared.troubled.has(run.job.transport)) return this.openShared();
    this.observers = await ScenarioObservers.create(run.dir, { realCodex: suite.plan.realCodex });
    run.log.observers = this.observers;
    timing.observersMs = Date.now() - run.clock.t0;
    this.primeWhenKnown();
    suite.countStart(`${run.scenario.id}: ${run.scenario.resident ? 'the resident, over the whole run' : 'a fresh server of its own'}`);
    this.mainStartedAt = Date.now();
    this.main = this.opened(await suite.connect(this.target, this.observers.pathTrapDir, suite.plan.options.startupTimeoutMs));
    timing.startupMs = Date.now() - run.clock.t0 - timing.observersMs;
    run.serverStarted();
    return this.main;
  }

  /**
   * The transport's shared server: its observers and monitor log become the scenario's. A scenario
   * given up on retires it at once (a call may hang on it); so does one that ends badly (release).
   */
  private async openShared(): Promise<Connection> {
    const { run, scope } = this;
    const { suite } = run;
    const waitStarted = Date.now();
    const shared = await suite.shared.take(this.target, run.job.transport);
    this.shared = shared;
    this.from = {
      entries: shared.connection.transcript.entries.length,
      unanswered: shared.connection.session.unansweredCalls.length,
      elicitations: shared.connection.session.elicitations.length,
    };
    this.forgetAbort = scope.onAbort(() => this.giveBack(false));
    this.observers = shared.observers;
    run.log = shared.log;
    this.mainStartedAt = shared.startedAt;
    this.main = shared.connection;
    if (run.scenario.shares === 'calls') this.sessions.push(shared.connection.session);
    run.clock.timing!.startupMs = Date.now() - waitStarted;
    run.serverStarted();
    this.primeWhenKnown();
    return shared.connection;
  }

  private giveBack(healthy: boolean): void {
    const shared = this.shared;
    if (!shared || this.givenBack) return;
    this.givenBack = true;
    this.forgetAbort();
    shared.giveBack(healthy);
  }

  /** Another connection to the target, watched by the scenario's observers. */
  async openConnection(purpose?: ConnectionPurpose): Promise<Connection> {
    this.assertLive();
    const { suite } = this.run;
    suite.countStart(`${this.run.scenario.id}: ${purpose === 'inventory' ? 'an inventory connection' : 'a further startup'}`);
    // A start-up only waits: the acting slot goes to another job meanwhile.
    const extra = this.opened(
      await this.run.slot.waiting(suite.connect(this.target, this.observers!.pathTrapDir, suite.plan.options.startupTimeoutMs, purpose)),
    );
    this.extras.push(extra);
    if (this.scope.aborted !== undefined) void extra.close();
    return extra;
  }

  /** The isolated runs' servers may start beside this one, over stdio once the control's facts are in (primeIsolated says when). */
  private primeWhenKnown(): void {
    void (this.run.job.transport === 'stdio' ? this.run.suite.control.facts : Promise.resolve()).then(() => this.primeIsolated());
  }

  /**
   * Starts the servers of the isolated runs the scenario says it will make (Scenario.isolatedRuns),
   * once, and only when they are known to be worth it: the target has started and opted in on this
   * transport and, over stdio, the control's call ran its command (a blocker there may still let a
   * first run try every form of authority, but not a dozen).
   */
  primeIsolated(): void {
    const { scenario, job, suite } = this.run;
    const runs = (scenario as Scenario).isolatedRuns?.(suite.plan.options, job.transport) ?? 0;
    if (runs <= 0 || this.primed || this.released || this.scope.aborted !== undefined) return;
    if (!suite.startedOnce.has(job.transport) || suite.notOptedIn.has(job.transport)) return;
    if (job.transport === 'stdio' && (!suite.control.known || suite.control.known.blocker)) return;
    this.primed = true;
    this.spares.prime(runs);
  }

  private async openIsolated(): Promise<IsolatedServer> {
    this.assertLive();
    const { suite } = this.run;
    // Fixed width, as the scenario's own (ScenarioRun.dir): a replayed sequence's commands are as long as in the run it came from.
    const own = join(this.run.dir, `x${String(++this.isolatedRuns).padStart(3, '0')}`);
    const observers = await ScenarioObservers.create(own, { realCodex: suite.plan.realCodex });
    suite.countStart(`${this.run.scenario.id}: one per isolated run (a sequence, a shrink rerun)`);
    const remove = () => rm(own, { recursive: true, force: true });
    try {
      const startedAt = Date.now();
      const connection = this.opened(await suite.connect(this.target, observers.pathTrapDir, suite.plan.options.startupTimeoutMs));
      this.isolatedUnanswered.push(connection.session.unansweredCalls);
      return { observers, connection, startedAt, remove };
    } catch (error) {
      await remove();
      throw error;
    }
  }

  /** An isolated run's connection, for the transcript. */
  keepIsolated(connection: Connection): void {
    if (this.isolated.length < MAX_ISOLATED_KEPT) this.isolated.push(connection);
    else this.isolatedUnkept++;
  }

  /**
   * A shared server's traffic that is this scenario's: what it sent in its turn (its calls, in
   * turn with no one's), or the greeting it looked at (a scenario that only looks at the handshake).
   */
  private sharedPart(): SharedPart | undefined {
    const shared = this.shared;
    if (!shared) return undefined;
    const turn = this.run.scenario.shares === 'calls';
    const note = turn
      ? "the server this transport's scenarios share, from this scenario's turn on it (the other scenarios' turns left out)"
      : "the server this transport's scenarios share: its greeting (the scenarios' turns on it left out)";
    return {
      handshake: shared.handshakeEntries,
      from: turn ? this.from.entries : shared.handshakeEntries,
      to: turn ? shared.connection.transcript.entries.length : shared.handshakeEntries,
      note,
    };
  }

  /** A connection the host now answers on as the run says (elicitation), and whose elicitations are kept. */
  private opened(connection: Connection): Connection {
    connection.session.elicitation = this.run.suite.plan.options.elicitation ?? 'accept';
    this.sessions.push(connection.session);
    return connection;
  }

  private assertLive(): void {
    if (this.scope.aborted !== undefined) throw new Error(this.scope.aborted);
  }

  /** The first call of any server of the scenario that got no answer (on a shared server, of its own turn; none if it only looked at the greeting). */
  firstUnanswered(): string | undefined {
    const lookedOnly = this.run.scenario.shares === 'handshake';
    const main = this.main && !lookedOnly ? [this.main.session.unansweredCalls.slice(this.shared ? this.from.unanswered : 0)] : [];
    const lists = [...main, ...this.extras.map((c) => c.session.unansweredCalls)].concat(this.isolatedUnanswered);
    return lists.flat()[0];
  }

  /** Whether it shares its transport's server (Scenario.shares). */
  get onShared(): boolean {
    return this.shared !== undefined;
  }

  /** The verdicts are in: no spare starts any more, the record gets every connection's transcript, and the servers stop in the background. */
  async release(): Promise<void> {
    this.released = true;
    await this.spares.drain();
    const { run } = this;
    run.recorded.transcript = scenarioTranscript(this.main, this.extras, this.isolated, this.sharedPart());
    if (this.isolatedUnkept)
      run.recorded.transcript.push({ t: Date.now() - this.mainStartedAt, dir: 'note', text: `${this.isolatedUnkept} more isolated runs, not kept` });
    const { id: scenario } = run.scenario;
    const { transport } = run.job;
    const asked = (session: CodexSession) =>
      this.shared && session === this.main?.session ? session.elicitations.slice(this.from.elicitations) : session.elicitations;
    run.recorded.elicitations = this.sessions.flatMap((session) =>
      asked(session).map(({ mode, message, action }) => ({ scenario, transport, mode, message, action })),
    );
    // A shared server goes on (unless this scenario went wrong on it); its own stop.
    this.giveBack(this.completed && this.firstUnanswered() === undefined);
    const all = [this.shared ? undefined : this.main, ...this.extras].filter((c): c is Connection => c !== undefined);
    run.suite.closeLater(all, run.log.lingerMs, (closeMs) => {
      if (run.clock.timing) run.clock.timing.closeMs = closeMs;
    });
  }
}
