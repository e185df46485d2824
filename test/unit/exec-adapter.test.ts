import { describe, expect, test } from 'vitest';
import { renderArguments, resolveExecAdapter, usesShellString } from '../../harness/exec-adapter.js';
import { shellQuote } from '../../harness/observers.js';

const tool = (name: string, properties: Record<string, unknown>) => ({ name, inputSchema: { type: 'object', properties } });

describe('exec adapter detection', () => {
  test('an array property becomes {{argv}}, a string property {{command}}', () => {
    expect(resolveExecAdapter([tool('echo', { text: { type: 'string' } }), tool('run', { argv: { type: 'array' } })])).toEqual({
      tool: 'run',
      arguments: { argv: '{{argv}}' },
      source: 'detected',
    });
    expect(resolveExecAdapter([tool('sh', { cmd: { type: ['string', 'null'] } })])).toMatchObject({ tool: 'sh', arguments: { cmd: '{{command}}' } });
  });
  test('no command-like tool: a hint that names the flags', () => {
    const result = resolveExecAdapter([tool('echo', { text: { type: 'string' } })]);
    expect(result).toHaveProperty('missing');
    expect((result as { missing: string }).missing).toMatch(/--exec-tool NAME --exec-args/);
  });
  test('--exec-tool without --exec-args reads that tool schema; an unknown tool is reported', () => {
    const tools = [tool('a', { command: { type: 'array' } }), tool('b', { command: { type: 'string' } })];
    expect(resolveExecAdapter(tools, { tool: 'b', source: 'flag' })).toMatchObject({ tool: 'b', arguments: { command: '{{command}}' } });
    expect(resolveExecAdapter(tools, { tool: 'zzz', source: 'flag' })).toEqual({ missing: expect.stringContaining('no tool named "zzz"') });
  });
  test('explicit arguments win', () => {
    expect(resolveExecAdapter([], { tool: 'x', arguments: { a: 1 }, source: 'config' })).toEqual({ tool: 'x', arguments: { a: 1 }, source: 'config' });
  });
});

describe('rendering', () => {
  test('{{argv}} becomes an array, {{command}} a shell-quoted string, anywhere in the template', () => {
    const argv = ['/p/probe', 'n1', 'two words', "it's"];
    expect(renderArguments({ command: '{{argv}}', opts: [{ shell: 'bash -lc {{command}}' }], n: 3 }, argv)).toEqual({
      command: argv,
      opts: [{ shell: `bash -lc /p/probe n1 'two words' 'it'\\''s'` }],
      n: 3,
    });
    expect(usesShellString({ c: '{{command}}' })).toBe(true);
    expect(usesShellString({ c: '{{argv}}' })).toBe(false);
  });
  test('shellQuote round-trips through sh', async () => {
    const { execFileSync } = await import('node:child_process');
    const tricky = ["it's", 'a b', '$(touch x)', '"q"', '', 'plain'];
    const out = execFileSync('sh', ['-c', `printf '%s\\n' ${tricky.map(shellQuote).join(' ')}`], { encoding: 'utf8' });
    expect(out.split('\n').slice(0, -1)).toEqual(tricky);
  });
});
