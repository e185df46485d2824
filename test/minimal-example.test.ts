import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { locateRealCodex } from '../harness/real-codex.js';
import { runCli } from './fixtures/run-cli.js';
import { root } from './helpers.js';
import { bundled } from './fixtures/bundles.js';

/**
 * examples/minimal-server.mjs is the file server authors copy, so it must stay short and pass
 * every check it can be given: all but the session checks (it has no sessions), the HTTP checks
 * (it serves stdio only), RES-1 (it lists no resources) and execution/every-exec-tool (one exec tool). With the real Codex installed (the
 * devDependency), the enforcement checks run too.
 */
const example = join(root, 'examples/minimal-server.mjs');
/** The same file bundled, to start faster (test/fixtures/bundles.ts): the run below starts dozens of servers. */
const exampleServer = bundled('examples/minimal-server.mjs');
const realCodex = locateRealCodex();
const codexPath = 'path' in realCodex ? realCodex.path : undefined;

const notApplicableHere = (id: string): boolean =>
  /^authority\/session-/.test(id) ||
  id.startsWith('transport/http-') ||
  id.startsWith('resources/') ||
  id === 'explore/soak-holds-contract' || // not applicable without --soak
  id === 'execution/every-exec-tool' || // it has one exec tool, which every other check drives
  (!codexPath && id.startsWith('enforcement/'));

test('the minimal example stays short', () => {
  expect(readFileSync(example, 'utf8').split('\n').length).toBeLessThanOrEqual(120);
});

test('the minimal example passes every check that needs no session, HTTP or resources', async () => {
  // As a default run, exploration on, but two sequences: under the real Codex each sequence costs
  // about 1.7 CPU-s (every launch a real sandbox); the reference explores the default twelve in test/cli.test.ts.
  const real = codexPath ? ['--codex', codexPath] : [];
  const { code, stdout, stderr } = await runCli(['--reporter', 'json', '--explore', '2', ...real, exampleServer]);
  expect(code, stderr).toBe(0);
  const report = JSON.parse(stdout) as { checks: { id: string; status: string; skipReason?: string; message?: string }[] };
  const unexpected = report.checks.filter(
    (c) => !(c.status === 'pass' || (c.status === 'skip' && c.skipReason === 'not-applicable' && notApplicableHere(c.id))),
  );
  expect(unexpected).toEqual([]);
  expect(report.checks.filter((c) => c.status === 'pass').length).toBeGreaterThan(20);
  if (codexPath) expect(report.checks.filter((c) => c.id.startsWith('enforcement/')).map((c) => c.status)).toEqual(['pass', 'pass', 'pass', 'pass']);
});
