import { withHints } from '../cli/hints.js';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { locateRealCodex, removePrivateCodexHome, scratchBaseOutsideTmp } from '../harness/real-codex.js';
import { allScenarios } from '../suites/index.js';
import { ScenarioObservers } from '../harness/observers.js';
import { controlRun } from '../suites/engine/judge.js';
import type { CheckResult } from '../suites/engine/model.js';
import { codexServerEnvironment } from '../harness/codex-environment.js';
import { runSuite, type RunPlan, type RunReport } from '../suites/engine/runner.js';
import { mutantsServer, nodePlan, referenceServer, referenceSource, transcriptOf } from './helpers.js';
import { realCodexOrFail } from './fixtures/requirements.js';

/**
 * The enforcement tier: the fake launcher records each launch and hands it to the real
 * `codex sandbox` (@openai/codex, a devDependency, found through its npm package, never PATH).
 * Only the enforcement checks and the forwarding check they back up are selected, to stay fast.
 */
const ENFORCEMENT = ['enforcement/writes-inside-workspace', 'enforcement/no-writes-outside', 'enforcement/no-network', 'enforcement/exit-status'];
const ESCAPES = ['enforcement/no-network', 'enforcement/no-writes-outside'];

// The sandbox facts these tests rely on (bubblewrap, "Read-only file system") were verified on Linux.
const found = process.platform === 'linux' ? locateRealCodex() : { missing: `the real-sandbox tier is verified on Linux only, not ${process.platform}` };
const realCodex = 'path' in found ? found.path : undefined;

function plan(server: { args: string[] } | { command: string; args: string[] }, ids: string[], withCodex = true): RunPlan {
  const base = nodePlan('command' in server ? [] : server.args, {}, { http: false });
  if ('command' in server) base.targets.stdio = { kind: 'stdio', command: server.command, args: server.args, environment: codexServerEnvironment(process.env) };
  return { ...base, realCodex: withCodex ? realCodex : undefined, select: (id) => ids.includes(id) };
}

interface SentState {
  permissionProfile: { file_system: { entries: { path: { type: string; value?: { kind: string } } }[] } };
  codexLinuxSandboxExe: unknown;
  sandboxCwd: string;
}
/** The state the fake host sent on the scenario's tools/call (canaries included). */
const sentState = (report: RunReport, result: CheckResult): SentState => {
  const call = transcriptOf(report, result).find(
    (e) => e.dir === 'host->server' && (e as { message: { method?: string } }).message.method === 'tools/call',
  ) as {
    message: { params: { _meta: Record<string, unknown> } };
  };
  return call.message.params._meta['codex/sandbox-state'] as SentState;
};

const byStatus = (results: CheckResult[]) => Object.fromEntries(results.map((r) => [r.id, r.status]));
const statusOf = (results: CheckResult[], status: CheckResult['status']) =>
  results
    .filter((r) => r.status === status)
    .map((r) => r.id)
    .sort();

/** The reference server (its source: a module to import) with one policy function replaced, started inline (no fixture file). */
const variant = (body: string) => ({
  command: process.execPath,
  args: ['--input-type=module', '-e', `import { main, sandboxPolicy as ref } from ${JSON.stringify(pathToFileURL(referenceSource).href)};\n${body}`],
});

const outsideLeftovers = () => {
  const base = scratchBaseOutsideTmp();
  return base ? readdirSync(base).filter((name) => name.startsWith('msc-outside-')) : [];
};
const leftoversBefore = outsideLeftovers();

afterAll(() => removePrivateCodexHome());

describe('without --codex', () => {
  test('the enforcement checks are skipped as not applicable, with a hint the CLI words with the flag', async () => {
    const report = await runSuite(plan({ args: [referenceServer] }, ENFORCEMENT, false), allScenarios);
    expect(report.results.map((r) => r.id).sort()).toEqual([...ENFORCEMENT].sort());
    for (const result of report.results) {
      expect(result).toMatchObject({ status: 'skip', reason: 'not-applicable', message: 'needs a real Codex CLI', hint: 'real-codex' });
    }
    expect(withHints(report).results[0]!.message).toMatch(/^needs a real Codex CLI: --codex PATH/);
  });
});

