import { rmSync } from 'node:fs';
import { basename } from 'node:path';
import { buildFixtureBundles } from './fixtures/bundles.js';

/** Before any test file runs: the fixture servers' bundles (see test/fixtures/bundles.ts). */
export default async function setup(): Promise<() => void> {
  await buildFixtureBundles();
  // After the run: the empty HOME vitest.config.ts made for it.
  return () => {
    const home = process.env.HOME;
    if (home && basename(home).startsWith('msc-test-home-')) rmSync(home, { recursive: true, force: true });
  };
}
