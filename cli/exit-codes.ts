import type { GradedReport, GradedResult } from './grade.js';

export const EXIT = { ok: 0, violations: 1, usage: 2, incomplete: 3, targetFailed: 4 } as const;
/** Stopped by a signal (128 + its number), after the servers were killed and the temp files removed. */
export const EXIT_SIGNAL = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;

const couldNotRun = (r: GradedResult): boolean => r.status === 'skip' && r.reason === 'could-not-run';

/**
 * True for a could-not-run whose only cause is an expected failure: its blockedBy names a check
 * whose result (on the same transport, else on any) is xfail, or is itself a could-not-run blocked
 * that way (forwarding/state-fidelity waits on state-unchanged, which waits on the control).
 * Such a check says nothing new: the baseline already accepts the failure that kept it from running.
 */
export function blockedByExpectedFailure(result: GradedResult, results: GradedResult[], seen: Set<GradedResult> = new Set()): boolean {
  if (!couldNotRun(result) || !result.blockedBy || seen.has(result)) return false;
  seen.add(result);
  const sameId = results.filter((r) => r.id === result.blockedBy);
  const sameTransport = sameId.filter((r) => r.transport === result.transport);
  const blockers = sameTransport.length ? sameTransport : sameId;
  return blockers.length > 0 && blockers.every((b) => b.status === 'xfail' || blockedByExpectedFailure(b, results, seen));
}

/**
 * 4 when the target never started; 1 for violations; 3 when a check that applies could not run,
 * unless it could not run only because of a failure the baseline expects (blockedByExpectedFailure).
 */
export function exitCodeFor(report: GradedReport): number {
  if (report.startFailure) return EXIT.targetFailed;
  if (report.results.some((r) => r.status === 'fail' || r.status === 'xpass')) return EXIT.violations;
  const incomplete = (r: GradedResult) => r.status === 'error' || (couldNotRun(r) && !blockedByExpectedFailure(r, report.results));
  if (report.results.some(incomplete)) return EXIT.incomplete;
  return EXIT.ok;
}
