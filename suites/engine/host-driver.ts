import { TargetStartError } from '../../harness/codex-session.js';
import type { ProcessScope } from '../../harness/process-scope.js';
import type { HostScenario } from './model.js';
import type { ScenarioRun } from './scenario-run.js';

/** Host mode's driver: the scenario drives the plan's host, which is stopped when the job's scope is aborted. */
export async function driveHostScenario(run: ScenarioRun, scope: ProcessScope): Promise<void> {
  const scenario = run.scenario as HostScenario;
  const { plan } = run.suite;
  const controller = new AbortController();
  const forget = scope.onAbort((reason) => controller.abort(reason));
  try {
    const driven = await scenario.drive({ host: plan.host!, transport: run.job.transport, selected: plan.select, signal: controller.signal });
    run.recorded.transcript = driven.transcript;
    if (driven.startFailure) throw new TargetStartError(driven.startFailure.message, driven.startFailure.stderrTail);
    run.serverStarted();
    for (const [id, verdict] of driven.verdicts) run.decide(id, verdict);
    run.clock.timing!.runMs = Date.now() - run.clock.t0;
  } finally {
    forget();
  }
}
