import { describe, expect, test } from 'vitest';
import { controlFacts, judgeFailClosed, parseLaunchArgv, printedText, structuralDiff } from '../../suites/engine/judge.js';
import type { Launch, Observations, Printed, ProbeRun } from '../../harness/observers.js';
import type { ExecProbe } from '../../suites/engine/model.js';
import { olderSandboxStateProtocol } from '../../harness/codex-wire.js';

describe('launcher argv shape (FWD-1)', () => {
  test('the canonical shape, with the allowed extra flags', () => {
    expect(parseLaunchArgv(['sandbox', '--sandbox-state-json', '{"a":1}', '--', 'echo', 'hi'])).toEqual({
      stateArguments: ['{"a":1}'],
      command: ['echo', 'hi'],
      problems: [],
    });
    expect(
      parseLaunchArgv(['sandbox', '--sandbox-state-readable-root', '/opt', '--sandbox-state-json', '{}', '--sandbox-state-disable-network', '--', 'x'])
        .problems,
    ).toEqual([]);
  });
  test('each defect is named', () => {
    expect(parseLaunchArgv(['exec', '--sandbox-state-json', '{}', '--', 'x']).problems).toEqual(['first argument is "exec", not "sandbox"']);
    expect(parseLaunchArgv(['sandbox', '--sandbox-state-json', '{}', 'x']).problems).toContain('no "--" before the command');
    expect(parseLaunchArgv(['sandbox', '-C', '/w', '--sandbox-state-json', '{}', '--', 'x']).problems).toEqual([
      'argument "-C" is not allowed before "--"',
      'argument "/w" is not allowed before "--"',
    ]);
    expect(parseLaunchArgv(['sandbox', '--sandbox-state-json', '{}', '--sandbox-state-json', '{}', '--', 'x']).problems).toEqual([
      '--sandbox-state-json given 2 times, expected once',
    ]);
    expect(parseLaunchArgv(['sandbox', '--sandbox-state-readable-root', 'rel', '--sandbox-state-json', '{}', '--', 'x']).problems).toEqual([
      '--sandbox-state-readable-root needs an absolute path',
    ]);
  });
});

describe('structural diff', () => {
  test('names missing, added and changed paths', () => {
    expect(structuralDiff({ a: { b: [1, { c: 2 }] }, d: 1 }, { a: { b: [1, {}] }, d: 2, e: true })).toEqual([
      '- missing  a.b[1].c (was 2)',
      '~ changed  d: 1 -> 2',
      '+ added    e = true',
    ]);
    expect(structuralDiff({ a: 1 }, { a: 1 })).toEqual([]);
    expect(structuralDiff({ a: 1 }, 'x')).toEqual(['~ (whole value) {"a":1} -> "x"']);
  });
});

describe('the older sandbox-state protocol', () => {
  const advertising = (value: unknown, key = 'codex/sandbox-state') => ({ capabilities: { experimental: { [key]: value } } });
  test('a capability with a version is its shape; the current opaque object is not', () => {
    expect(olderSandboxStateProtocol(advertising({ version: '1.0.0' }))).toBe('"codex/sandbox-state": {"version":"1.0.0"}');
    expect(olderSandboxStateProtocol(advertising({ version: '1.0.0' }, 'codex/sandbox-state-meta'))).toContain('codex/sandbox-state-meta');
    expect(olderSandboxStateProtocol(advertising({}))).toBeUndefined();
    expect(olderSandboxStateProtocol(advertising(true))).toBeUndefined();
    expect(olderSandboxStateProtocol({})).toBeUndefined();
  });
});

