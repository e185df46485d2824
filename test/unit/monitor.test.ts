import { describe, expect, test } from 'vitest';
import type { SandboxEntries, Transport } from '../../harness/codex-wire.js';
import type { Launch, LauncherName, Observations, ProbeRun, TrapCall } from '../../harness/observers.js';
import { indexChecks, standInCheck } from '../../suites/engine/checks.js';
import type { CheckDef, Expectation, Finding, MonitoredCall, MonitorRole } from '../../suites/engine/model.js';
import { authorityOf, monitor } from '../../suites/engine/monitor.js';

/*
 * The sandbox monitor on synthetic observation logs: no processes, no files. Launcher paths are
 * fake and only ever looked up in NAMES (both by `launcherName` and by the `usable` predicate
 * handed to authorityOf), so nothing touches the filesystem.
 */

const A = '/fake/launcher/codex';
const B = '/fake/launcher-b/codex';
const BROKEN = '/fake/launcher-broken/codex';
const PROBE = '/fake/probe';
const NAMES = new Map<string, LauncherName>([
  [A, 'a'],
  [B, 'b'],
  [BROKEN, 'broken'],
]);
const launcherName = (path: string): LauncherName | undefined => NAMES.get(path);
const usable = (path: unknown): boolean => typeof path === 'string' && NAMES.has(path);

/** The check declaring each monitor role (CheckDef.monitors), by id. */
const CANONICAL = {
  exec: 'canon/exec',
  launcher: 'canon/launcher',
  argvShape: 'canon/argv-shape',
  stateUnchanged: 'canon/state-unchanged',
  fidelity: 'canon/fidelity',
  staleAuthority: 'canon/stale-authority',
  concurrentAuthority: 'canon/concurrent-authority',
  http: 'canon/http',
};
const ROLES: Record<keyof typeof CANONICAL, MonitorRole> = {
  exec: 'exec',
  launcher: 'launcher',
  argvShape: 'argv-shape',
  stateUnchanged: 'state-unchanged',
  fidelity: 'fidelity',
  staleAuthority: 'stale-authority',
  concurrentAuthority: 'concurrent-authority',
  http: 'http',
};
const checkDef = (id: string, monitors?: MonitorRole): CheckDef => ({ ...standInCheck(id), ...(monitors ? { monitors } : {}) });
const CHECKS = indexChecks(Object.entries(CANONICAL).map(([name, id]) => checkDef(id, ROLES[name as keyof typeof CANONICAL])));

/** A state shaped like Codex's workspace-write one, with unknown fields at several depths. */
function stateFor(workspace: string, changes: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    permissionProfile: {
      type: 'managed',
      file_system: {
        type: 'restricted',
        entries: [
          { access: 'read', path: { type: 'special', value: { kind: 'root' } } },
          { access: 'write', path: { type: 'path', path: `/fake/work space ${workspace}` } },
        ],
        conformanceCanary: { nested: [1, { deep: true }] },
      },
      network: 'restricted',
    },
    sandboxCwd: `file:///fake/work%20space%20${workspace}`,
    codexLinuxSandboxExe: null,
    useLegacyLandlock: false,
    useMxc: false,
    conformanceCanary: 'top',
    ...changes,
  };
}

const STATE_1 = stateFor('one');
const STATE_2 = stateFor('two');

const nonceOf = (index: number) => `nonce-${index}-c0ffee`;
const probeArgv = (nonce: string) => [PROBE, nonce, 'two words', "it's"];

interface CallOptions {
  /** `null`: a call that carries no nonce. */
  nonce?: string | null;
  state?: Record<string, unknown>;
  launcher?: string;
  sent?: SandboxEntries;
  transport?: Transport;
  expect?: Expectation;
  check?: string;
  /** `null`: a shell-string tool (no argv). */
  argv?: string[] | null;
  concurrent?: boolean;
  decoy?: { check: string; markers: string[] };
  authorityCheck?: string;
}

