import { describe, expect, test } from 'vitest';
import { allChecks } from '../suites/index.js';
import { referenceSource, runAgainst } from './helpers.js';
import { EXPLORE_DEFAULTS, sequencesHoldContract } from '../suites/explore.js';
import { matrix, mutantCases, ONLY_EXPLORATION_FINDS } from './matrix-cases.js';

// The self-test, half one: the reference passes every check; every check has a mutant; and half of
// the mutant table (the other half runs in matrix-2.test.ts).
describe('reference server', () => {
  test('passes every check', async () => {
    // Exploration on, with the default budget and seed, as a default run has it.
    const report = await runAgainst([referenceSource], { explore: EXPLORE_DEFAULTS });
    // Everything passes, except what needs a real Codex (--codex), which is not applicable here.
    const expected = report.results.map(
      (r) => `${r.transport} ${r.id} ${allChecks.find((c) => c.id === r.id)!.needs.includes('codex') ? 'skip not-applicable' : 'pass'}`,
    );
    expect(report.results.map((r) => `${r.transport} ${r.id} ${r.status}${r.reason ? ` ${r.reason}` : ''}`)).toEqual(expected);
    // Every check ran on at least one transport.
    expect([...new Set(report.results.map((r) => r.id))].sort()).toEqual(allChecks.map((c) => c.id).sort());
  });
});

test('every check can fail: some mutant in the matrix fails (or warns on) it', () => {
  const caught = new Set(Object.values(matrix).flatMap((c) => [...c.fail, ...c.warn].map((finding) => finding.split(' ')[1]!)));
  // Exploration's mutants are in test/explore.test.ts.
  if (ONLY_EXPLORATION_FINDS.length > 0) caught.add(sequencesHoldContract.id);
  // Checks of the real-sandbox tier have their mutant in test/enforcement.test.ts.
  const fakeTier = allChecks.filter((c) => !c.needs.includes('codex'));
  expect(fakeTier.map((c) => c.id).filter((id) => !caught.has(id))).toEqual([]);
});

mutantCases(0);
