import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import CpuBoundFirst from './test/sequencer.js';
import { PROOF_ONLY_FILES, WHOLE_PROOF } from './test/tier.js';

// Also here, not only in test/setup-env.ts: the worker processes vitest forks (one per test file)
// then start without loading NODE_EXTRA_CA_CERTS too (about 0.1 CPU-s each on these machines).
delete process.env.NODE_EXTRA_CA_CERTS;
// An empty HOME of the run's own (test/global-setup.ts removes it): the servers the tests start
// get HOME from us, and a login shell one of them runs outside a launch (`bash -lc`, as many
// mutants do) must not read this machine's profile (pyenv's rehash lock there can stall it 60 s).
process.env.HOME = mkdtempSync(join(tmpdir(), 'msc-test-home-'));

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // npm test runs the gate; npm run test:all (MSC_TEST_TIER=all) the whole proof (test/tier.ts).
    exclude: [...configDefaults.exclude, ...(WHOLE_PROOF ? [] : PROOF_ONLY_FILES)],
    setupFiles: ['test/setup-env.ts'],
    // Bundles the fixture servers once per run (test/fixtures/bundles.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // The matrix files alone fill both cores (their cases run at once, each starting servers). Two
    // workers, five cases at once each: with three and ten, a full run held a load of 25-30 on two
    // cores and correct servers' HTTP startups took 24 s (catalog/startup-headroom failed); fewer at
    // once is slower but steady, and a flaky test is a bug. The gate's files mostly wait (CLI runs,
    // residents' idle gaps): four of them at once keep both cores busy.
    maxWorkers: WHOLE_PROOF ? 2 : 4,
    maxConcurrency: 5,
    sequence: { sequencer: CpuBoundFirst },
  },
});
