import { defineConfig } from 'vitest/config';
import CpuBoundFirst from './test/sequencer.js';

// Also here, not only in test/setup-env.ts: the worker processes vitest forks (one per test file)
// then start without loading NODE_EXTRA_CA_CERTS too (about 0.1 CPU-s each on these machines).
delete process.env.NODE_EXTRA_CA_CERTS;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup-env.ts'],
    // Bundles the fixture servers once per run (test/fixtures/bundles.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // The matrix files alone fill both cores (their cases run at once, each starting servers); a
    // third worker runs the files that mostly wait beside them (test/sequencer.ts).
    maxWorkers: 3,
    sequence: { sequencer: CpuBoundFirst },
  },
});
