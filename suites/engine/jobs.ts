import type { Transport } from '../../harness/codex-wire.js';
import { drivesHost, type AnyScenario, type ControlFacts } from './model.js';
import type { RunPlan } from './plan.js';

/** One scenario on one transport. `runs` is false for a scenario whose transport the plan lacks: it still reports its checks. */
export interface Job {
  scenario: AnyScenario;
  transport: Transport;
  runs: boolean;
}

/** The positive control's facts (does the exec tool work at all?), published once by the control scenario. */
export class Control {
  private resolve!: (facts: ControlFacts) => void;
  readonly facts = new Promise<ControlFacts>((resolve) => (this.resolve = resolve));
  /** The facts, once published (the first publication counts, as for the promise). */
  known?: ControlFacts;
  private settle!: () => void;
  /**
   * Resolves once the facts are in, or once the control's server has been up for
   * CONTROL_PATIENCE_MS without them: a control call that hangs must not hold back the scenarios
   * that wait on it (ScenarioRun) for a whole scenario timeout; they then start without its facts.
   */
  readonly settled = new Promise<void>((resolve) => (this.settle = resolve));
  publish(facts: ControlFacts): void {
    this.known ??= facts;
    this.resolve(facts);
    this.settle();
  }
  /** The control's server has started: its call is on its way. */
  serverUp(): void {
    setTimeout(this.settle, CONTROL_PATIENCE_MS).unref();
  }
}

/** How long the scenarios that wait on the control wait for its call once its server is up (a healthy call takes a fraction of this). */
export const CONTROL_PATIENCE_MS = 1_000;

export interface JobPlan {
  /** In the scenario list's order: the report's order. */
  jobs: Job[];
  /** In running order: the control first, then the long scenarios. */
  queue: Job[];
  /**
   * The queue as the pool runs it: a job alone, or the jobs of a transport that take turns on its
   * shared server (Scenario.shares 'calls'), one after another in queue order, as one task where the first stands.
   */
  tasks: Job[][];
  /** Resident scenarios (ScenarioBase.resident), one job per transport: started first, outside the job slots. */
  residents: Job[];
  control: Control;
  transports: Transport[];
}

/** The jobs of a run: one per scenario with a selected check and transport it applies to. */
export function planJobs(plan: RunPlan, scenarios: AnyScenario[]): JobPlan {
  const transports: Transport[] = plan.host?.transports ?? (['stdio', 'http'] as const).filter((t) => plan.targets[t]);
  const jobs: Job[] = [];
  const residents: Job[] = [];
  for (const scenario of scenarios) {
    if (scenario.resident) {
      // Off when asked, when replaying one sequence, and when none of the checks it charges is reported.
      const wanted = plan.options.resident !== false && !plan.options.explore?.replay && scenario.resident.charges.some((id) => plan.select(id));
      if (wanted) for (const transport of scenario.transports.filter((t) => transports.includes(t))) residents.push({ scenario, transport, runs: true });
      continue;
    }
    if (!scenario.checks.some((c) => plan.select(c.id))) continue;
    const usable = scenario.transports.filter((t) => transports.includes(t));
    if (usable.length === 0) jobs.push({ scenario, transport: scenario.transports[0]!, runs: false });
    for (const transport of usable) jobs.push({ scenario, transport, runs: true });
  }
  const control = new Control();
  const queue = withControl(plan, scenarios, jobs, control);
  // The control first; then the long scenarios, so that none of them is left for the end alone.
  const rank = (job: Job) => (job.scenario.isControl ? 0 : job.scenario.long ? 1 : 2);
  queue.sort((a, b) => rank(a) - rank(b));
  return { jobs, queue, tasks: tasksOf(queue), residents, control, transports };
}

function tasksOf(queue: Job[]): Job[][] {
  const tasks: Job[][] = [];
  const turns = new Map<Transport, Job[]>();
  for (const job of queue) {
    if (!job.runs || drivesHost(job.scenario) || job.scenario.shares !== 'calls') {
      tasks.push([job]);
      continue;
    }
    let group = turns.get(job.transport);
    if (!group) {
      group = [];
      turns.set(job.transport, group);
      tasks.push(group);
    }
    group.push(job);
  }
  // Within a turn order, the scenarios that also send calls without authority go last (ScenarioBase.lastTurn).
  for (const group of turns.values()) group.sort((a, b) => Number(Boolean(a.scenario.lastTurn)) - Number(Boolean(b.scenario.lastTurn)));
  return tasks;
}

/**
 * The control runs whenever another scenario waits on it, and goes first, so that a single
 * worker never waits on a scenario still queued behind it. Without one, the facts say why.
 */
function withControl(plan: RunPlan, scenarios: AnyScenario[], jobs: Job[], control: Control): Job[] {
  const controlScenario = scenarios.find((s) => s.isControl);
  const isStdioControl = (j: Job) => j.scenario === controlScenario && j.transport === 'stdio';
  if (!plan.targets.stdio) control.publish({ works: false, detail: 'no stdio target ran the control call; give the stdio command too' });
  // Only scenarios that run commands wait on the control: without them it would be a server start for nothing.
  const needsControl = jobs.some((j) => j.runs && (j.scenario.needs.includes('exec') || j.scenario.checks.some((c) => c.needs.includes('exec'))));
  const queue: Job[] =
    controlScenario && plan.targets.stdio && !jobs.some(isStdioControl) && needsControl
      ? [{ scenario: controlScenario, transport: 'stdio', runs: true }, ...jobs]
      : [...jobs];
  if (!queue.some(isStdioControl)) control.publish({ works: false, detail: 'the control scenario did not run (no selected check runs a command over stdio)' });
  return queue;
}
