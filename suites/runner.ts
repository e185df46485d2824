import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codexSandboxEntries, defaultState, STATE_KEY, STATE_KEY_DEPRECATED } from '../harness/codex-wire.js';
import { resolveExecAdapter, renderArguments, type ExecAdapter, type SessionAdapter } from '../harness/exec-adapter.js';
import { TargetStartError } from '../harness/host-session.js';
import { ScenarioObservers } from '../harness/observers.js';
import { connect, type Connection, type HttpTarget, type StdioTarget } from '../harness/target.js';
import type { Transport } from '../harness/codex-wire.js';
import {
  couldNotRun,
  notApplicable,
  type CheckDef,
  type CheckResult,
  type ControlFacts,
  type RunOptions,
  type Scenario,
  type ScenarioContext,
  type Verdict,
} from './model.js';
import { isObject } from '../harness/json.js';

export interface RunPlan {
  /** At least one of the two. */
  targets: { stdio?: StdioTarget; http?: HttpTarget };
  exec?: { tool: string; arguments?: unknown; source: 'flag' | 'config' };
  options: RunOptions;
  jobs: number;
  /** Which checks to report (--only / --skip). */
  select: (checkId: string) => boolean;
  realCodex?: string;
  session?: SessionAdapter;
  resourceReadMeta?: Record<string, unknown>;
}

const HTTP_HINT = 'needs a Streamable HTTP target: --url http://127.0.0.1:PORT/mcp, or --http-command "<cmd with {port}>"';

/** Needs known before anything starts: a real Codex, a transport the plan has. */
function staticUnmet(check: CheckDef, plan: RunPlan): Verdict | undefined {
  if (check.needs.includes('codex') && !plan.realCodex) return notApplicable('needs a real Codex CLI: --codex PATH');
  if (check.needs.includes('http') && !plan.targets.http) return notApplicable(HTTP_HINT);
  if (check.needs.includes('session') && !plan.session) {
    return notApplicable('needs a session adapter: "session" in mcp-sandbox-conformance.json or --session \'{"open":…,"send":…,"sessionId":…}\' (see README)');
  }
  return undefined;
}

export interface RunReport {
  results: CheckResult[];
  /** Set when the target never got through startup in any scenario. */
  startFailure?: { message: string; stderrTail: string };
  serverInfo?: unknown;
  capabilities?: unknown;
  durationMs: number;
}


/** Codex's opt-in test: either state key under `capabilities.experimental`, with an object value. */
export function sandboxOptIn(initializeResult: Record<string, unknown>): boolean {
  const experimental = isObject(initializeResult.capabilities) ? initializeResult.capabilities.experimental : undefined;
  if (!isObject(experimental)) return false;
  return [STATE_KEY, STATE_KEY_DEPRECATED].some((key) => isObject(experimental[key]));
}

const liveRunDirs = new Set<string>();
/** Removes the temp dirs of runs still going; for the CLI's signal handlers. */
export function removeLiveRunDirs(): void {
  for (const dir of liveRunDirs) rmSync(dir, { recursive: true, force: true });
  liveRunDirs.clear();
}

class Control {
  private resolve!: (facts: ControlFacts) => void;
  readonly facts = new Promise<ControlFacts>((resolve) => (this.resolve = resolve));
  publish(facts: ControlFacts): void {
    this.resolve(facts);
  }
}

