import { expect, test } from 'vitest';
import { allChecks } from '../suites/index.js';
import { sequencesHoldContract } from '../suites/server/explore.js';
import { soakHoldsContract } from '../suites/server/lifetime.js';
import { matrix, mutantCases, ONLY_EXPLORATION_FINDS } from './matrix-cases.js';

// The self-test: the reference passes every check (test/cli.test.ts runs it as a default run, from
// its source, over both transports); every check has a mutant; and half of the mutant table (the
// other half runs in matrix-2.test.ts).
test('every check can fail: some mutant in the matrix fails (or warns on) it', () => {
  const caught = new Set(Object.values(matrix).flatMap((c) => [...c.fail, ...c.warn].map((finding) => finding.split(' ')[1]!)));
  // Exploration's mutants are in test/explore.test.ts.
  if (ONLY_EXPLORATION_FINDS.length > 0) caught.add(sequencesHoldContract.id);
  // The soak's mutant (sandbox-off-after-calls, with a short soak) is in test/explore.test.ts.
  caught.add(soakHoldsContract.id);
  // Checks of the real-sandbox tier have their mutant in test/enforcement.test.ts.
  const fakeTier = allChecks.filter((c) => !c.needs.includes('codex'));
  expect(fakeTier.map((c) => c.id).filter((id) => !caught.has(id))).toEqual([]);
});

mutantCases(0);
