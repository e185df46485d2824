import type { GradedReport, GradedResult } from './grade.js';

export const EXIT = { ok: 0, violations: 1, usage: 2, incomplete: 3, targetFailed: 4 } as const;
/** Stopped by a signal (128 + its number), after the servers were killed and the temp files removed. */
export const EXIT_SIGNAL = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;

const couldNotRun = (r: GradedResult): boolean => r.status === 'skip' && r.reason === 'could-not-run';

/**
 * True for a could-not-run whose only cause is an expected failure: its blockedBy names a check
 * whose result (on the same transport, else on any) is xfail, or is itself a could-not-run blocked
 * that way (forwarding/state-fidelity waits on state-unchanged, which waits on the control), or a
 * check `skipped` (what --skip left out: the user set that cause aside, as a baseline entry would).
 * Such a check says nothing new: the baseline already accepts the failure that kept it from running.
 */
export function blockedByExpectedFailure(result: GradedResult, results: GradedResult[], skipped: readonly string[] = []): boolean {
  const seen = new Set<GradedResult>();
  const expected = (r: GradedResult): boolean => {
    if (!couldNotRun(r) || !r.blockedBy || seen.has(r)) return false;
    seen.add(r);
    const sameId = results.filter((b) => b.id === r.blockedBy);
    if (sameId.length === 0) return skipped.includes(r.blockedBy);
    const sameTransport = sameId.filter((b) => b.transport === r.transport);
    const blockers = sameTransport.length ? sameTransport : sameId;
    return blockers.every((b) => b.status === 'xfail' || expected(b));
  };
  return expected(result);
}

/**
 * 4 when the target never started; 1 for violations; 3 when a check that applies could not run,
 * unless it could not run only because of a failure the baseline expects, or a check --skip left out
 * (blockedByExpectedFailure).
 */
export function exitCodeFor(report: GradedReport): number {
  if (report.startFailure) return EXIT.targetFailed;
  if (report.results.some((r) => r.status === 'fail' || r.status === 'xpass')) return EXIT.violations;
  const incomplete = (r: GradedResult) => r.status === 'error' || (couldNotRun(r) && !blockedByExpectedFailure(r, report.results, report.skipped));
  if (report.results.some(incomplete)) return EXIT.incomplete;
  return EXIT.ok;
}
