import { describe, expect, test } from 'vitest';
import { allChecks } from '../suites/index.js';
import { idsWith, mutantsServer, referenceServer, runAgainst } from './helpers.js';

/**
 * The self-test: the reference passes every check, and each mutant (the reference with one
 * defect) fails exactly the checks aimed at that defect, no more. `warn` lists SHOULD findings.
 */
interface Case {
  fail: string[];
  warn?: string[];
}

const LAUNCHER_FAIL_CLOSED = [
  'launcher/absent-fails-closed',
  'launcher/missing-file',
  'launcher/not-an-object',
  'launcher/not-executable',
  'launcher/relative-path',
];

export const matrix: Record<string, Case> = {
  'path-search': { fail: ['launcher/runs-given-executable'] },
  'drops-unknown-fields': { fail: ['forwarding/state-unchanged'] },
  'adds-field': { fail: ['forwarding/state-unchanged'] },
  'extra-flag': { fail: ['forwarding/argv-shape'] },
  'split-state': { fail: ['forwarding/argv-shape', 'forwarding/state-unchanged'] },
  'shell-wraps-command': { fail: ['forwarding/argv-shape'] },
  'runs-without-launcher': { fail: LAUNCHER_FAIL_CLOSED },
  'accepts-malformed-launcher': { fail: ['launcher/not-an-object', 'launcher/relative-path'] },
  'runs-without-state': { fail: ['launcher/state-missing', 'launcher/state-not-object'] },
  'rejects-both-keys': { fail: ['aliases/both-keys'] },
  'ignores-deprecated-key': { fail: ['aliases/deprecated-key-only'] },
  'ignores-current-key': { fail: ['aliases/current-key-only'] },
  'no-capability': { fail: ['capability/advertised'], warn: ['capability/current-name'] },
  'capability-deprecated-name': { fail: [], warn: ['capability/current-name'] },
  'capability-top-level': { fail: ['capability/advertised'], warn: ['capability/current-name'] },
  'capability-not-object': { fail: ['capability/advertised'], warn: ['capability/current-name'] },
};

describe('reference server', () => {
  test('passes every check', async () => {
    const report = await runAgainst([referenceServer]);
    expect(report.results.map((r) => `${r.id} ${r.status} ${r.message ?? ''}`.trim())).toEqual(allChecks.map((c) => `${c.id} pass`));
  });
});

describe.concurrent('mutants fail exactly the checks aimed at their defect', () => {
  for (const [mutant, expected] of Object.entries(matrix)) {
    test(mutant, async () => {
      const report = await runAgainst([mutantsServer, mutant]);
      expect(idsWith(report.results, 'fail')).toEqual([...expected.fail].sort());
      expect(idsWith(report.results, 'warn')).toEqual([...(expected.warn ?? [])].sort());
      expect(idsWith(report.results, 'error')).toEqual([]);
    });
  }
});

test('every check can fail: some mutant in the matrix fails (or warns on) it', () => {
  const caught = new Set(Object.values(matrix).flatMap((c) => [...c.fail, ...(c.warn ?? [])]));
  expect(allChecks.map((c) => c.id).filter((id) => !caught.has(id))).toEqual([]);
});
