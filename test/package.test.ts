import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { allChecks } from '../suites/index.js';
import { bundled } from './fixtures/bundles.js';
import { mutantsServer, referenceServer, root } from './helpers.js';

/**
 * The package as a user's project gets it: `npm pack`, then a project in a temp dir with only that
 * tarball installed, importing `mcp-sandbox-conformance` and `mcp-sandbox-conformance/vitest`
 * through the package's `exports`. Installed by hand: the tarball unpacked into node_modules, and
 * each of its own dependencies (and vitest, its peer) a symlink into this repo's node_modules. An
 * `npm install --offline` of the tarball fails here (the npm cache holds none of its dependencies)
 * and an online one takes a minute and the network; what is under test is the tarball (its files,
 * its exports, its declared dependencies: an import of anything it does not declare fails), not npm.
 * Needs dist/ built (as every CLI test).
 */

const run = promisify(execFile);
const project = mkdtempSync(join(tmpdir(), 'msc-package-test-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));
const installed = join(project, 'node_modules/mcp-sandbox-conformance');
let packed: string[] = [];

beforeAll(async () => {
  const { stdout } = await run('npm', ['pack', root, '--ignore-scripts', '--json', '--pack-destination', project], { cwd: project });
  const [pack] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  packed = pack!.files.map((f) => f.path);
  mkdirSync(installed, { recursive: true });
  await run('tar', ['-xzf', join(project, pack!.filename), '-C', installed, '--strip-components=1']);
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const name of [...Object.keys(manifest.dependencies), 'vitest']) {
    mkdirSync(dirname(join(project, 'node_modules', name)), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), join(project, 'node_modules', name));
  }
}, 60_000);

test('npm pack ships the API, its types, the vitest helper, the schema and the CLI; no sources, no tests', () => {
  for (const file of [
    'dist/cli/api.js',
    'dist/cli/api.d.ts',
    'dist/cli/vitest.js',
    'dist/cli/vitest.d.ts',
    'dist/cli/main.js',
    'dist/cli/server-command.d.ts',
    'schema/report.schema.json',
    'examples/conformance.test.ts',
    'examples/minimal-server.mjs',
    'package.json',
  ])
    expect(packed).toContain(file);
  expect(packed.filter((file) => file.startsWith('dist/test/') || /^(cli|harness|suites|api)\/.*\.ts$/.test(file))).toEqual([]);
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
  expect(manifest.exports).toMatchObject({
    '.': { types: './dist/cli/api.d.ts', import: './dist/cli/api.js' },
    './vitest': { types: './dist/cli/vitest.d.ts', import: './dist/cli/vitest.js' },
    './schema/report.schema.json': './schema/report.schema.json',
  });
  // vitest: an optional peer (of ./vitest), never a dependency of the CLI.
  expect(manifest.peerDependenciesMeta).toEqual({ vitest: { optional: true } });
  expect(Object.keys(manifest.dependencies as object)).not.toContain('vitest');
});

/** The verdicts of a JSON report: each check per transport, and the exit code. */
const verdicts = (report: { exitCode: number; checks: { id: string; transport: string; status: string; skipReason?: string; blockedBy?: string }[] }) => ({
  exitCode: report.exitCode,
  checks: report.checks.map((c) => [c.transport, c.id, c.status, c.skipReason ?? '', c.blockedBy ?? ''].join(' ')),
});

test('checkServer from the tarball gives the verdicts of the CLI JSON report, on the reference and on a mutant', async () => {
  const script = join(project, 'verdicts.mjs');
  writeFileSync(
    script,
    [
      "import { checkServer } from 'mcp-sandbox-conformance';",
      "const report = await checkServer({ command: process.argv.slice(2), only: ['launcher/*'], explore: 0 });",
      'process.stdout.write(JSON.stringify(report));',
    ].join('\n'),
  );
  const cli = join(installed, 'dist/cli/main.js');
  const servers = { reference: [referenceServer], 'path-search': [mutantsServer, 'path-search'] };
  const runs = await Promise.all(
    Object.values(servers).flatMap((server) => [
      run(process.execPath, [script, ...server], { cwd: project, maxBuffer: 64 << 20 }),
      // The CLI exits 1 on the mutant: its report is in the error's stdout.
      run(process.execPath, [cli, '--only', 'launcher/*', '--no-explore', '--reporter', 'json', ...server], { cwd: project, maxBuffer: 64 << 20 }).catch(
        (error: { stdout: string }) => error,
      ),
    ]),
  );
  const [apiReference, cliReference, apiMutant, cliMutant] = runs.map(({ stdout }) => verdicts(JSON.parse(stdout)));
  expect(apiReference).toEqual(cliReference);
  expect(apiMutant).toEqual(cliMutant);
  // Not two equally empty answers: the reference passes every launcher check, the mutant fails the one aimed at it.
  expect(apiReference!.exitCode).toBe(0);
  expect(apiReference!.checks.length).toBe(allChecks.filter((c) => c.id.startsWith('launcher/')).length);
  expect(apiReference!.checks.every((c) => c.includes(' pass '))).toBe(true);
  expect(apiMutant!.exitCode).toBe(1);
  expect(apiMutant!.checks).toContain('stdio launcher/runs-given-executable fail  ');
}, 180_000);

