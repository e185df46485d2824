import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup-env.ts'],
    // Bundles the fixture servers once per run (test/fixtures/bundles.ts).
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // Each matrix case starts a dozen servers of its own; two files at a time fill both cores.
    maxWorkers: 2,
  },
});