function call(index: number, options: CallOptions = {}): MonitoredCall {
  const nonce = options.nonce === null ? undefined : (options.nonce ?? nonceOf(index));
  const state = options.state ?? STATE_1;
  const sent = options.sent ?? { state, stateDeprecated: state, launcher: { codexExecutable: options.launcher ?? A } };
  const transport = options.transport ?? 'stdio';
  const argv = options.argv === null ? undefined : (options.argv ?? (nonce ? probeArgv(nonce) : undefined));
  const result: MonitoredCall = {
    index,
    scenario: 'synthetic',
    transport,
    check: options.check ?? `own/call-${index}`,
    nonce,
    tool: argv ? 'exec' : 'shell',
    argv,
    sent,
    authority: authorityOf(sent, transport, usable),
    expect: options.expect ?? 'run',
  };
  if (options.concurrent) result.concurrent = true;
  if (options.decoy) result.decoy = options.decoy;
  if (options.authorityCheck) result.authorityCheck = options.authorityCheck;
  return result;
}

let nextPid = 1000;
/** A launch record as observers.read() builds it: the launcher is the id's last segment. */
function launch(launcher: LauncherName, argv: string[]): Launch {
  return { id: `launch-1700000000000000000-${nextPid++}-${launcher}`, launcher, argv, isCapabilityProbe: false };
}
const sandboxArgv = (state: unknown, command: string[]) => [
  'sandbox',
  '--sandbox-state-json',
  typeof state === 'string' ? state : JSON.stringify(state),
  '--',
  ...command,
];
/** A direct launch of call `index`'s probe argv under `state`. */
const direct = (index: number, state: unknown = STATE_1, launcher: LauncherName = 'a') => launch(launcher, sandboxArgv(state, probeArgv(nonceOf(index))));
/** A long-lived worker: a shell reading commands, carrying no call's nonce. */
const worker = (state: unknown = STATE_1, launcher: LauncherName = 'a') => launch(launcher, sandboxArgv(state, ['/bin/sh', '-c', 'loop']));
const CAPABILITY_PROBE: Launch = {
  id: 'launch-1699999999999999999-999-a',
  launcher: 'a',
  argv: ['sandbox', '--sandbox-state-json', '{}', '--help'],
  isCapabilityProbe: true,
};

/** One execution of the probe: under `where` (a launch, a raw launch id, or '' for none). */
function run(nonce: string, where: Launch | string): ProbeRun {
  return { nonce, launchId: typeof where === 'string' ? where : where.id, cwd: '/fake/work space one', pid: String(nextPid++), invoked: PROBE };
}
const runOf = (index: number, where: Launch | string) => run(nonceOf(index), where);
const trap = (name: string, argv: string[] = ['sandbox', '--sandbox-state-json', '{}', '--', 'x']): TrapCall => ({ trap: name, argv });

function judge(calls: MonitoredCall[], observations: Partial<Observations>, trapOwners = new Map<string, string>()): Finding[] {
  return monitor({
    calls,
    observations: { launches: [], probeRuns: [], trapCalls: [], ...observations },
    launcherName,
    trapOwners,
    checks: CHECKS,
  });
}
const pairs = (findings: Finding[]) => findings.map((f) => [f.check.id, f.call]);
const sortedPairs = (findings: Finding[]) => pairs(findings).sort((x, y) => `${x[0]}/${x[1]}`.localeCompare(`${y[0]}/${y[1]}`));

