import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root, found from this module whether it runs from source (vitest) or from dist/. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('mcp-sandbox-conformance: package root not found');
    dir = parent;
  }
  return dir;
}

export const fixturesDir = (): string => join(packageRoot(), 'fixtures');
