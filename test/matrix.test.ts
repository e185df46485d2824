import { expect, test } from 'vitest';
import { allChecks } from '../suites/index.js';
import { sequencesHoldContract } from '../suites/server/explore.js';
import { soakHoldsContract } from '../suites/server/lifetime.js';
import { casesOfTier, mutantCases, ONLY_EXPLORATION_FINDS } from './matrix-cases.js';
import { EXPLORED_IN_GATE, PROOF_ONLY_FILES, WHOLE_PROOF } from './tier.js';

// The self-test: the reference passes every check (test/cli.test.ts runs it as a default run, from
// its source, over both transports); every check has a mutant, in this tier too; and half of this
// tier's mutant table (the other half runs in matrix-2.test.ts).
test(`every check can fail: some mutant in ${WHOLE_PROOF ? 'the whole proof' : 'the gate (npm test)'} fails (or warns on) it`, () => {
  const caught = new Set(Object.values(casesOfTier()).flatMap((c) => [...c.fail, ...c.warn].map((finding) => finding.split(' ')[1]!)));
  // Exploration's mutants are in test/explore.test.ts, which the gate runs too (with one of them).
  expect(PROOF_ONLY_FILES).not.toContain('test/explore.test.ts');
  expect(ONLY_EXPLORATION_FINDS).toContain(EXPLORED_IN_GATE);
  caught.add(sequencesHoldContract.id);
  // The soak's mutant (sandbox-off-after-calls, with a short soak) is in test/explore.test.ts, in both tiers.
  caught.add(soakHoldsContract.id);
  // Checks of the real-sandbox tier have their mutant in test/enforcement.test.ts, in both tiers;
  // host checks theirs in test/host-mode.test.ts (the gate: every check failing at once).
  expect(PROOF_ONLY_FILES).not.toContain('test/enforcement.test.ts');
  expect(PROOF_ONLY_FILES).not.toContain('test/host-mode.test.ts');
  const fakeTier = allChecks.filter((c) => !c.needs.includes('codex'));
  expect(fakeTier.map((c) => c.id).filter((id) => !caught.has(id))).toEqual([]);
});

mutantCases(0);