describe('attribution: executions to calls by nonce, to launches by launch id', () => {
  test('a clean log yields nothing (the capability probe included)', () => {
    const l1 = direct(1);
    const l2 = direct(2, STATE_2, 'b');
    const calls = [call(1), call(2, { state: STATE_2, launcher: B })];
    expect(judge(calls, { launches: [CAPABILITY_PROBE, l1, l2], probeRuns: [runOf(1, l1), runOf(2, l2)] })).toEqual([]);
    expect(judge(calls, { launches: [CAPABILITY_PROBE] })).toEqual([]);
  });

  test('a launch that carried the nonce but left no probe record is judged all the same', () => {
    expect(judge([call(1)], { launches: [direct(1)] })).toEqual([]);
    expect(pairs(judge([call(1)], { launches: [direct(1, STATE_2)] }))).toEqual([[CANONICAL.stateUnchanged, 1]]);
  });

  test("a run known only by its stdout line (the real sandbox's state refused its record) is judged like any record", () => {
    const l1 = direct(1);
    const viaStdout = { ...runOf(1, l1), via: 'stdout' as const };
    expect(judge([call(1)], { launches: [l1], probeRuns: [viaStdout] })).toEqual([]);
    // Under another call's state: AUTH-2, as for a run that left its own record.
    const stale = worker(STATE_1);
    const calls = [call(1), call(2, { state: STATE_2 })];
    expect(pairs(judge(calls, { launches: [stale], probeRuns: [runOf(1, stale), { ...runOf(2, stale), via: 'stdout' }] }))).toEqual([
      [CANONICAL.staleAuthority, 2],
    ]);
  });

  test('a worker launched once and fed several calls with the same authority is fine', () => {
    const w = worker(STATE_1);
    const calls = [call(1), call(2), call(3)];
    expect(judge(calls, { launches: [w], probeRuns: [runOf(1, w), runOf(2, w), runOf(3, w), runOf(2, w)] })).toEqual([]);
  });

  test('the worker reused for a call with a different state: AUTH-2 (stale authority)', () => {
    const w = worker(STATE_1);
    const findings = judge([call(1), call(2, { state: STATE_2 })], { launches: [w], probeRuns: [runOf(1, w), runOf(2, w)] });
    expect(pairs(findings)).toEqual([[CANONICAL.staleAuthority, 2]]);
    expect(findings[0]!.message).toContain('synthetic call #1');
    expect(findings[0]!.fallback?.id).toBe('own/call-2');
    expect(findings[0]!.diff).toContainEqual(expect.stringContaining('sandboxCwd'));
  });

  test("the stale finding goes to the call's authorityCheck when it has one", () => {
    const w = worker(STATE_1);
    const calls = [call(1), call(2, { state: STATE_2, authorityCheck: 'auth/session-state-change' })];
    expect(pairs(judge(calls, { launches: [w], probeRuns: [runOf(1, w), runOf(2, w)] }))).toEqual([['auth/session-state-change', 2]]);
  });

  test('the worker reused for a call that sent another launcher (same state): AUTH-2', () => {
    const w = worker(STATE_1, 'a');
    const calls = [call(1), call(2, { launcher: B })];
    expect(pairs(judge(calls, { launches: [w], probeRuns: [runOf(1, w), runOf(2, w)] }))).toEqual([[CANONICAL.staleAuthority, 2]]);
  });

  test('a direct launch (carrying the nonce) under an earlier call’s state: AUTH-2', () => {
    const l1 = direct(1);
    const l2 = direct(2, STATE_1);
    const calls = [call(1), call(2, { state: STATE_2 })];
    expect(pairs(judge(calls, { launches: [l1, l2], probeRuns: [runOf(1, l1), runOf(2, l2)] }))).toEqual([[CANONICAL.staleAuthority, 2]]);
  });

  test('concurrent calls mixing their states: AUTH-3; only one of them concurrent, or bursts apart in time: AUTH-2', () => {
    const l1 = direct(1, STATE_1);
    const l2 = direct(2, STATE_1);
    const observations = { launches: [l1, l2], probeRuns: [runOf(1, l1), runOf(2, l2)] };
    const both = [call(1, { concurrent: true }), call(2, { state: STATE_2, concurrent: true })];
    expect(pairs(judge(both, observations))).toEqual([[CANONICAL.concurrentAuthority, 2]]);
    const one = [call(1), call(2, { state: STATE_2, concurrent: true })];
    expect(pairs(judge(one, observations))).toEqual([[CANONICAL.staleAuthority, 2]]);
    const withOwnCheck = [call(1, { concurrent: true }), call(2, { state: STATE_2, concurrent: true, authorityCheck: 'auth/concurrent-same-workspace' })];
    expect(pairs(judge(withOwnCheck, observations))).toEqual([['auth/concurrent-same-workspace', 2]]);
    // Two bursts seconds apart: call 1 was answered before call 2 was sent, so it is an earlier call's authority (AUTH-2).
    const apart = [
      { ...call(1, { concurrent: true }), window: { sent: 1_000, answered: 1_050 } },
      { ...call(2, { state: STATE_2, concurrent: true }), window: { sent: 3_500, answered: 3_550 } },
    ];
    expect(pairs(judge(apart, observations))).toEqual([[CANONICAL.staleAuthority, 2]]);
    const overlapping = [apart[0]!, { ...apart[1]!, window: { sent: 1_020, answered: 1_070 } }];
    expect(pairs(judge(overlapping, observations))).toEqual([[CANONICAL.concurrentAuthority, 2]]);
  });

  test('a mix-up names both calls, each with the authority it sent, and the command of each (form and text)', () => {
    const l1 = direct(1, STATE_1);
    const l2 = direct(2, STATE_1);
    const observations = { launches: [l1, l2], probeRuns: [runOf(1, l1), runOf(2, l2)] };
    const earlier = call(1, { state: STATE_1 });
    const first = { ...call(3, { state: STATE_1, concurrent: true }), nonce: nonceOf(1), command: { form: 'heredoc', text: "cat <<'EOF'\\n…" } };
    const second = { ...call(2, { state: STATE_2, concurrent: true }), command: { form: 'pipe', text: 'git log | head' } };
    const [finding] = judge([earlier, second, first], observations);
    expect(finding!.check.id).toBe(CANONICAL.concurrentAuthority);
    // The call in flight at the same time is named, not the earlier one with the same authority.
    expect(finding!.message).toMatch(
      /call #2 \(command, pipe: "git log \| head"\): ran under the authority of synthetic call #3 \(command, heredoc: .*another call in flight/,
    );
    expect(finding!.expected).toMatchObject({ call: 'synthetic call #2', state: STATE_2 });
    expect(finding!.actual).toMatchObject({ ranUnderAuthorityOf: { call: 'synthetic call #3', state: STATE_1 } });
  });
});

