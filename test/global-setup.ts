import { buildFixtureBundles } from './fixtures/bundles.js';

/** Before any test file runs: the fixture servers' bundles (see test/fixtures/bundles.ts). */
export default async function setup(): Promise<void> {
  await buildFixtureBundles();
}
