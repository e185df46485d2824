import type { CheckResult } from '../suites/model.js';

/**
 * The one place a finding's level becomes its status: a failed MUST check fails the run; a failed
 * SHOULD check warns, unless `strict` (--strict, --fail-on should); a failed INFO check warns.
 * The suites report every finding as `fail`; the baseline (cli/baseline.ts) comes after this.
 */
export function grade<R extends Pick<CheckResult, 'status' | 'level'>>(results: R[], strict: boolean): R[] {
  return results.map((r) => (r.status === 'fail' && !(r.level === 'MUST' || (r.level === 'SHOULD' && strict)) ? { ...r, status: 'warn' } : r));
}

/** --strict or --fail-on should. */
export const strictOf = (args: { strict?: boolean; 'fail-on'?: string }): boolean => Boolean(args.strict) || args['fail-on'] === 'should';
