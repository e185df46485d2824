import type { RunReport } from '../suites/runner.js';

export const EXIT = { ok: 0, violations: 1, usage: 2, incomplete: 3, targetFailed: 4 } as const;

/** 4 when the target never started; 1 for violations; 3 when a check that applies could not run. */
export function exitCodeFor(report: RunReport): number {
  if (report.startFailure) return EXIT.targetFailed;
  if (report.results.some((r) => r.status === 'fail' || r.status === 'xpass')) return EXIT.violations;
  if (report.results.some((r) => r.status === 'error' || (r.status === 'skip' && r.reason === 'could-not-run'))) return EXIT.incomplete;
  return EXIT.ok;
}