export async function runSuite(plan: RunPlan, scenarios: Scenario[]): Promise<RunReport> {
  const started = Date.now();
  const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-conformance-'));
  liveRunDirs.add(root);
  const control = new Control();
  const report: RunReport = { results: [], durationMs: 0 };
  let anyStarted = false;
  let deadAtStart: { message: string; stderrTail: string } | undefined;

  const transports: Transport[] = (['stdio', 'http'] as const).filter((t) => plan.targets[t]);
  // One job per scenario and transport it applies to; a scenario for a transport the plan lacks
  // still reports its checks (as not applicable), on the transport it is for.
  interface Job {
    scenario: Scenario;
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
  const queue: Job[] = controlScenario && plan.targets.stdio && !hasControlJob ? [{ scenario: controlScenario, transport: 'stdio', runs: true }, ...jobs] : [...jobs];
  queue.sort((a, b) => Number(Boolean(b.scenario.isControl)) - Number(Boolean(a.scenario.isControl)));
  if (!plan.targets.stdio) control.publish({ works: false, detail: 'no stdio target ran the control call; give the stdio command too' });
  const resultsByJob = new Map<Job, CheckResult[]>();

  const runOne = async (job: Job, index: number): Promise<void> => {
    const { scenario } = job;
    const dir = join(root, `${index}-${job.transport}-${scenario.id.replace(/[^a-z0-9-]+/gi, '_')}`);
    const t0 = Date.now();
    const verdicts = new Map<string, Verdict>();
    let connection: Connection | undefined;
    const extraConnections: Connection[] = [];
    for (const check of scenario.checks) {
      const verdict = job.runs ? staticUnmet(check, plan) : notApplicable(job.transport === 'http' ? HTTP_HINT : 'needs a stdio target');
      if (verdict) verdicts.set(check.id, verdict);
    }
    const target = plan.targets[job.transport];
    if (deadAtStart) {
      for (const check of scenario.checks) verdicts.set(check.id, couldNotRun(`target failed to start: ${deadAtStart.message}`));
    } else if (target && scenario.checks.some((c) => !verdicts.has(c.id))) {
      try {
        const observers = await ScenarioObservers.create(dir, { realCodex: plan.realCodex });
        connection = await connect(target, observers.pathTrapDir, plan.options.startupTimeoutMs);
        anyStarted = true;
        const openConnection = async () => {
          const extra = await connect(target, observers.pathTrapDir, plan.options.startupTimeoutMs);
          extraConnections.push(extra);
          return extra;
        };
        await runWithConnection(plan, scenario, connection, observers, control, verdicts, openConnection);
      } catch (error) {
        if (error instanceof TargetStartError) {
          if (!anyStarted) deadAtStart ??= { message: error.message, stderrTail: error.stderrTail };
          for (const check of scenario.checks) if (!verdicts.has(check.id)) verdicts.set(check.id, couldNotRun(`target failed to start: ${error.message}`));
        } else {
          for (const check of scenario.checks) {
            if (!verdicts.has(check.id)) verdicts.set(check.id, { status: 'error', message: `scenario crashed: ${(error as Error).stack ?? String(error)}` });
          }
        }
      } finally {
        if (scenario.isControl && job.transport === 'stdio') control.publish({ works: false, detail: 'the control scenario did not finish' });
        await Promise.all([connection?.close(), ...extraConnections.map((c) => c.close())]);
      }
    } else if (scenario.isControl && job.transport === 'stdio') {
      control.publish({ works: false, detail: 'the control scenario did not run' });
    }
    if (connection && !report.serverInfo) {
      report.serverInfo = connection.handshake.initializeResult.serverInfo;
      report.capabilities = connection.handshake.initializeResult.capabilities;
    }
    const durationMs = Date.now() - t0;
    resultsByJob.set(
      job,
      scenario.checks
        .filter((check) => plan.select(check.id))
        .map((check) => toResult(check, verdicts.get(check.id), scenario, job.transport, connection, durationMs, plan.options.strict)),
    );
  };

  try {
    let next = 0;
    const worker = async () => {
      while (next < queue.length) {
        const index = next++;
        await runOne(queue[index]!, index);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(plan.jobs, queue.length)) }, worker));
  } finally {
    rmSync(root, { recursive: true, force: true });
    liveRunDirs.delete(root);
  }
  // Report order follows the scenario list, whatever order they finished in.
  report.results = jobs.flatMap((job) => resultsByJob.get(job) ?? []);
  if (!anyStarted && deadAtStart) report.startFailure = deadAtStart;
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
  openConnection: () => Promise<Connection>,
): Promise<void> {
  const { handshake, session } = connection;
  const optedIn = plan.options.assumeOptIn || sandboxOptIn(handshake.initializeResult);
  const adapter = resolveExecAdapter(handshake.tools, plan.exec);
  const exec: ExecAdapter | undefined = 'missing' in adapter ? undefined : adapter;

  // Checks whose needs the target cannot meet are decided here, before the scenario acts.
  const unmet = (check: CheckDef): Verdict | undefined => {
    if (check.needs.includes('exec') && !exec) return notApplicable('missing' in adapter ? adapter.missing : '');
    if (check.needs.includes('opt-in') && !optedIn) {
      return couldNotRun('the server did not opt in (see capability/advertised), so Codex sends it no sandbox keys; --assume-opt-in sends them anyway');
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

  const state = defaultState(observers.workspaceDir);
  const ctx: ScenarioContext = {
    options: plan.options,
    transport: connection.transport,
    session,
    handshake,
    observers,
    exec,
    optedIn,
    state,
    control: () => control.facts,
    publishControl: (facts) => control.publish(facts),
    observe: () => observers.read(),
    codexEntries: (s: unknown = state) => (optedIn ? codexSandboxEntries(s, connection.transport, observers.launcherPath) : {}),
    sessionAdapter: plan.session,
    resourceReadMeta: plan.resourceReadMeta,
    openConnection,
    execProbe: async (sandbox, extraArguments, givenNonce) => {
      if (!exec) throw new Error('execProbe called without an exec adapter');
      const nonce = givenNonce ?? observers.newNonce();
      const command = observers.probeCommand(nonce);
      const rendered = renderArguments(exec.arguments, command);
      const args = isObject(rendered) && extraArguments ? { ...rendered, ...extraArguments } : rendered;
      const outcome = await session.callTool(exec.tool, args, sandbox, plan.options.callTimeoutMs);
      return { nonce, command, arguments: args, outcome };
    },
  };
  const decided = await scenario.run(ctx);
  for (const [id, verdict] of decided) if (!verdicts.has(id)) verdicts.set(id, verdict);
}

function toResult(
  check: CheckDef,
  verdict: Verdict | undefined,
  scenario: Scenario,
  transport: Transport,
  connection: Connection | undefined,
  durationMs: number,
  strict: boolean,
): CheckResult {
  const decided: Verdict = verdict ?? { status: 'error', message: `scenario ${scenario.id} reached no verdict for this check` };
  const base = {
    id: check.id,
    rule: check.rule,
    level: check.level,
    title: check.title,
    transport,
    scenario: scenario.id,
    durationMs,
    transcript: connection?.transcript.entries ?? [],
  } as const;
  switch (decided.status) {
    case 'pass':
      return { ...base, status: 'pass', message: decided.note };
    case 'fail':
      return {
        ...base,
        status: check.level === 'MUST' || (check.level === 'SHOULD' && strict) ? 'fail' : 'warn',
        message: decided.message,
        expected: decided.expected,
        actual: decided.actual,
        diff: decided.diff,
      };
    case 'skip':
      return { ...base, status: 'skip', reason: decided.reason, message: decided.message };
    case 'error':
      return { ...base, status: 'error', message: decided.message };
  }
}
