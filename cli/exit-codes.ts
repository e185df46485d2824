import type { RunReport } from '../suites/runner.js';

export const EXIT = { ok: 0, violations: 1, usage: 2, incomplete: 3, targetFailed: 4 } as const;
/** Stopped by a signal (128 + its number), after the servers were killed and the temp files removed. */
export const EXIT_SIGNAL = { SIGINT: 130, SIGTERM: 143 } as const;

/** 4 when the target never started; 1 for violations; 3 when a check that applies could not run. */
export function exitCodeFor(report: RunReport): number {
  if (report.startFailure) return EXIT.targetFailed;
  if (report.results.some((r) => r.status === 'fail' || r.status === 'xpass')) return EXIT.violations;
  if (report.results.some((r) => r.status === 'error' || (r.status === 'skip' && r.reason === 'could-not-run'))) return EXIT.incomplete;
  return EXIT.ok;
}
