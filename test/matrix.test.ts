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
  'runs-without-launcher': { fail: [...LAUNCHER_FAIL_CLOSED, 'transport/http-fails-closed'] },
  'accepts-malformed-launcher': { fail: ['launcher/not-an-object', 'launcher/relative-path'] },
  'runs-without-state': { fail: ['launcher/state-missing', 'launcher/state-not-object'] },
  'rejects-both-keys': { fail: ['aliases/both-keys'] },
  'ignores-deprecated-key': { fail: ['aliases/deprecated-key-only'] },
  'ignores-current-key': { fail: ['aliases/current-key-only'] },
  // Over both transports: each capability finding shows once for stdio and once for HTTP.
  'no-capability': { fail: ['capability/advertised', 'capability/advertised'], warn: ['capability/current-name', 'capability/current-name'] },
  'capability-deprecated-name': { fail: [], warn: ['capability/current-name', 'capability/current-name'] },
  'capability-top-level': { fail: ['capability/advertised', 'capability/advertised'], warn: ['capability/current-name', 'capability/current-name'] },
  'capability-not-object': { fail: ['capability/advertised', 'capability/advertised'], warn: ['capability/current-name', 'capability/current-name'] },
  'http-runs-directly': { fail: ['transport/http-fails-closed'] },
  'launcher-over-http': { fail: [], warn: ['transport/http-ignores-launcher'] },
};

describe('reference server', () => {
  test('passes every check', async () => {
    const report = await runAgainst([referenceServer]);
    const expected = report.results.map((r) => `${r.transport} ${r.id} pass`);
    expect(report.results.map((r) => `${r.transport} ${r.id} ${r.status} ${r.message ?? ''}`.trim())).toEqual(expected);
    // Every check ran on at least one transport.
    expect([...new Set(report.results.map((r) => r.id))].sort()).toEqual(allChecks.map((c) => c.id).sort());
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
