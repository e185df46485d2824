import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { execEntries, execFlags, globMatcher, loadConfig, parseEnvPairs, parseExecArgs, skippedTools, UsageError, validateConfig } from '../../cli/config.js';

const dir = mkdtempSync(join(tmpdir(), 'msc-config-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('config file', () => {
  test('a valid file loads', () => {
    const file = join(dir, 'ok.json');
    writeFileSync(file, JSON.stringify({ exec: { tool: 'run', arguments: { argv: '{{argv}}' } }, env: { A: 'b' }, startupTimeoutSec: 5 }));
    expect(loadConfig(file).config).toEqual({ exec: { tool: 'run', arguments: { argv: '{{argv}}' } }, env: { A: 'b' }, startupTimeoutSec: 5 });
  });
  test('bad input is a UsageError naming the problem', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, '{ "exec": ');
    expect(() => loadConfig(file)).toThrow(/bad.json is not valid JSON/);
    expect(() => loadConfig(join(dir, 'nope.json'))).toThrow(/cannot read config .*ENOENT/);
    expect(() => validateConfig({ exce: {} }, 'f')).toThrow(/"exce" is not a known setting/);
    expect(() => validateConfig({ exec: { arguments: {} } }, 'f')).toThrow(/"exec" must be/);
    expect(() => validateConfig({ env: { A: 1 } }, 'f')).toThrow(UsageError);
    expect(() => validateConfig({ startupTimeoutSec: -1 }, 'f')).toThrow(/positive number/);
    expect(() => validateConfig({ resourceReadMeta: { threadId: 't' } }, 'f')).toThrow(
      /Codex would refuse this read with -32600 "reserved resource read metadata key: threadId"/,
    );
    expect(() => validateConfig({ resourceReadMeta: 'x' }, 'f')).toThrow(/invalid type: string "x", expected a map/);
    expect(validateConfig({ resourceReadMeta: { mine: 1 } }, 'f')).toEqual({ resourceReadMeta: { mine: 1 } });
    expect(validateConfig({ elicitation: 'decline' }, 'f')).toEqual({ elicitation: 'decline' });
    expect(() => validateConfig({ elicitation: 'yes' }, 'f')).toThrow(/"elicitation" must be one of "accept", "decline", "cancel"/);
    expect(() => validateConfig({ session: { open: { tool: 'o' }, send: { tool: 's', arguments: {} }, sessionId: 'id' } }, 'f')).toThrow(/{{sessionId}}/);
  });
});

describe('flags', () => {
  test('--env pairs', () => {
    expect(parseEnvPairs(['A=1', 'B=x=y', 'C='])).toEqual({ A: '1', B: 'x=y', C: '' });
    expect(() => parseEnvPairs(['NOEQUALS'])).toThrow(/NAME=VALUE/);
  });
  test('repeated --exec-tool with one --exec-args each, or none; config "exec" may be a list', () => {
    expect(execFlags(['a', 'b'], ['{"c":"{{argv}}"}', '{"s":"{{command}}"}'])).toEqual([
      { tool: 'a', arguments: { c: '{{argv}}' }, source: 'flag' },
      { tool: 'b', arguments: { s: '{{command}}' }, source: 'flag' },
    ]);
    expect(execFlags(['a', 'b'], [])).toEqual([
      { tool: 'a', arguments: undefined, source: 'flag' },
      { tool: 'b', arguments: undefined, source: 'flag' },
    ]);
    expect(() => execFlags(['a', 'b'], ['{"c":"{{argv}}"}'])).toThrow(/one --exec-args per --exec-tool/);
    expect(() => execFlags([], ['{"c":"{{argv}}"}'])).toThrow(/--exec-args needs --exec-tool/);
    expect(() => execFlags(['a', 'a'], [])).toThrow(/--exec-tool a given more than once/);
    // The program and the rest of the argv beside it place the command too; the program alone does not.
    expect(execFlags(['a'], ['{"command":"{{argv0}}","args":"{{argvRest}}"}'])[0]!.arguments).toEqual({ command: '{{argv0}}', args: '{{argvRest}}' });
    expect(() => execFlags(['a'], ['{"command":"{{argv0}}"}'])).toThrow(/must place the command/);
    const list = [{ tool: 'a' }, { tool: 'b', arguments: { s: '{{command}}' } }];
    expect(validateConfig({ exec: list }, 'f')).toEqual({
      exec: [
        { tool: 'a', arguments: undefined },
        { tool: 'b', arguments: { s: '{{command}}' } },
      ],
    });
    expect(execEntries(validateConfig({ exec: { tool: 'a' } }, 'f').exec)).toEqual([{ tool: 'a', arguments: undefined }]);
    expect(() => validateConfig({ exec: [] }, 'f')).toThrow(/"exec" must be/);
    expect(() => validateConfig({ exec: [{ tool: '' }] }, 'f')).toThrow(/"exec" must be/);
  });
  test('--skip-tool and "skipTools": each name once; a name both driven and left out is an error', () => {
    expect(validateConfig({ skipTools: ['rm_rf'] }, 'f')).toEqual({ skipTools: ['rm_rf'] });
    expect(() => validateConfig({ skipTools: 'rm_rf' }, 'f')).toThrow(/"skipTools" must be a list of tool names/);
    expect(skippedTools(['a', 'b', 'a'], [])).toEqual(['a', 'b']);
    expect(() => skippedTools(['exec'], [{ tool: 'exec' }])).toThrow(/tool "exec" is named both to drive .* and to leave out/);
    expect(() => skippedTools([''], [])).toThrow(/--skip-tool needs a tool name/);
  });
  test('--exec-args must be JSON', () => {
    expect(parseExecArgs('{"a":"{{argv}}"}')).toEqual({ a: '{{argv}}' });
    expect(() => parseExecArgs('{a:1}')).toThrow(/--exec-args is not valid JSON/);
  });
  test('globs over check ids', () => {
    const match = globMatcher(['launcher/*', 'capability/advertised']);
    expect(['launcher/missing-file', 'capability/advertised', 'capability/current-name'].map(match)).toEqual([true, true, false]);
  });
});
