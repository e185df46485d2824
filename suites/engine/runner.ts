import type { Transport } from '../../harness/codex-wire.js';
import { indexChecks } from './checks.js';
import { driveHostScenario } from './host-driver.js';
import { planJobs, type Job } from './jobs.js';
import { drivesHost, type AnyScenario, type Finding } from './model.js';
import type { RunPlan, RunReport } from './plan.js';
import { JobPool } from './pool.js';
import { ScenarioRun } from './scenario-run.js';
import { driveServerScenario } from './server-driver.js';
import { SuiteRun } from './suite-run.js';

export { DEFAULT_RUN_TIMEOUT_MS, defaultScenarioTimeoutMs, type ProgressEvent, type RunPlan, type RunReport, type StartFailure } from './plan.js';
export { sandboxOptIn } from './server-driver.js';

/**
 * Jobs under way at once (their servers starting, or waiting to act), at least: a server that takes
 * seconds to start mostly waits, and the long scenarios hold their place for most of the run.
 * Measured on a 2 s starter, 2 cores: 6 under way took 26 s, 10 took 17 s, 16 took 13 s.
 */
const MIN_UNDER_WAY = 16;

/**
 * Runs `scenarios` as the plan says: one job per scenario and transport, `plan.jobs` at a time;
 * once every server is gone, the sandbox monitor judges every call of the run, and each check's
 * verdict is decided (verdict.ts).
 */
export async function runSuite(plan: RunPlan, scenarios: AnyScenario[]): Promise<RunReport> {
  const { jobs, queue, tasks, residents, control, transports } = planJobs(plan, scenarios);
  const suite = new SuiteRun(plan, indexChecks(scenarios.flatMap((s) => s.checks)), control, queue.length);
  const runs = new Map<Job, ScenarioRun>();
  let findings: Finding[];
  try {
    suite.progress({ kind: 'start', total: queue.length });
    const start = (job: Job, index: number) => {
      const run = new ScenarioRun(suite, job, index);
      runs.set(job, run);
      return run.execute(drivesHost(job.scenario) ? driveHostScenario : driveServerScenario);
    };
    // Once a server has started and said whether it opts in (so a dead or unwilling target costs
    // no wave of starts), start-ups overlap beyond --jobs: a server that takes seconds to start
    // mostly waits, and acting on servers is what --jobs bounds. Host runs compute: no overlap.
    suite.pool = new JobPool(plan.jobs);
    suite.onServerKnown = () => {
      if (!plan.host) suite.pool?.widen(Math.max(plan.jobs * 2, MIN_UNDER_WAY));
    };
    const { residentRuns, headStart } = startResidents(suite, residents, (job, k) => start(job, queue.length + k));
    const others = headStart
      .then(() => suite.pool!.run(tasks.map((task) => () => takeTurns(suite, task, (job) => start(job, queue.indexOf(job))))))
      .finally(() => {
        suite.shared.retireAll();
        suite.othersDone();
      });
    // Once the others are done, each resident's life says how long it goes on.
    void suite.lifetime.othersDone.then(() => {
      for (const [job, life] of suite.residents) if (runs.has(job)) void life.othersDone(runs.get(job)!.deadline, suite.scenarioTimeoutMs);
    });
    await Promise.all([others, residentRuns]);
  } finally {
    await suite.stop();
    // Every server is gone, and so is whatever escaped them: whatever was going to run has run.
    findings = await judgeEveryCall(suite, [...runs.values()]);
    await suite.removeFiles();
  }
  // Report order follows the scenario list, whatever order they finished in.
  const ran = jobs.flatMap((job) => runs.get(job) ?? []);
  const findingsOf = chargeFindings([...runs.values()], findings);
  return {
    scenarios: ran.map((run) => run.record()),
    results: ran.flatMap((run) => run.results((id) => findingsOf(id, run.job.transport))),
    ...startFailure(suite),
    ...(suite.server ? { serverInfo: suite.server.info, capabilities: suite.server.capabilities } : {}),
    transports,
    ...(suite.exec ? { exec: suite.exec } : {}),
    ...(suite.tools ? { tools: suite.tools } : {}),
    ...(suite.sessions?.length ? { sessions: suite.sessions } : {}),
    ...(plan.host ? {} : { elicitation: { answer: plan.options.elicitation ?? 'accept', requests: ran.flatMap((run) => run.recorded.elicitations) } }),
    durationMs: Date.now() - suite.started,
    stats: statsOf(suite),
  };
}