describe('EXEC-1: nothing runs outside a launch; refused calls run nothing', () => {
  test('an execution with no launch id, for a valid call', () => {
    const findings = judge([call(1)], { probeRuns: [runOf(1, '')] });
    expect(pairs(findings)).toEqual([[CANONICAL.exec, 1]]);
    expect(findings[0]!.fallback?.id).toBe('own/call-1');
  });

  test('an execution under a launch id that no launch record has', () => {
    const findings = judge([call(1)], { launches: [direct(1)], probeRuns: [runOf(1, 'launch-1-2-a')] });
    expect(pairs(findings)).toEqual([[CANONICAL.exec, 1]]);
    expect(findings[0]!.message).toContain('launch-1-2-a');
  });

  test('a finding about where a command ran says where, in one line each, not the whole state', () => {
    const [outside] = judge([call(1)], { probeRuns: [runOf(1, '')] });
    expect(outside!.expected).toEqual({ ran: `inside a launch of ${A} under this call's state` });
    expect(outside!.actual).toMatchObject({ ran: expect.stringMatching(/^no launch \(pid \d+, cwd \/fake\/work space one, invoked as \/fake\/probe\)$/) });
    const refused = call(2, { sent: { state: STATE_1, stateDeprecated: STATE_1 }, expect: 'refuse' });
    const [ran] = judge([refused], { probeRuns: [runOf(2, '')] });
    expect(ran!.expected).toEqual({ ran: 'nothing: no launcher was sent' });
    expect(JSON.stringify([outside!.expected, outside!.actual, ran!.expected, ran!.actual])).not.toContain('permissionProfile');
  });

  test('an execution outside any launch that no call asked for', () => {
    expect(pairs(judge([call(1)], { probeRuns: [run('nobody-asked', '')] }))).toEqual([[CANONICAL.exec, undefined]]);
    // Inside a launch it is not the monitor's business (and no call can be blamed).
    const l1 = direct(1);
    expect(judge([call(1)], { launches: [l1], probeRuns: [runOf(1, l1), run('nobody-asked', l1)] })).toEqual([]);
  });

  test("an execution for a refused call (authority none) is charged to the call's own check", () => {
    const refused = call(1, { sent: { state: STATE_1, stateDeprecated: STATE_1 }, expect: 'refuse', check: 'launcher/absent' });
    expect(refused.authority.kind).toBe('none');
    const findings = judge([refused], { probeRuns: [runOf(1, '')] });
    expect(pairs(findings)).toEqual([['launcher/absent', 1]]);
    expect(findings[0]!.fallback).toBeUndefined();
    expect(findings[0]!.message).toContain('no launcher was sent');
  });

  test("a refused call that ran inside another call's worker: its own check, nothing else", () => {
    const w = worker(STATE_1);
    const calls = [
      call(1),
      call(2, {
        expect: 'refuse',
        check: 'launcher/relative-path',
        sent: { state: STATE_1, stateDeprecated: STATE_1, launcher: { codexExecutable: 'codex' } },
      }),
    ];
    expect(pairs(judge(calls, { launches: [w], probeRuns: [runOf(1, w), runOf(2, w)] }))).toEqual([['launcher/relative-path', 2]]);
  });

  test('a refused call (valid authority, expect refuse) handed to a launcher', () => {
    const refused = call(1, { expect: 'refuse', check: 'own/refuse' });
    expect(refused.authority.kind).toBe('valid');
    // Launched only (no probe record): one finding.
    expect(pairs(judge([refused], { launches: [direct(1)] }))).toEqual([['own/refuse', 1]]);
    // Launched and executed: one cause, one finding (the execution, which names its launch).
    const l1 = direct(1);
    const findings = judge([refused], { launches: [l1], probeRuns: [runOf(1, l1)] });
    expect(pairs(findings)).toEqual([['own/refuse', 1]]);
    expect(findings.map((f) => f.message)).toEqual([expect.stringContaining('the command ran')]);
  });

  test("expect 'attempt' (broken launcher): the launch is fine, any execution is the call's own", () => {
    const attempt = call(1, { launcher: BROKEN, expect: 'attempt', check: 'launcher/fails-at-run-time' });
    const l1 = direct(1, STATE_1, 'broken');
    expect(judge([attempt], { launches: [l1] })).toEqual([]);
    expect(pairs(judge([attempt], { launches: [l1], probeRuns: [runOf(1, l1)] }))).toEqual([['launcher/fails-at-run-time', 1]]);
    const outside = judge([attempt], { launches: [l1], probeRuns: [runOf(1, '')] });
    expect(pairs(outside)).toEqual([['launcher/fails-at-run-time', 1]]);
    expect(outside[0]!.message).toContain('outside any sandbox');
  });

  test('a later run that would have overwritten an earlier one: both are judged (one finding)', () => {
    const l1 = direct(1);
    expect(pairs(judge([call(1)], { launches: [l1], probeRuns: [runOf(1, ''), runOf(1, l1)] }))).toEqual([[CANONICAL.exec, 1]]);
    expect(pairs(judge([call(1)], { launches: [l1], probeRuns: [runOf(1, l1), runOf(1, '')] }))).toEqual([[CANONICAL.exec, 1]]);
  });
});

