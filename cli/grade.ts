import type { CheckResult, Status } from '../suites/engine/model.js';
import type { RunReport } from '../suites/engine/runner.js';

/**
 * A status as the reports show it. The suites decide `Status` (pass, fail, skip, error: a finding
 * is `fail` at every level); grade() makes a finding that does not fail the run `warn`, and the
 * baseline (cli/baseline.ts) makes a listed failure `xfail` and a listed pass `xpass`.
 */
export type GradedStatus = Status | 'warn' | 'xfail' | 'xpass';

/** A result after grading (and the baseline): what the baseline, the reporters and the exit code read. */
export interface GradedResult extends Omit<CheckResult, 'status'> {
  status: GradedStatus;
}

/** A run's report with its results graded, and the checks --skip left out (their ids: a blocker the user set aside). */
export type GradedReport = Omit<RunReport, 'results'> & { results: GradedResult[]; skipped?: string[] };

/**
 * The one place a finding's level becomes its status: a failed MUST check fails the run; a failed
 * SHOULD check warns, unless `strict` (--strict, --fail-on should); a failed INFO check warns.
 * The suites report every finding as `fail`; the baseline (cli/baseline.ts) comes after this.
 */
export function grade(results: CheckResult[], strict: boolean): GradedResult[] {
  return results.map((r): GradedResult => (r.status === 'fail' && !(r.level === 'MUST' || (r.level === 'SHOULD' && strict)) ? { ...r, status: 'warn' } : r));
}

/** --strict or --fail-on should. */
export const strictOf = (args: { strict?: boolean; 'fail-on'?: string }): boolean => Boolean(args.strict) || args['fail-on'] === 'should';