describe('the positive control: it works only when its command ran inside the launch', () => {
  const NONCE = 'c0ffee123456';
  const probeArgv = [`/fake/task`, NONCE, 'two words', "it's"];
  const launchOfA = (id: string, command = probeArgv): Launch => ({
    id,
    launcher: 'a',
    argv: ['sandbox', '--sandbox-state-json', '{}', '--', ...command],
    isCapabilityProbe: false,
  });
  const run = (launchId: string, via?: 'stdout'): ProbeRun => ({
    nonce: NONCE,
    launchId,
    cwd: '/fake',
    pid: '1',
    invoked: '/fake/task',
    ...(via ? { via } : {}),
  });
  const answered = (text: string, isError = false): ExecProbe => ({
    nonce: NONCE,
    command: probeArgv,
    shown: { form: 'simple', text: probeArgv.join(' ') },
    arguments: {},
    outcome: { kind: 'result', result: { content: [{ type: 'text', text }], isError }, message: {} },
  });
  const printed = new Map<string, Printed>();
  const observers = { dir: '/fake', printed: async (id: string) => printed.get(id) ?? { stdout: '', stderr: '' } };
  const observe = (launches: Launch[], probeRuns: ProbeRun[]): Observations => ({ launches, probeRuns, trapCalls: [] });

  test("the probe's record inside a launch of the launcher sent: works, and the call says which launch", async () => {
    const facts = await controlFacts(answered('ok'), observe([launchOfA('launch-1-1-a')], [run('launch-1-1-a')]), observers, 'exec');
    expect(facts.works).toBe(true);
    expect(facts.call).toMatchObject({ tool: 'exec', ran: 'the probe ran inside launch launch-1-1-a', command: { form: 'simple' } });
  });

  test('its stdout line kept by the launcher (the state refused its record) counts, and says so', async () => {
    const facts = await controlFacts(answered('ok'), observe([launchOfA('launch-1-2-a')], [run('launch-1-2-a', 'stdout')]), observers, 'exec');
    expect(facts.works).toBe(true);
    expect(facts.detail).toContain('its stdout line, kept by the launcher outside the sandbox');
  });

  test('a bare launch (the command handed to another interpreter): does not work, and says what the launch printed', async () => {
    printed.set('launch-1-3-a', {
      stdout: '',
      stderr: '  File "<string>", line 1\n    /fake/task c0ffee\n    ^\n\u001b[31mmore\nSyntaxError: invalid syntax\n',
    });
    const facts = await controlFacts(
      answered('SyntaxError', true),
      observe([launchOfA('launch-1-3-a', ['python3', '-c', probeArgv.join(' ')])], []),
      observers,
      'run_python',
    );
    expect(facts.works).toBe(false);
    expect(facts.detail).toContain('was launched, but the command never ran inside it');
    expect(facts.detail).toContain('SyntaxError: invalid syntax');
    // Neutralised: no escape character reaches a report.
    expect(facts.detail).not.toContain('\u001b');
    expect(facts.blocker).toBeUndefined();
  });

  test('`codex sandbox -- true` with the command as arguments, answering with the nonce: does not work', async () => {
    const facts = await controlFacts(answered(`ran ${NONCE}`), observe([launchOfA('launch-1-4-a', ['true', ...probeArgv])], []), observers, 'exec');
    expect(facts.works).toBe(false);
  });

  test('the probe run outside, and a no-op launch inside: does not work', async () => {
    const facts = await controlFacts(answered('ok'), observe([launchOfA('launch-1-5-a', ['true'])], [run('')]), observers, 'exec');
    expect(facts.works).toBe(false);
    expect(facts.detail).toContain('ran outside any launch');
  });

  test('the probe inside a launch of another launcher than the one sent: does not work', async () => {
    const other: Launch = { ...launchOfA('launch-1-6-b'), launcher: 'b' };
    expect((await controlFacts(answered('ok'), observe([other], [run(other.id)]), observers, 'exec')).works).toBe(false);
  });

  test('a refusal passes on a control that ran its command, naming it; on a bare launch it could not run', async () => {
    const refused = answered('Refused: no launcher', true);
    const works = await controlFacts(answered('ok'), observe([launchOfA('launch-1-7-a')], [run('launch-1-7-a')]), observers, 'exec');
    const pass = await judgeFailClosed({ ...refused, nonce: 'beef00000000' }, observe([], []), Promise.resolve(works));
    expect(pass).toMatchObject({ status: 'pass', control: { ran: 'the probe ran inside launch launch-1-7-a' } });
    expect(pass.status === 'pass' && pass.note).toContain('inside launch launch-1-7-a');
    const bare = await controlFacts(answered('ok'), observe([launchOfA('launch-1-8-a', ['true', ...probeArgv])], []), observers, 'exec');
    expect(await judgeFailClosed({ ...refused, nonce: 'beef00000000' }, observe([], []), Promise.resolve(bare))).toMatchObject({
      status: 'skip',
      reason: 'could-not-run',
    });
  });
});

describe('what a launch printed, as findings say it', () => {
  test('the first lines and the last of each stream, neutralised; "nothing" for a silent launch', () => {
    expect(printedText({ stdout: '', stderr: '' })).toBe('nothing');
    const text = printedText({ stdout: 'one\n', stderr: 'a\nb\nc\nd\n\u009b2Je\n' }, '/tmp/x');
    expect(text).toBe('stdout "one", stderr "a\\nb\\nc\\n…\\n\\u009b2Je"');
  });
});
