import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codexSandboxEntries, defaultState, STATE_KEY, STATE_KEY_DEPRECATED } from '../harness/codex-wire.js';
import { resolveExecAdapter, renderArguments, type ExecAdapter } from '../harness/exec-adapter.js';
import { TargetStartError } from '../harness/host-session.js';
import { ScenarioObservers } from '../harness/observers.js';
import { connect, type Connection, type Target } from '../harness/target.js';
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

export interface RunPlan {
  target: Target;
  exec?: { tool: string; arguments?: unknown; source: 'flag' | 'config' };
  options: RunOptions;
  jobs: number;
  /** Which checks to report (--only / --skip). */
  select: (checkId: string) => boolean;
  realCodex?: string;
}

export interface RunReport {
  results: CheckResult[];
  /** Set when the target never got through startup in any scenario. */
  startFailure?: { message: string; stderrTail: string };
  serverInfo?: unknown;
  capabilities?: unknown;
  durationMs: number;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

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

  const wanted = scenarios.filter((s) => s.checks.some((c) => plan.select(c.id)));
  // The control scenario runs whenever another scenario waits on it, and goes first, so that a
  // single job never waits on a scenario still queued behind it.
  const controlScenario = scenarios.find((s) => s.isControl);
  const queue = controlScenario && !wanted.includes(controlScenario) ? [controlScenario, ...wanted] : [...wanted];
  queue.sort((a, b) => Number(Boolean(b.isControl)) - Number(Boolean(a.isControl)));
  const resultsByScenario = new Map<Scenario, CheckResult[]>();

  const runOne = async (scenario: Scenario, index: number): Promise<void> => {
    const dir = join(root, `${index}-${scenario.id.replace(/[^a-z0-9-]+/gi, '_')}`);
    const t0 = Date.now();
    const verdicts = new Map<string, Verdict>();
    let connection: Connection | undefined;
    if (deadAtStart) {
      for (const check of scenario.checks) verdicts.set(check.id, couldNotRun(`target failed to start: ${deadAtStart.message}`));
    } else {
      try {
        const observers = await ScenarioObservers.create(dir, { realCodex: plan.realCodex });
        connection = await connect(plan.target, observers.pathTrapDir, plan.options.startupTimeoutMs);
        anyStarted = true;
        await runWithConnection(plan, scenario, connection, observers, control, verdicts);
      } catch (error) {
        if (error instanceof TargetStartError) {
          if (!anyStarted) deadAtStart ??= { message: error.message, stderrTail: error.stderrTail };
          for (const check of scenario.checks) verdicts.set(check.id, couldNotRun(`target failed to start: ${error.message}`));
        } else {
          for (const check of scenario.checks) {
            if (!verdicts.has(check.id)) verdicts.set(check.id, { status: 'error', message: `scenario crashed: ${(error as Error).stack ?? String(error)}` });
          }
        }
      } finally {
        if (scenario.isControl) control.publish({ works: false, detail: 'the control scenario did not finish' });
        await connection?.session.close();
      }
    }
    if (connection && !report.serverInfo) {
      report.serverInfo = connection.handshake.initializeResult.serverInfo;
      report.capabilities = connection.handshake.initializeResult.capabilities;
    }
    const durationMs = Date.now() - t0;
    resultsByScenario.set(
      scenario,
      scenario.checks
        .filter((check) => plan.select(check.id))
        .map((check) => toResult(check, verdicts.get(check.id), scenario, connection, durationMs, plan.options.strict)),
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
  report.results = wanted.flatMap((s) => resultsByScenario.get(s) ?? []);
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
    if (scenario.isControl) control.publish({ works: false, detail: 'the exec checks could not run' });
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
    execProbe: async (sandbox, extraArguments) => {
      if (!exec) throw new Error('execProbe called without an exec adapter');
      const nonce = observers.newNonce();
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
    transport: connection?.transport ?? 'stdio',
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
