import { describe, expect, test } from 'vitest';
import { commandShapes, detectTemplate, renderArguments, toolArguments, type ExecAdapter } from '../../harness/exec-adapter.js';
import { toolAccountText } from '../../cli/reporters/index.js';
import { argumentChoices, choicesOf, optionalProperties, withShapes } from '../../suites/engine/tool-calls.js';

// Every shape a command property takes (issue 29 item 4): each is another argument choice, so a
// server whose other branch runs the command directly is driven down that branch too.
const tool = (name: string, properties: Record<string, unknown>, required?: string[], description?: string) => ({
  name,
  ...(description ? { description } : {}),
  inputSchema: { type: 'object', properties, ...(required ? { required } : {}) },
});
/** The adapter detection makes of a tool (its schema kept, as resolveExecTools keeps it). */
const adapterOf = (listed: ReturnType<typeof tool>): ExecAdapter => ({
  tool: listed.name,
  arguments: detectTemplate(listed)!.arguments,
  source: 'detected',
  inputSchema: listed.inputSchema,
});
const STRING_OR_ARGV = { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] };
const ARGV = ['/p/probe', 'n1', 'two words'];

describe('a command that takes a string or an argv array', () => {
  const both = tool('run', { command: STRING_OR_ARGV }, ['command']);
  test('the template sends the array; the string is another choice, named by its shape', () => {
    const adapter = adapterOf(both);
    expect(adapter.arguments).toEqual({ command: '{{argv}}' });
    expect(commandShapes(adapter)).toEqual([{ arguments: { command: '{{command}}' }, label: 'command as a shell string' }]);
    expect(argumentChoices(adapter).map((c) => c.label)).toEqual(['its template', 'with command as a shell string']);
    const shape = commandShapes(adapter)[0]!;
    expect(toolArguments(adapter, { argv: ARGV }, { shape })).toEqual({ arguments: { command: "/p/probe n1 'two words'" }, line: "/p/probe n1 'two words'" });
    // A grammar script goes verbatim into the string shape, as into any shell-string tool.
    expect(toolArguments(adapter, { argv: ['sh', '-c', 'a | b'], script: 'a | b' }, { shape }).arguments).toEqual({ command: 'a | b' });
  });
  test('type: ["string", "array"] counts too; an operator template that sends the string gets the array as its other shape', () => {
    const listed = tool('run', { cmd: { type: ['string', 'array'], items: { type: 'string' } } });
    expect(commandShapes(adapterOf(listed)).map((s) => s.label)).toEqual(['cmd as a shell string']);
    const named: ExecAdapter = { tool: 'run', arguments: { cmd: '{{command}}', cwd: '/w' }, source: 'flag', inputSchema: listed.inputSchema };
    expect(commandShapes(named)).toEqual([{ arguments: { cmd: '{{argv}}', cwd: '/w' }, label: 'cmd as an argv array' }]);
  });
  test('a command that takes one shape only, a code tool, a template with the command inside a longer string: no other shape, no extra calls', () => {
    expect(argumentChoices(adapterOf(tool('run', { command: { type: 'array', items: { type: 'string' } } })))).toHaveLength(1);
    expect(argumentChoices(adapterOf(tool('run', { command: { type: 'string' } })))).toHaveLength(1);
    const wrapped: ExecAdapter = { tool: 'run', arguments: { command: 'bash -lc {{command}}' }, source: 'flag', inputSchema: both.inputSchema };
    expect(commandShapes(wrapped)).toEqual([]);
    expect(commandShapes({ arguments: { command: '{{argv}}' } })).toEqual([]);
    const code = tool('run_python', { code: { type: 'string' } }, ['code'], 'Run Python code.');
    expect(commandShapes({ ...adapterOf(code), arguments: { code: '{{program}}' } })).toEqual([]);
  });
});