describe(`with the real Codex ${'version' in found ? found.version : ''} (--codex)`, () => {
  beforeAll(() => void realCodexOrFail());
  test('the binary comes from the @openai/codex npm package, version 0.171.0', () => {
    expect(realCodex).toMatch(/node_modules\/@openai\/codex-linux-(x64|arm64)\/vendor\/[^/]+\/bin\/codex$/);
    expect('version' in found && found.version).toBe('0.171.0');
  });

  test('the reference server passes every enforcement check', async () => {
    const report = await runSuite(plan({ args: [referenceServer] }, [...ENFORCEMENT, 'forwarding/state-unchanged']), allScenarios);
    expect(report.results.map((r) => `${r.id} ${r.status} ${r.status === 'pass' ? '' : r.message}`.trim()).sort()).toEqual(
      [...ENFORCEMENT, 'forwarding/state-unchanged'].map((id) => `${id} pass`).sort(),
    );
    // The write outside was refused by the real sandbox, not by something else.
    const outside = report.results.find((r) => r.id === 'enforcement/no-writes-outside')!;
    expect(outside.message).toMatch(/Read-only file system/);
    // Under Codex's own workspace-write state, which makes /tmp and $TMPDIR writable too.
    const state = sentState(report, outside);
    expect(state.permissionProfile.file_system.entries.map((e) => e.path.value?.kind ?? e.path.type)).toEqual([
      'root',
      'path',
      'slash_tmp',
      'tmpdir',
      'path',
      'path',
      'path',
      'path',
    ]);
    // A per-process helper path as Codex normally sends it (not the launcher, not the real codex), which
    // the real codex sandbox runs as its Linux helper: the suite's helper hands exactly that call on to it.
    expect(state.codexLinuxSandboxExe).toMatch(/\/codex-home\/tmp\/arg0\/[^/]+\/codex-linux-sandbox$/);
    expect(state.codexLinuxSandboxExe).not.toBe(realCodex);
    expect(report.results.find((r) => r.id === 'enforcement/no-network')?.message).toMatch(/not permitted|refused|unreachable/i);
  });

  test('widens-state (forwards {"type":"disabled"}) fails the escape checks and forwarding/state-unchanged', async () => {
    const report = await runSuite(plan({ args: [mutantsServer, 'widens-state'] }, [...ENFORCEMENT, 'forwarding/state-unchanged']), allScenarios);
    expect(statusOf(report.results, 'fail')).toEqual([...ESCAPES, 'forwarding/state-unchanged'].sort());
    expect(byStatus(report.results)).toMatchObject({ 'enforcement/writes-inside-workspace': 'pass', 'enforcement/exit-status': 'pass' });
    const escape = report.results.find((r) => r.id === 'enforcement/no-writes-outside')!;
    expect(escape.actual).toMatchObject({ written: true, forwardedToCodex: [{ permissionProfile: { type: 'disabled' } }] });
    // The escape is proven on a directory the state sent does not make writable: outside the workspace, /tmp and $TMPDIR.
    const target = (escape.expected as { fileOutsideWritableRoots: string }).fileOutsideWritableRoots;
    for (const root of [realpathSync(tmpdir()), realpathSync('/tmp'), fileURLToPath(sentState(report, escape).sandboxCwd)])
      expect(relative(root, target).startsWith('..'), `${target} vs ${root}`).toBe(true);
    const network = report.results.find((r) => r.id === 'enforcement/no-network')!;
    expect(network.actual).toMatchObject({ connectionsToListener: 1 });
  });

  test('the escape checks catch a widened state even where the forwarding check is not run', async () => {
    const report = await runSuite(plan({ args: [mutantsServer, 'widens-state'] }, ESCAPES), allScenarios);
    expect(statusOf(report.results, 'fail')).toEqual(ESCAPES);
  });

  test("under a state that forbids the probe's record, its stdout line, kept by the launcher outside the sandbox, is its record, tied to the launch", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'msc-enforcement-record-'));
    try {
      const observers = await ScenarioObservers.create(dir, { realCodex });
      const readOnly = {
        permissionProfile: {
          type: 'managed',
          network: 'restricted',
          file_system: { type: 'restricted', entries: [{ access: 'read', path: { type: 'special', value: { kind: 'root' } } }] },
        },
        sandboxCwd: pathToFileURL(observers.workspaceDir).href,
        codexLinuxSandboxExe: null,
        useLegacyLandlock: false,
        useMxc: false,
      };
      const nonce = observers.newNonce();
      const argv = ['sandbox', '--sandbox-state-json', JSON.stringify(readOnly), '--', ...observers.probeCommand(nonce)];
      const { stdout } = await promisify(execFile)(observers.launcherPath, argv);
      // The probe says it could not leave its record (the marker directory is not writable under this state).
      expect(stdout).toMatch(new RegExp(`^ok ${nonce} launch-\\S+ unrecorded$`, 'm'));
      const observations = await observers.read();
      const launch = observations.launches.find((l) => !l.isCapabilityProbe)!;
      expect(observations.probeRuns).toEqual([{ nonce, launchId: launch.id, cwd: '', pid: '', invoked: '', via: 'stdout' }]);
      // A control call that ran this way works, and says by which record.
      expect(controlRun(observations, nonce)?.launch.id).toBe(launch.id);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a server that narrows the state to read-only fails writes-inside-workspace', async () => {
    const server = variant(`await main([], { policy: { ...ref, serializeState: (s) => JSON.stringify({ ...s, permissionProfile: { ...s.permissionProfile,
      file_system: { type: 'restricted', entries: [{ path: { type: 'special', value: { kind: 'root' } }, access: 'read' }] } } }) } });`);
    const report = await runSuite(plan(server, ['enforcement/writes-inside-workspace']), allScenarios);
    expect(report.results).toHaveLength(1);
    expect(report.results[0]).toMatchObject({ status: 'fail' });
    expect(report.results[0]!.message).toMatch(/could not write inside the workspace.*Read-only file system/);
  });

  test('a server that reports every command as a success fails exit-status', async () => {
    const server = variant(`await main([], { options: { wrapToolHandler: (name, handler) => name !== 'exec' ? handler : async (args, extra) => {
      const result = await handler(args, extra);
      return { content: result.content.map((c) => ({ ...c, text: c.text.replace(/exit code: .*/g, 'done') })), isError: false };
    } } });`);
    const report = await runSuite(plan(server, ['enforcement/exit-status']), allScenarios);
    expect(report.results.map((r) => `${r.id} ${r.status}`)).toEqual(['enforcement/exit-status fail']);
  });

  test('nothing is left outside the run directory', () => {
    expect(outsideLeftovers()).toEqual(leftoversBefore);
  });
});
