import { STATE_KEY, STATE_KEY_DEPRECATED } from '../../harness/codex-wire.js';
import {
  adapterRejection,
  resolveExecTools,
  type ConfiguredExec,
  type ExecAdapter,
  type SessionAdapter,
  type ToolChoices,
} from '../../harness/exec-adapter.js';
import { detectQueuePairs, detectSessionPairs, type QueuePair } from '../../harness/session-pairs.js';
import { isObject } from '../../harness/json.js';
import type { Observations, ScenarioObservers } from '../../harness/observers.js';
import type { ProcessScope } from '../../harness/process-scope.js';
import type { Connection } from '../../harness/target.js';
import { didNotOptIn, notApplicable, type CheckDef, type MonitoredCall, type Scenario, type ScenarioContext, type Verdict } from './model.js';
import { adapterRejected, carriesNonce } from './judge.js';
import { monitor } from './monitor.js';
import { sessionAllowed, type RunPlan } from './plan.js';
import type { ScenarioRun } from './scenario-run.js';
import { callSurface, MonitorLog, type CallSite } from './server-calls.js';
import { ScenarioServers } from './server-servers.js';
import { withShapes } from './tool-calls.js';

/** Codex's opt-in test: either state key under `capabilities.experimental`, with an object value. */
export function sandboxOptIn(initializeResult: Record<string, unknown>): boolean {
  const experimental = isObject(initializeResult.capabilities) ? initializeResult.capabilities.experimental : undefined;
  if (!isObject(experimental)) return false;
  return [STATE_KEY, STATE_KEY_DEPRECATED].some((key) => isObject(experimental[key]));
}

/**
 * True when the scenario saw anything execute: a launch (not Codex's capability probe), the probe,
 * or a trap; on a shared server, only what carried the nonce of one of `calls` (its own).
 */
const anythingRan = (observations: Observations, calls?: readonly MonitoredCall[]) => {
  const nonces = calls?.flatMap((c) => (c.nonce ? [c.nonce] : []));
  const ours = (argv: string[]) => !nonces || nonces.some((nonce) => carriesNonce(argv, nonce));
  return (
    observations.launches.some((l) => !l.isCapabilityProbe && ours(l.argv)) ||
    observations.probeRuns.some((r) => !nonces || nonces.includes(r.nonce)) ||
    observations.trapCalls.some((t) => ours(t.argv))
  );
};

/** Server mode's driver: starts the scenario's server, runs the scenario on it, and notes how it ended. */
export async function driveServerScenario(run: ScenarioRun, scope: ProcessScope): Promise<void> {
  const target = run.suite.plan.targets[run.job.transport];
  if (!target) throw new Error(`no ${run.job.transport} target for a server scenario`);
  const servers = new ScenarioServers(run, target, scope);
  try {
    const connection = await servers.openMain();
    noteServer(run, connection);
    await run.slot.act();
    const started = Date.now();
    try {
      await runOnServer(run, run.scenario as Scenario, connection, servers);
    } finally {
      run.slot.rest();
    }
    run.clock.timing!.runMs = Date.now() - started;
    servers.completed = true;
    run.end.unanswered = servers.firstUnanswered();
    if (run.end.unanswered)
      run.end.nothingRan = !servers.isolatedRan && !anythingRan(await servers.observers!.read(), servers.onShared ? ownCalls(run) : undefined);
  } finally {
    await servers.release();
  }
}

/** What the run learns from a server's greeting: whether it opted in, and who it is (for the header). */
function noteServer(run: ScenarioRun, connection: Connection): void {
  const { initializeResult } = connection.handshake;
  if (!sandboxOptIn(initializeResult)) run.suite.notOptedIn.add(run.job.transport);
  run.suite.server ??= { info: initializeResult.serverInfo, capabilities: initializeResult.capabilities };
  run.suite.onServerKnown();
}