/**
 * The residents start first, outside the job slots, and the others once the residents send their
 * first calls (`headStart`, at most their head start later): a resident's life (idle gaps in full
 * after its first call) is the run's longest path, and behind a wave of start-ups an SDK server's
 * HTTP resident made its first call 3.4 s in. A resident that ends says so too.
 */
function startResidents(suite: SuiteRun, residents: Job[], start: (job: Job, k: number) => Promise<void>) {
  const lives = residents.map((job) => suite.residents.set(job, job.scenario.resident!.life(suite.plan.options)).get(job)!);
  const residentRuns = Promise.all(residents.map((job, k) => start(job, k).finally(() => lives[k]!.reached('calling'))));
  const headStartMs = Math.max(0, ...lives.map((life) => life.headStartMs));
  const headStart = Promise.race([Promise.all(lives.map((life) => life.calling)), new Promise((resolve) => setTimeout(resolve, headStartMs))]);
  return { residentRuns, headStart };
}

/**
 * A task of several jobs takes turns on its transport's shared server, one job after another; once
 * one went wrong on it (SharedServers.troubled), the rest run side by side, each on a server of its own.
 */
async function takeTurns(suite: SuiteRun, task: Job[], start: (job: Job) => Promise<void>): Promise<void> {
  for (const [k, job] of task.entries()) {
    await start(job);
    if (task.length > 1 && suite.shared.troubled.has(job.transport)) {
      await Promise.all(task.slice(k + 1).map(start));
      return;
    }
  }
}

/** The monitor's findings over every call of the run: each scenario's log, or the shared server's it wrote to. */
async function judgeEveryCall(suite: SuiteRun, runs: ScenarioRun[]): Promise<Finding[]> {
  const logs = new Set([...runs.map((run) => run.log), ...suite.shared.logs]);
  return (await Promise.all([...logs].map((log) => log.judge(suite.checks)))).flat();
}

/**
 * Each finding goes to the check it is charged to on its transport, or to its call's own check
 * when the charged one is not reported in this run (--only/--skip).
 */
function chargeFindings(runs: ScenarioRun[], findings: Finding[]): (checkId: string, transport: Transport) => Finding[] {
  const key = (id: string, transport: Transport) => `${id}|${transport}`;
  const rows = new Set(runs.flatMap((run) => run.reported().map((check) => key(check.id, run.job.transport))));
  const charged = new Map<string, Finding[]>();
  for (const finding of findings) {
    const own = key(finding.check.id, finding.transport);
    const fallback = finding.fallback ? key(finding.fallback.id, finding.transport) : undefined;
    const row = rows.has(own) ? own : fallback && rows.has(fallback) ? fallback : undefined;
    if (row) charged.set(row, [...(charged.get(row) ?? []), finding]);
  }
  return (checkId, transport) => charged.get(key(checkId, transport)) ?? [];
}

/** What the run started and sent, for the report header and JSON stats. */
function statsOf(suite: SuiteRun): NonNullable<RunReport['stats']> {
  return {
    serverStarts: suite.serverStarts,
    scenariosRun: suite.scenariosRun,
    startsSaved: suite.startsSaved,
    startsShared: suite.startsShared,
    ...(suite.startsBy.size ? { startsBy: Object.fromEntries(suite.startsBy) } : {}),
    ...(suite.longestCommandMs ? { longestCommandMs: suite.longestCommandMs } : {}),
  };
}

/** Set when the target never got through startup in any scenario; the stdio target's too when only HTTP did (no other transport hides it). */
function startFailure(suite: SuiteRun): Pick<RunReport, 'startFailure'> {
  const stdio = suite.startedOnce.has('stdio') ? undefined : suite.deadAtStart.get('stdio');
  if (stdio) return { startFailure: stdio };
  if (suite.startedOnce.size > 0 || suite.deadAtStart.size === 0) return {};
  return { startFailure: [...suite.deadAtStart.values()][0] };
}
