// The conformance suite in a server's own tests (vitest): minimal-server.mjs, beside this file, must
// pass it as `npx mcp-sandbox-conformance ./minimal-server.mjs` would (exit 0). On a failure the test
// prints the suite's human report: each failing check, its rule and its diff.
//
// Needs: npm install --save-dev mcp-sandbox-conformance vitest

import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { toConform } from 'mcp-sandbox-conformance/vitest';

expect.extend({ toConform });

const server = fileURLToPath(new URL('./minimal-server.mjs', import.meta.url));

test('the server keeps the sandbox contract Codex gives servers that run commands', async () => {
  // The options are the CLI's flags, camelCased: { only: ['launcher/*'] }, { httpCommand: '...' }, { explore: 0 }, ...
  await expect([server]).toConform();
}, 300_000);