describe('FWD-1: the launch argv shape', () => {
  test('an extra flag before "--": one finding per launch, however many executions', () => {
    const l1 = launch('a', ['sandbox', '--full-auto', '--sandbox-state-json', JSON.stringify(STATE_1), '--', ...probeArgv(nonceOf(1))]);
    const findings = judge([call(1)], { launches: [l1], probeRuns: [runOf(1, l1), runOf(1, l1), runOf(1, l1)] });
    expect(pairs(findings)).toEqual([[CANONICAL.argvShape, 1]]);
    expect(findings[0]!.message).toContain('"--full-auto"');
  });

  test('a worker with an extra flag serving two calls: still one finding, on the first', () => {
    const w = launch('a', ['sandbox', '-C', '/fake', '--sandbox-state-json', JSON.stringify(STATE_1), '--', '/bin/sh', '-c', 'loop']);
    expect(pairs(judge([call(1), call(2)], { launches: [w], probeRuns: [runOf(1, w), runOf(2, w)] }))).toEqual([[CANONICAL.argvShape, 1]]);
  });

  test('the state split over two --sandbox-state-json arguments', () => {
    const { permissionProfile, ...rest } = STATE_1;
    const l1 = launch('a', [
      'sandbox',
      '--sandbox-state-json',
      JSON.stringify(permissionProfile),
      '--sandbox-state-json',
      JSON.stringify(rest),
      '--',
      ...probeArgv(nonceOf(1)),
    ]);
    expect(pairs(judge([call(1)], { launches: [l1], probeRuns: [runOf(1, l1)] }))).toEqual([[CANONICAL.argvShape, 1]]);
  });

  test('the state split into a flag value and a stray argument (the split-state mutant): FWD-1 and FWD-2', () => {
    // test/matrix-cases.ts expects both checks to fail for this mutant.
    const { permissionProfile, ...rest } = STATE_1;
    const l1 = launch('a', ['sandbox', '--sandbox-state-json', JSON.stringify(permissionProfile), JSON.stringify(rest), '--', ...probeArgv(nonceOf(1))]);
    expect(pairs(judge([call(1)], { launches: [l1], probeRuns: [runOf(1, l1), runOf(1, l1)] }))).toEqual([
      [CANONICAL.argvShape, 1],
      [CANONICAL.stateUnchanged, 1],
    ]);
  });

  test('an argv tool whose command is wrapped in sh -c (it carries the nonce, but is not the argv asked for)', () => {
    const wrapped = launch('a', sandboxArgv(STATE_1, ['sh', '-c', probeArgv(nonceOf(1)).join(' ')]));
    const findings = judge([call(1)], { launches: [wrapped], probeRuns: [runOf(1, wrapped)] });
    expect(pairs(findings)).toEqual([[CANONICAL.argvShape, 1]]);
    expect(findings[0]!.message).toContain('exactly as asked');
    // Same without any probe record: the launch loop judges it.
    expect(pairs(judge([call(1)], { launches: [wrapped] }))).toEqual([[CANONICAL.argvShape, 1]]);
  });

  test('a shell-string tool (no argv): any command after "--" is fine', () => {
    const shellCall = call(1, { argv: null });
    const nonce = nonceOf(1);
    const viaSh = launch('a', sandboxArgv(STATE_1, ['/bin/sh', '-c', `${PROBE} ${nonce} 'two words'`]));
    const viaBash = launch('a', sandboxArgv(STATE_1, ['bash', '--noprofile', '--norc', '-c', `${PROBE} "$@"`, 'bash', nonce]));
    expect(judge([shellCall], { launches: [viaSh, viaBash], probeRuns: [run(nonce, viaSh), run(nonce, viaBash)] })).toEqual([]);
  });
});

