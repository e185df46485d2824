import { join } from 'node:path';
import type { Transport } from '../../harness/codex-wire.js';
import { ScenarioObservers } from '../../harness/observers.js';
import type { Connection, Target } from '../../harness/target.js';
import { MonitorLog } from './server-calls.js';
import type { ProcessScope } from '../../harness/process-scope.js';
import type { Connector, RunPlan } from './plan.js';

/** Why a shared server was started, in the run's account of its starts (SuiteRun.startsBy). */
export const SHARED_START = 'shared: the scenarios of a transport take turns on it';

/** What the shared servers need of their run (SuiteRun). */
export interface SharingRun {
  readonly root: string;
  readonly plan: RunPlan;
  readonly scope: ProcessScope;
  readonly connect: Connector;
  countStart(why: string): void;
  startsShared: number;
  closeLater(connections: Connection[], lingerMs: number, then: (closeMs: number) => void): void;
}

/**
 * One server that the scenarios of a transport share (Scenario.shares), with its observers and
 * the monitor log of every call made on it: the monitor judges them together, so a call that runs
 * under another scenario's authority is found whichever scenario sent it.
 */
export class SharedServer {
  /** Scenarios holding it now. */
  private holders = 0;
  private retired = false;
  private closed = false;
  /** How many transcript entries its handshake took: what a scenario that only looks at the handshake shows. */
  readonly handshakeEntries: number;

  constructor(
    private readonly suite: SharingRun,
    private readonly servers: SharedServers,
    readonly transport: Transport,
    readonly observers: ScenarioObservers,
    readonly connection: Connection,
    readonly log: MonitorLog,
    /** When it was started (epoch ms): calls on it are timed from then. */
    readonly startedAt: number,
  ) {
    this.handshakeEntries = connection.transcript.entries.length;
  }

  hold(): void {
    this.holders++;
  }

  /** A scenario is done with it; `healthy` false (a call got no answer, the scenario was given up or crashed) retires it. */
  giveBack(healthy: boolean): void {
    this.holders--;
    if (!healthy) {
      this.servers.troubled.add(this.transport);
      this.retire();
    } else if (this.retired) this.closeWhenFree();
  }

  /** No scenario gets it from now on; it stops once no scenario holds it (after the longest linger its scenarios asked for). */
  retire(): void {
    this.retired = true;
    this.servers.forget(this);
    this.closeWhenFree();
  }

  get isRetired(): boolean {
    return this.retired;
  }

  private closeWhenFree(): void {
    if (this.holders > 0 || this.closed) return;
    this.closed = true;
    this.suite.closeLater([this.connection], this.log.lingerMs, () => undefined);
  }
}

/**
 * The run's shared servers: one per transport at a time, started by the first scenario that asks,
 * replaced once retired (a scenario on it went wrong), all retired once the scenarios are done.
 * They start in a scope of their own, so that a scenario's timeout does not stop them under the others.
 */
export class SharedServers {
  private readonly current = new Map<Transport, Promise<SharedServer>>();
  /** What `current` resolved to. */
  private readonly handedOut = new Map<Transport, SharedServer>();
  private readonly started: SharedServer[] = [];
  private generation = 0;
  private readonly scope;
  /**
   * Transports where a scenario went wrong on the shared server (a call never answered, given up,
   * crashed): their scenarios no longer share one, each gets a fresh server of its own, side by
   * side, so that a server that hangs costs one scenario timeout, not one per scenario in turn.
   */
  readonly troubled = new Set<Transport>();

  constructor(private readonly suite: SharingRun) {
    this.scope = suite.scope.child();
  }

  /** The transport's shared server, started if there is none; the caller holds it until it gives it back. */
  async take(target: Target, transport: Transport): Promise<SharedServer> {
    // One that has exited since is retired first: the next scenario gets a live one.
    const live = this.handedOut.get(transport);
    if (live?.connection.session.closed !== undefined) live.retire();
    let next = this.current.get(transport);
    if (!next) {
      next = this.start(target, transport);
      this.current.set(transport, next);
      // A start that failed is not kept: the next scenario tries again (and reports its own failure).
      next.catch(() => {
        if (this.current.get(transport) === next) this.current.delete(transport);
      });
    }
    const server = await next;
    this.suite.startsShared++;
    server.hold();
    return server;
  }

  private async start(target: Target, transport: Transport): Promise<SharedServer> {
    const { suite } = this;
    const observers = await ScenarioObservers.create(join(suite.root, `shared-${transport}-${++this.generation}`), { realCodex: suite.plan.realCodex });
    suite.countStart(SHARED_START);
    const startedAt = Date.now();
    const connection = await this.scope.run(() => suite.connect(target, observers.pathTrapDir, suite.plan.options.startupTimeoutMs));
    // Its first taker saves nothing: this start is the one it would have made.
    suite.startsShared--;
    connection.session.elicitation = suite.plan.options.elicitation ?? 'accept';
    const server = new SharedServer(suite, this, transport, observers, connection, new MonitorLog(observers), startedAt);
    this.started.push(server);
    this.handedOut.set(transport, server);
    return server;
  }

  /** A retired server is no longer handed out: the next take starts another. */
  forget(server: SharedServer): void {
    if (this.handedOut.get(server.transport) !== server) return;
    this.handedOut.delete(server.transport);
    this.current.delete(server.transport);
  }

  /** Every scenario is done: each server stops once the last one holding it gives it back. */
  retireAll(): void {
    for (const server of this.started) if (!server.isRetired) server.retire();
  }

  /** The monitor logs of every shared server of the run, to be judged with the scenarios'. */
  get logs(): MonitorLog[] {
    return this.started.map((server) => server.log);
  }
}