async function runOnServer(run: ScenarioRun, scenario: Scenario, connection: Connection, servers: ScenarioServers): Promise<void> {
  const { plan } = run.suite;
  const optedIn = plan.options.assumeOptIn || sandboxOptIn(connection.handshake.initializeResult);
  const sessions = sessionsOf(plan, connection.handshake.tools);
  const resolved = resolveExecTools(connection.handshake.tools, toolChoices(plan, sessions.sends));
  const adapter = resolved.primary;
  const exec = 'missing' in adapter ? undefined : adapter;
  run.log.exec = exec;
  run.suite.exec ??= exec;
  run.suite.tools ??= resolved.accounts.map(withShapes);
  run.suite.sessions ??= sessions.adapters;
  // Needs the target cannot meet (verdict.ts, 1c).
  const unmet = (check: CheckDef): Verdict | undefined => {
    if (check.needs.includes('exec') && !exec) return notApplicable('missing' in adapter ? adapter.missing : '', 'exec-adapter');
    if (check.needs.includes('opt-in') && !optedIn) return didNotOptIn();
    if (check.needs.includes('session') && sessions.adapters.length === 0) return notApplicable(NO_SESSION_PAIR, 'session-adapter');
    return undefined;
  };
  for (const check of scenario.checks) {
    const verdict = unmet(check);
    if (verdict) run.decide(check.id, verdict);
  }
  if (!scenario.resident && scenario.checks.every((check) => run.decided(check.id))) {
    if (scenario.isControl && connection.transport === 'stdio') run.suite.control.publish({ works: false, detail: 'the exec checks could not run' });
    return;
  }
  // Its isolated runs will run: their servers start now, if they did not start with this one.
  servers.primeIsolated();
  const site: SiteFor = (on, observers, log, startedAt, timed = Boolean(scenario.resident)) => ({
    scenario: { id: scenario.id, firstCheck: scenario.checks[0]?.id ?? scenario.resident?.charges[0] ?? '' },
    connection: on,
    observers,
    exec,
    execTools: resolved.extra,
    optedIn,
    log,
    callTimeoutMs: plan.options.callTimeoutMs,
    realCodex: plan.realCodex,
    startedAt,
    timed,
    checks: run.suite.checks,
    slowCommandSent: (ms) => {
      run.suite.longestCommandMs = Math.max(run.suite.longestCommandMs, ms);
    },
    refusedAfterElicitation: (detail) => {
      run.end.refusedAfterElicitation ??= detail;
      if (!run.suite.refusedAfterElicitation.has(run.job.transport)) run.suite.refusedAfterElicitation.set(run.job.transport, detail);
    },
  });
  let decided: Map<string, Verdict>;
  try {
    const main = site(connection, servers.observers!, run.log, servers.mainStartedAt);
    decided = await scenario.run(scenarioContext(run, main, servers, site, sessions.adapters, sessions.queues));
  } finally {
    await servers.spares.drain();
  }
  judgeAdapter(run, scenario, exec);
  for (const [id, verdict] of decided) run.decide(id, verdict);
}

/** ScenarioContext.newExecTools for one server: what it listed first is known; each tool is new once. */
function newExecToolsOf(run: ScenarioRun, connection: Connection): ScenarioContext['newExecTools'] {
  const known = new Set(connection.handshake.tools.map((t) => t.name));
  const { plan } = run.suite;
  return (tools, when) => {
    const resolved = resolveExecTools(tools, toolChoices(plan, sessionsOf(plan, tools).sends));
    const fresh = resolved.accounts.filter((account) => !known.has(account.name));
    for (const account of fresh) known.add(account.name);
    // Each tool once in the report, whichever transport's server listed it first.
    const listed = new Set(run.suite.tools?.map((t) => t.name));
    const added = fresh
      .filter((account) => !listed.has(account.name))
      .map((account) => withShapes({ ...account, ...(account.adapter ? { role: 'extra' as const } : {}), late: when }));
    run.suite.tools = [...(run.suite.tools ?? []), ...added];
    return fresh.flatMap((account) => (account.adapter ? [account.adapter] : []));
  };
}

/** The operator's exec tools as a list (the plan may hold one or several). */
export const configuredExecs = (exec: ConfiguredExec | readonly ConfiguredExec[] | undefined): readonly ConfiguredExec[] =>
  exec === undefined ? [] : Array.isArray(exec) ? exec : [exec as ConfiguredExec];

/** What the plan says about the server's tools: how to call the named ones, which the host may call, which to leave out. */
const toolChoices = (plan: RunPlan, sessionSends: ReadonlyMap<string, string>): ToolChoices => {
  const { stdio, http } = plan.targets;
  // A code tool's interpreters are looked up where the server runs them: on its own PATH.
  const path = stdio?.environment.PATH ?? (http?.kind === 'http-command' ? http.environment.PATH : undefined) ?? process.env.PATH;
  return { configured: configuredExecs(plan.exec), filter: plan.tools, skip: plan.skipTools, path, sessionSends };
};

const NO_SESSION_PAIR =
  'needs a session adapter: the server lists no pair of tools that opens a session (shell, terminal, process) and sends it commands by its id (or the operator left one of them out by name)';

/**
 * The session adapters the session checks use: the operator's (when the tool filter lets the suite
 * call its tools), else every pair detected in the tool list. Either way the detected send tools
 * are not driven alone (a command needs its session), and their accounts say why.
 */