/** The example's server with one defect: when it has no sandbox to run in, it runs the command directly. */
const FAIL_CLOSED = 'if (refusal) return text(`Refused: ${refusal}, so there is no sandbox to run in. Nothing was run.`, true);';
const FALLS_BACK = 'if (refusal) return text((await run(args.command[0], args.command.slice(1), extra.signal)).output, false);';

/**
 * examples/ copied into `dir` of the project, its server changed by `change`, and a describeConformance
 * test beside it (with `options` too, as JS). The server is the example bundled into one file
 * (test/fixtures/bundles.ts: its own code, its dependencies inlined), to start faster: each run
 * below starts it dozens of times.
 */
function exampleIn(dir: string, change: (server: string) => string, options: string): void {
  const at = join(project, dir);
  mkdirSync(at);
  copyFileSync(join(root, 'examples/conformance.test.ts'), join(at, 'conformance.test.ts'));
  const server = readFileSync(bundled('examples/minimal-server.mjs'), 'utf8');
  expect(server).toContain(FAIL_CLOSED);
  writeFileSync(join(at, 'minimal-server.mjs'), change(server));
  writeFileSync(
    join(at, 'every-check.test.ts'),
    [
      "import { describeConformance } from 'mcp-sandbox-conformance/vitest';",
      `describeConformance({ name: 'every check', command: [new URL('./minimal-server.mjs', import.meta.url).pathname], explore: 0, ${options} });`,
    ].join('\n'),
  );
}

interface VitestJson {
  testResults: { name: string; assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
}
/** vitest run in the project (every test file outside node_modules), as the project's own test run. */
async function vitestInProject(): Promise<{ code: number; output: string; results: VitestJson }> {
  const args = [join(project, 'node_modules/vitest/vitest.mjs'), 'run', '--reporter=default', '--reporter=json', '--outputFile.json=results.json'];
  const outcome = await run(process.execPath, args, { cwd: project, env: { ...process.env, NO_COLOR: '1', CI: '1' }, maxBuffer: 64 << 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
  );
  return { ...outcome, results: JSON.parse(readFileSync(join(project, 'results.json'), 'utf8')) as VitestJson };
}

test('the example: its vitest test passes on its server and fails, with the diffs, on a mutant; describeConformance lists every check', async () => {
  exampleIn('good', (s) => s, '');
  exampleIn('bad', (s) => s.replace(FAIL_CLOSED, FALLS_BACK), "only: ['launcher/*']");
  const [vitest, cli] = await Promise.all([
    vitestInProject(),
    // What the CLI says of the example's server with the options of the describeConformance test.
    run(process.execPath, [join(installed, 'dist/cli/main.js'), '--no-explore', '--reporter', 'json', join(project, 'good/minimal-server.mjs')], {
      cwd: project,
      maxBuffer: 64 << 20,
    }),
  ]);
  const tests = (file: string) => vitest.results.testResults.find((r) => r.name.endsWith(`/${file}`))!.assertionResults;

  expect(tests('good/conformance.test.ts').map((t) => t.status)).toEqual(['passed']);
  expect(tests('bad/conformance.test.ts').map((t) => t.status)).toEqual(['failed']);
  expect(vitest.code).toBe(1);
  // vitest shows the human report: each failing check with its diff.
  expect(vitest.output).toMatch(/the server does not conform \(the CLI exits 1\)/);
  expect(vitest.output).toMatch(/^ *FAIL +launcher\/absent-fails-closed +MUST/m);
  expect(vitest.output).toMatch(/diff \(expected -> actual\):/);

  // One test per check, in the suite's order, then the run's exit code; skipped exactly where the CLI skips.
  const everyCheck = tests('good/every-check.test.ts');
  expect(everyCheck.map((t) => t.title)).toEqual([...allChecks.map((c) => c.id), 'the run exits 0, as the CLI would']);
  const report = JSON.parse(cli.stdout) as { exitCode: number; checks: { id: string; status: string }[] };
  expect(report.exitCode).toBe(0);
  const skippedByCli = allChecks.map((c) => c.id).filter((id) => report.checks.filter((r) => r.id === id).every((r) => r.status === 'skip'));
  expect(everyCheck.filter((t) => t.status === 'skipped').map((t) => t.title)).toEqual(skippedByCli);
  expect(skippedByCli.length).toBeGreaterThan(0);
  expect(everyCheck.filter((t) => t.status === 'passed').length).toBe(allChecks.length - skippedByCli.length + 1);
  // On the mutant the checks it breaks fail as tests, and so does the run.
  const broken = tests('bad/every-check.test.ts');
  expect(broken.map((t) => t.title)).toEqual([...allChecks.filter((c) => c.id.startsWith('launcher/')).map((c) => c.id), 'the run exits 0, as the CLI would']);
  expect(broken.filter((t) => t.status === 'failed').map((t) => t.title)).toEqual(
    expect.arrayContaining(['launcher/absent-fails-closed', 'the run exits 0, as the CLI would']),
  );
  expect(broken.find((t) => t.title === 'launcher/absent-fails-closed')!.failureMessages.join('\n')).toMatch(/fail over stdio/);
}, 300_000);