describe('FWD-2 / FWD-3: the forwarded state', () => {
  test('an unknown nested field dropped: FWD-2, with a diff', () => {
    const dropped = structuredClone(STATE_1) as { permissionProfile: { file_system: { conformanceCanary: { nested: [number, Record<string, unknown>] } } } };
    delete dropped.permissionProfile.file_system.conformanceCanary.nested[1].deep;
    const l1 = direct(1, dropped);
    const findings = judge([call(1)], { launches: [l1], probeRuns: [runOf(1, l1)] });
    expect(pairs(findings)).toEqual([[CANONICAL.stateUnchanged, 1]]);
    expect(findings[0]!.diff).toEqual(['- missing  permissionProfile.file_system.conformanceCanary.nested[1].deep (was true)']);
  });

  test('a value of --sandbox-state-json that is not JSON: FWD-2', () => {
    const l1 = direct(1, '{not json');
    expect(pairs(judge([call(1)], { launches: [l1], probeRuns: [runOf(1, l1)] }))).toEqual([[CANONICAL.stateUnchanged, 1]]);
  });

  test("a forwarded state carrying a decoy marker is charged to the decoy's check; other differences stay FWD-2's", () => {
    const decoy = { check: 'aliases/conflict-prefers-current', markers: ['"sandboxCwd":"file:///fake/decoy"'] };
    const took = direct(1, { ...STATE_1, sandboxCwd: 'file:///fake/decoy' });
    expect(pairs(judge([call(1, { decoy })], { launches: [took], probeRuns: [runOf(1, took)] }))).toEqual([['aliases/conflict-prefers-current', 1]]);
    const other = direct(1, { ...STATE_1, useMxc: true });
    expect(pairs(judge([call(1, { decoy })], { launches: [other], probeRuns: [runOf(1, other)] }))).toEqual([[CANONICAL.stateUnchanged, 1]]);
  });

  test('the same content with another key order: FWD-3, once per launch', () => {
    const { sandboxCwd, ...rest } = STATE_1;
    const reordered = { sandboxCwd, ...rest };
    const l1 = direct(1, reordered);
    const findings = judge([call(1)], { launches: [l1], probeRuns: [runOf(1, l1), runOf(1, l1)] });
    expect(pairs(findings)).toEqual([[CANONICAL.fidelity, 1]]);
    expect(findings[0]!.diff).toEqual([expect.stringMatching(/^~ order {4}\(top level\): keys \["sandboxCwd",/)]);
    // A worker under the re-serialized state: said once, for the first call it served.
    const w = worker(reordered);
    expect(pairs(judge([call(1), call(2)], { launches: [w], probeRuns: [runOf(1, w), runOf(2, w)] }))).toEqual([[CANONICAL.fidelity, 1]]);
  });

  test('a nested key order change is FWD-3 too', () => {
    const profile = STATE_1.permissionProfile as Record<string, unknown>;
    const { network, ...others } = profile;
    const l1 = direct(1, { ...STATE_1, permissionProfile: { network, ...others } });
    const findings = judge([call(1)], { launches: [l1], probeRuns: [runOf(1, l1)] });
    expect(pairs(findings)).toEqual([[CANONICAL.fidelity, 1]]);
    expect(findings[0]!.diff).toEqual([expect.stringContaining('permissionProfile: keys ["network",')]);
  });
});

describe('LAUNCH-1: exactly the codexExecutable that was sent', () => {
  test('a codex found on PATH', () => {
    expect(pairs(judge([call(1)], { trapCalls: [trap('path-search')] }))).toEqual([[CANONICAL.launcher, undefined]]);
    const withNonce = judge([call(1)], { trapCalls: [trap('path-search', sandboxArgv(STATE_1, probeArgv(nonceOf(1))))] });
    expect(pairs(withNonce)).toEqual([[CANONICAL.launcher, 1]]);
    expect(withNonce[0]!.fallback?.id).toBe('own/call-1');
  });

  test('a planted trap is charged to the check that planted it', () => {
    const owners = new Map([['launcher-in-arguments', 'authority/arguments-are-not-authority']]);
    expect(pairs(judge([call(1)], { trapCalls: [trap('launcher-in-arguments')] }, owners))).toEqual([['authority/arguments-are-not-authority', undefined]]);
    const withNonce = trap('launcher-in-arguments', sandboxArgv(STATE_1, probeArgv(nonceOf(1))));
    expect(pairs(judge([call(1)], { trapCalls: [withNonce] }, owners))).toEqual([['authority/arguments-are-not-authority', 1]]);
  });

  test("a trap carrying the nonce of a refused call is that call's", () => {
    const owners = new Map([['not-executable', 'launcher/not-executable']]);
    const refused = call(1, {
      expect: 'refuse',
      check: 'launcher/relative-path',
      sent: { state: STATE_1, stateDeprecated: STATE_1, launcher: { codexExecutable: 'codex' } },
    });
    const fired = trap('not-executable', sandboxArgv(STATE_1, probeArgv(nonceOf(1))));
    expect(pairs(judge([refused], { trapCalls: [fired] }, owners))).toEqual([['launcher/relative-path', 1]]);
    expect(pairs(judge([refused], { trapCalls: [trap('path-search', fired.argv)] }))).toEqual([['launcher/relative-path', 1]]);
  });

  test('a launch of launcher b for a call that sent a (no call sent b): LAUNCH-1', () => {
    const lb = direct(1, STATE_1, 'b');
    const findings = judge([call(1), call(2, { state: STATE_2 })], { launches: [lb], probeRuns: [runOf(1, lb)] });
    expect(pairs(findings)).toEqual([[CANONICAL.launcher, 1]]);
    // No probe record: the launch loop finds the same.
    expect(pairs(judge([call(1)], { launches: [lb] }))).toEqual([[CANONICAL.launcher, 1]]);
  });

  test('a launch of b, with b and that state sent by another call: that call’s authority (AUTH-2)', () => {
    const lb = direct(1, STATE_1, 'b');
    const calls = [call(1), call(2, { launcher: B })];
    expect(pairs(judge(calls, { launches: [lb], probeRuns: [runOf(1, lb)] }))).toEqual([[CANONICAL.staleAuthority, 1]]);
  });
});

describe('authorityOf', () => {
  const entries = (launcher: unknown, state: unknown = STATE_1, stateDeprecated: unknown = state): SandboxEntries => ({ state, stateDeprecated, launcher });

  test('over HTTP no launcher counts', () => {
    expect(authorityOf(entries({ codexExecutable: A }), 'http', usable)).toMatchObject({ kind: 'none' });
  });

  test('a missing, malformed, relative or unusable launcher is none', () => {
    expect(authorityOf(entries(undefined), 'stdio', usable)).toEqual({ kind: 'none', why: 'no launcher was sent' });
    for (const launcher of [
      A,
      null,
      [A],
      {},
      { codexExecutable: 'codex' },
      { codexExecutable: './launcher/codex' },
      { codexExecutable: '/fake/missing/codex' },
      { codexExecutable: 42 },
    ]) {
      expect(authorityOf(entries(launcher), 'stdio', usable), JSON.stringify(launcher)).toMatchObject({
        kind: 'none',
        why: expect.stringContaining('not an absolute path'),
      });
    }
  });

  test('a usable launcher and an object state: valid', () => {
    expect(authorityOf(entries({ codexExecutable: B }), 'stdio', usable)).toEqual({ kind: 'valid', codexExecutable: B, state: STATE_1 });
  });

  test('the current key wins; the deprecated key only when the current one is absent', () => {
    const launcher = { codexExecutable: A };
    expect(authorityOf({ state: STATE_1, stateDeprecated: STATE_2, launcher }, 'stdio', usable)).toEqual({ kind: 'valid', codexExecutable: A, state: STATE_1 });
    expect(authorityOf({ state: STATE_1, stateDeprecated: 'garbage', launcher }, 'stdio', usable)).toEqual({
      kind: 'valid',
      codexExecutable: A,
      state: STATE_1,
    });
    expect(authorityOf({ stateDeprecated: STATE_2, launcher }, 'stdio', usable)).toEqual({ kind: 'valid', codexExecutable: A, state: STATE_2 });
    // A non-object current state does not fall back to the deprecated one: it is none.
    for (const state of [true, null, 'x', [STATE_1], 0]) {
      expect(authorityOf({ state, stateDeprecated: STATE_2, launcher }, 'stdio', usable), JSON.stringify(state)).toEqual({
        kind: 'none',
        why: 'the state is not an object',
      });
    }
    expect(authorityOf({ stateDeprecated: true, launcher }, 'stdio', usable)).toEqual({ kind: 'none', why: 'the state is not an object' });
    expect(authorityOf({ launcher }, 'stdio', usable)).toEqual({ kind: 'none', why: 'no state was sent' });
  });
});

describe('dedupe: one finding per call and cause', () => {
  test('the same call run twice outside any launch', () => {
    expect(pairs(judge([call(1)], { probeRuns: [runOf(1, ''), runOf(1, '')] }))).toEqual([[CANONICAL.exec, 1]]);
  });

  test('a stale call run twice in one worker, and once more in another stale worker', () => {
    const w1 = worker(STATE_1);
    const w2 = worker(STATE_1);
    const calls = [call(1), call(2, { state: STATE_2 })];
    const findings = judge(calls, { launches: [w1, w2], probeRuns: [runOf(1, w1), runOf(2, w1), runOf(2, w1), runOf(2, w2)] });
    expect(pairs(findings)).toEqual([[CANONICAL.staleAuthority, 2]]);
  });

  test('the same trap fired twice', () => {
    expect(pairs(judge([call(1)], { trapCalls: [trap('path-search'), trap('path-search')] }))).toEqual([[CANONICAL.launcher, undefined]]);
  });

  test('different calls keep their own findings', () => {
    expect(pairs(judge([call(1), call(2)], { probeRuns: [runOf(1, ''), runOf(2, '')] }))).toEqual([
      [CANONICAL.exec, 1],
      [CANONICAL.exec, 2],
    ]);
  });
});

describe('order of the observation log', () => {
  /*
   * A worker started under a re-serialized copy of call 1's state (FWD-3), later reused for
   * call 2, which sent another state (AUTH-2). Both findings are due whatever order the probe
   * records are read in (ScenarioObservers.read() pushes them in readdir/IO-completion order,
   * which is not sorted).
   */
  const { sandboxCwd, ...rest } = STATE_1;
  const w = worker({ sandboxCwd, ...rest });
  const calls = [call(1), call(2, { state: STATE_2 })];
  const expected = [
    [CANONICAL.fidelity, 1],
    [CANONICAL.staleAuthority, 2],
  ];

  test('with call 1’s execution read first, both findings', () => {
    expect(sortedPairs(judge(calls, { launches: [w], probeRuns: [runOf(1, w), runOf(2, w)] }))).toEqual(expected);
  });

  // The record order (readdir order) must not change what is found.
  test('with call 2’s execution read first, the FWD-3 finding is still reported', () => {
    expect(sortedPairs(judge(calls, { launches: [w], probeRuns: [runOf(2, w), runOf(1, w)] }))).toEqual(expected);
  });
});

describe('HTTP-1: anything that runs for a call over HTTP', () => {
  test("is charged to the HTTP rule, whichever check the call was made for; a planted trap stays its owner's", () => {
    const overHttp = call(1, { transport: 'http', expect: 'refuse', check: 'own/arguments-over-http' });
    expect(overHttp.authority.kind).toBe('none');
    expect(pairs(judge([overHttp], { probeRuns: [runOf(1, '')] }))).toEqual([[CANONICAL.http, 1]]);
    const fired = trap('launcher-in-arguments', sandboxArgv(STATE_1, probeArgv(nonceOf(1))));
    expect(pairs(judge([overHttp], { trapCalls: [fired] }, new Map([['launcher-in-arguments', 'own/arguments-over-http']])))).toEqual([
      ['own/arguments-over-http', 1],
    ]);
  });
});
