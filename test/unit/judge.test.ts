import { describe, expect, test } from 'vitest';
import { parseLaunchArgv, structuralDiff } from '../../suites/engine/judge.js';
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