describe('an argv array beside a command string (args, arguments, argv, params)', () => {
  test('optional: the template sends a shell line; the program with its arguments in args is another choice', () => {
    const adapter = adapterOf(tool('spawn', { command: { type: 'string' }, args: { type: 'array', items: { type: 'string' } } }, ['command']));
    expect(adapter.arguments).toEqual({ command: '{{command}}' });
    const shapes = commandShapes(adapter);
    expect(shapes).toEqual([{ arguments: { command: '{{argv0}}', args: '{{argvRest}}' }, label: 'the program in command, its arguments in args' }]);
    expect(toolArguments(adapter, { argv: ARGV, script: 'ignored' }, { shape: shapes[0] })).toEqual({
      arguments: { command: '/p/probe', args: ['n1', 'two words'] },
      argv: ARGV,
      line: "/p/probe n1 'two words'",
    });
    expect(argumentChoices(adapter).map((c) => c.label)).toEqual(['its template', 'with the program in command, its arguments in args']);
  });
  test('required: the template is the program and its arguments (the argv judged exactly), and no other shape', () => {
    const adapter = adapterOf(tool('spawn', { cmd: { type: 'string' }, arguments: { type: 'array', items: { type: 'string' } } }, ['cmd', 'arguments']));
    expect(adapter.arguments).toEqual({ cmd: '{{argv0}}', arguments: '{{argvRest}}' });
    expect(commandShapes(adapter)).toEqual([]);
    expect(toolArguments(adapter, { argv: ARGV }).argv).toEqual(ARGV);
  });
  test('an anyOf command beside args: the string, and the program with args, each a choice', () => {
    const adapter = adapterOf(tool('run', { command: STRING_OR_ARGV, params: { type: 'array', items: { type: 'string' } } }, ['command']));
    expect(commandShapes(adapter).map((s) => s.label)).toEqual(['command as a shell string', 'the program in command, its arguments in params']);
  });
  test('an array of something else, or args already in the template, is no argv', () => {
    expect(commandShapes(adapterOf(tool('run', { command: { type: 'string' }, args: { type: 'array', items: { type: 'number' } } })))).toEqual([]);
    const named: ExecAdapter = {
      tool: 'run',
      arguments: { command: '{{command}}', args: [] },
      source: 'flag',
      inputSchema: tool('run', { command: { type: 'string' }, args: { type: 'array' } }).inputSchema,
    };
    expect(commandShapes(named)).toEqual([]);
  });
  test('{{argv0}} and {{argvRest}} render as the program and the rest', () => {
    expect(renderArguments({ c: '{{argv0}}', a: '{{argvRest}}' }, ['ls', '-l', 'a b'])).toEqual({ c: 'ls', a: ['-l', 'a b'] });
  });
});

describe('a command nested one level down', () => {
  test('{request: {command, cwd?}} is found with no configuration; required siblings at both levels are filled', () => {
    const listed = tool(
      'execute',
      {
        request: {
          type: 'object',
          properties: { command: { type: 'string' }, cwd: { type: 'string' }, timeout_ms: { type: 'number' } },
          required: ['command', 'timeout_ms'],
        },
        verbose: { type: 'boolean' },
      },
      ['request', 'verbose'],
    );
    const found = detectTemplate(listed)!;
    expect(found.arguments).toEqual({ request: { command: '{{command}}', timeout_ms: 60000 }, verbose: false });
    expect(found.chosen).toEqual(['request.timeout_ms: 60000 (a timeout in ms: generous)', 'verbose: false (a boolean: false)']);
    expect(toolArguments(adapterOf(listed), { argv: ['ls'] }).arguments).toEqual({ request: { command: 'ls', timeout_ms: 60000 }, verbose: false });
  });
  test('the optional properties beside a nested command are set where they are, named by their path', () => {
    const adapter = adapterOf(
      tool('run_request', { request: { type: 'object', properties: { command: { type: 'string' }, cwd: { type: 'string' } }, required: ['command'] } }, [
        'request',
      ]),
    );
    expect(optionalProperties(adapter)).toEqual([{ name: 'request.cwd', values: ['{{cwd}}', '{{subdir}}'], fixed: ['{{cwd}}', '{{subdir}}'] }]);
    expect(argumentChoices(adapter).map((c) => c.label)).toEqual(['its template', 'with request.cwd "{{cwd}}"', 'with request.cwd "{{subdir}}"']);
    const built = toolArguments(adapter, { argv: ['ls'] }, { optional: { 'request.cwd': '{{cwd}}' }, vars: { cwd: '/w' } });
    expect(built.arguments).toEqual({ request: { command: 'ls', cwd: '/w' } });
    // A top-level name with a dot, where the template puts no object, stays a name.
    expect(toolArguments(adapterOf(tool('run', { command: { type: 'string' } }, ['command'])), { argv: ['ls'] }, { optional: { 'a.b': 1 } }).arguments).toEqual(
      {
        command: 'ls',
        'a.b': 1,
      },
    );
  });
  test('{params: {cmd: string | string[]}}: the array in the template, the string as another shape, named by its path', () => {
    const adapter = adapterOf(tool('run', { params: { type: 'object', properties: { cmd: STRING_OR_ARGV } } }, ['params']));
    expect(adapter.arguments).toEqual({ params: { cmd: '{{argv}}' } });
    expect(commandShapes(adapter)).toEqual([{ arguments: { params: { cmd: '{{command}}' } }, label: 'params.cmd as a shell string' }]);
  });
  test('a command at the top level wins; a nested shell name or option is no command; nesting beats a guess from the description', () => {
    const nestedToo = tool('run', { command: { type: 'string' }, options: { type: 'object', properties: { cmd: { type: 'string' } } } });
    expect(detectTemplate(nestedToo)!.arguments).toEqual({ command: '{{command}}' });
    expect(detectTemplate(tool('fmt', { options: { type: 'object', properties: { shell: { type: 'string' } } } }))).toBeUndefined();
    const described = tool(
      'run',
      { mode: { type: 'string' }, request: { type: 'object', properties: { command: { type: 'string' } } } },
      ['mode', 'request'],
      'Runs a command.',
    );
    expect(detectTemplate(described)!.arguments).toMatchObject({ request: { command: '{{command}}' } });
  });
});

