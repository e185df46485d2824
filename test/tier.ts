/**
 * Our tests come in two tiers. `npm test` runs the gate: the unit tests, the CLI, and the proof
 * that every check can fail (for every check id, one mutant that fails it, chosen from the
 * declarations: test/matrix-cases.ts gateCases) with the reference passing every check; it runs in
 * about two minutes. `npm run test:all` (MSC_TEST_TIER=all, what CI's .ci/run runs) is the whole
 * proof: every mutant over every transport it declares, every correct unusual server, exploration
 * and host mode in full, the soak, the real Codex, the package, the bounds.
 */
export const WHOLE_PROOF = process.env.MSC_TEST_TIER === 'all';

/** The files only the whole proof runs (vitest.config.ts leaves them out of the gate). */
export const PROOF_ONLY_FILES = [
  'test/unusual.test.ts',
  'test/package.test.ts',
  'test/bounded.test.ts',
  'test/chaos.test.ts',
  'test/action.test.ts',
  'test/codex-config.test.ts',
  'test/minimal-example.test.ts',
  'test/server-environment.test.ts',
  'test/elicitation.test.ts',
  'test/host-reports.test.ts',
  // The fake host against the real Codex, message by message: the wire's fidelity, not a check's.
  'test/differential.test.ts',
];

/**
 * The one exploration-only mutant the gate explores (test/explore.test.ts): one is enough to show
 * that explore/sequences-hold-contract can fail; that exploration misses none of them, and the
 * lifetime defects, the stories and the replays, are the whole proof's.
 */
export const EXPLORED_IN_GATE = 'launcher-cache-by-state';