function sessionsOf(plan: RunPlan, tools: readonly Record<string, unknown>[]): { adapters: SessionAdapter[]; sends: Map<string, string>; queues: QueuePair[] } {
  const detected = detectSessionPairs(tools, plan.tools);
  // A tool the operator left out by name leaves its pair out (its send tool is still never driven alone).
  const skipped = (pair: SessionAdapter) => [pair.open.tool, pair.send.tool].find((tool) => plan.skipTools?.includes(tool));
  const given = plan.session !== undefined;
  const how = (pair: SessionAdapter) =>
    given
      ? "the session checks use the operator's session adapter instead"
      : skipped(pair)
        ? `its pair is left out, since the operator left out "${skipped(pair)}" by name`
        : 'the AUTH-2 session checks and execution/every-exec-tool drive it through that pair';
  const sends = new Map(detected.map((pair) => [pair.send.tool, `sends commands to a session "${pair.open.tool}" opens, so never alone: ${how(pair)}`]));
  // A queue pair's submit tool is driven with its collect tool (its command may run at either call).
  const queues = detectQueuePairs(tools, plan.tools).filter((pair) => ![pair.submit.tool, pair.collect.tool].some((tool) => plan.skipTools?.includes(tool)));
  for (const pair of queues) {
    sends.set(
      pair.submit.tool,
      `queues commands that "${pair.collect.tool}" collects by their job id, so never alone: execution/every-exec-tool drives it through that pair`,
    );
    sends.set(pair.collect.tool, `collects the commands "${pair.submit.tool}" queues, by their job id: execution/every-exec-tool drives it through that pair`);
  }
  return { adapters: given ? (sessionAllowed(plan) ? [plan.session!] : []) : detected.filter((pair) => !skipped(pair)), sends, queues };
}

/** Where calls on a connection go: the scenario's own log and observers unless an isolated run brings its own. */
type SiteFor = (on: Connection, observers: ScenarioObservers, log: MonitorLog, startedAt: number, timed?: boolean) => CallSite;

/** The context a server scenario acts through. */
function scenarioContext(
  run: ScenarioRun,
  main: CallSite,
  servers: ScenarioServers,
  site: SiteFor,
  sessions: readonly SessionAdapter[],
  queues: readonly QueuePair[],
): ScenarioContext {
  const { suite, job, scenario } = run;
  const { plan } = suite;
  const life = suite.residents.get(job);
  return {
    options: plan.options,
    optedIn: main.optedIn,
    control: () => suite.control.facts,
    publishControl: (facts) => suite.control.publish(facts),
    sessionAdapters: sessions,
    queuePairs: queues,
    resourceReadMeta: plan.resourceReadMeta,
    openConnection: (purpose) => servers.openConnection(purpose),
    progress: (note) => suite.progress({ kind: 'scenario-note', scenario: scenario.id, transport: job.transport, note }),
    idle: (ms) => run.idle(ms),
    lifetime: { ...suite.lifetime, reached: (milestone) => life?.reached(milestone), answered: () => life?.answered() },
    ...callSurface(main),
    newExecTools: newExecToolsOf(run, main.connection),
    lingerAfter: (ms) => {
      run.log.lingerMs = Math.max(run.log.lingerMs, ms);
    },
    startsSaved: (starts) => {
      suite.startsSaved += starts;
    },
    isolated: async (body, options = {}) => {
      // A fresh server each time, but its startup (most of a short sequence's cost) overlaps the sequence before it.
      const fresh = await run.slot.waiting(servers.spares.take());
      servers.keepIsolated(fresh.connection);
      const own = new MonitorLog(fresh.observers);
      let value, error: unknown;
      try {
        value = await body(callSurface(site(fresh.connection, fresh.observers, own, fresh.startedAt, options.timed)));
      } catch (caught) {
        error = caught;
      } finally {
        await fresh.connection.close().catch(() => undefined);
      }
      const observations = await fresh.observers.read();
      // Its observers go with it: what the job end needs to know (did anything run at all) is kept here.
      if (anythingRan(observations)) servers.isolatedRan = true;
      const findings = monitor({
        calls: own.calls,
        observations,
        launcherName: (path) => fresh.observers.launcherName(path),
        trapOwners: own.trapOwners,
        checks: suite.checks,
      });
      await fresh.remove();
      return { value, error, calls: own.calls, observations, findings };
    },
  };
}

/** The scenario's own calls in its monitor log (a shared server's log holds the other scenarios' too). */
const ownCalls = (run: ScenarioRun) => run.log.calls.filter((call) => call.scenario === run.scenario.id);

/**
 * Our own call rejected as invalid (a schema error, an unknown tool) says nothing of the server's
 * sandboxing: the checks it fed could not run (verdict.ts, 1d). Only calls that should have run
 * count: a refusal of a call without authority may well come as "invalid params".
 */
function judgeAdapter(run: ScenarioRun, scenario: Scenario, exec: ExecAdapter | undefined): void {
  // Only the primary tool's calls: a scenario that drives the other exec tools judges their rejections itself.
  const rejected = ownCalls(run)
    .map((call) => (call.expect === 'run' && call.tool === exec?.tool && call.outcome ? adapterRejection(call.outcome) : undefined))
    .find(Boolean);
  if (!rejected || !exec) return;
  for (const check of scenario.checks) if (check.needs.includes('exec')) run.decide(check.id, adapterRejected(rejected));
}