test('the header names each shape a tool is sent, with its template', () => {
  const adapter = adapterOf(tool('run', { command: STRING_OR_ARGV, args: { type: 'array', items: { type: 'string' } } }, ['command']));
  const account = withShapes({ name: 'run', role: 'extra', adapter });
  expect(account.shapes).toEqual([{ command: '{{command}}' }, { command: '{{argv0}}', args: '{{argvRest}}' }]);
  expect(toolAccountText(account)).toContain(
    'with {"command":"{{argv}}"}; its calls also send command as a shell string {"command":"{{command}}"}; the program in command, its arguments in args {"command":"{{argv0}}","args":"{{argvRest}}"} (',
  );
});

// Values from the schema (issue 42 item 1): every value a model may give, exploration's; one per property for the fixed checks.
describe('values from the schema', () => {
  test('numbers at their minimum, a typical value and their maximum (or, unbounded, a timeout of an hour); strings, arrays, objects', () => {
    expect(choicesOf('timeout_ms', { type: 'integer', minimum: 1 })).toEqual({ values: [1, 60000, 3_600_000], fixed: [3_600_000] });
    expect(choicesOf('timeout', { type: 'number', description: 'seconds' })).toEqual({ values: [60, 3_600], fixed: [3_600] });
    expect(choicesOf('priority', { type: 'integer', minimum: 0, maximum: 10 })).toEqual({ values: [0, 1, 10], fixed: [10] });
    expect(choicesOf('label', { type: 'string' })).toEqual({ values: ['notes'], fixed: ['notes'] });
    expect(choicesOf('mode', { type: 'string', default: 'fast', examples: ['fast', 'slow'] })).toEqual({ values: ['fast', 'slow'], fixed: ['fast'] });
    expect(choicesOf('callback', { type: 'string', format: 'uri' }).values).toEqual(['https://example.com/']);
    expect(choicesOf('tags', { type: 'array', items: { type: 'string' } }).values).toEqual([['notes']]);
    expect(choicesOf('metadata', { type: 'object', properties: { owner: { type: 'string' } } }).values).toEqual([{ owner: 'notes' }]);
    expect(choicesOf('notify', { type: 'boolean' })).toEqual({ values: [true, false], fixed: [true, false] });
  });
  test('the fixed checks send one value per property; exploration every one; the header lists them all', () => {
    const adapter = adapterOf(
      tool('run_job', { command: { type: 'string' }, timeout_ms: { type: 'integer', minimum: 1 }, label: { type: 'string' } }, ['command']),
    );
    expect(argumentChoices(adapter).map((c) => c.label)).toEqual([
      'its template',
      'with timeout_ms 3600000',
      'with label "notes"',
      'with timeout_ms 3600000, label "notes"',
    ]);
    expect(argumentChoices(adapter, 'all').map((c) => c.label)).toEqual([
      'its template',
      'with timeout_ms 1',
      'with timeout_ms 60000',
      'with timeout_ms 3600000',
      'with label "notes"',
      'with timeout_ms 3600000, label "notes"',
    ]);
    expect(withShapes({ name: 'run_job', adapter } as never).sent).toEqual([
      'each optional property alone and all together (timeout_ms: 1 | 60000 | 3600000*; label: "notes"; the fixed checks send those marked *)',
    ]);
  });
});
