import { describe, expect, test } from 'vitest';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { z } from 'zod';
import {
  adapterRejection,
  argumentsFromSchema,
  detectTemplate,
  readSessionId,
  renderArguments,
  resolveExecAdapter,
  resolveExecTools,
  SKIPPED_BY_OPERATOR,
  toolArguments,
  usesShellString,
  type ExecAdapter,
} from '../../harness/exec-adapter.js';
import { hintText } from '../../cli/hints.js';
import { adapterDescription, toolAccountText } from '../../cli/reporters/index.js';
import { withShapes } from '../../suites/engine/tool-calls.js';
import type { RawOutcome } from '../../harness/codex-session.js';
import { shellQuote } from '../../harness/observers.js';

const tool = (name: string, properties: Record<string, unknown>, required?: string[]) => ({
  name,
  inputSchema: { type: 'object', properties, ...(required ? { required } : {}) },
});

describe('exec adapter detection', () => {
  test('an array property becomes {{argv}}, a string property {{command}}', () => {
    expect(resolveExecAdapter([tool('echo', { text: { type: 'string' } }), tool('run', { argv: { type: 'array' } })])).toMatchObject({
      tool: 'run',
      arguments: { argv: '{{argv}}' },
      source: 'detected',
    });
    expect(resolveExecAdapter([tool('sh', { cmd: { type: ['string', 'null'] } })])).toMatchObject({ tool: 'sh', arguments: { cmd: '{{command}}' } });
  });
  test('no command-like tool: said without flag text (the CLI words the hint, with its flags)', () => {
    const result = resolveExecAdapter([tool('echo', { text: { type: 'string' } })]);
    expect(result).toEqual({ missing: 'the suite found no tool that runs a command' });
    expect(hintText('exec-adapter', {})).toMatch(/--exec-tool NAME --exec-args/);
  });
  test('--exec-tool without --exec-args reads that tool schema; an unknown tool is reported', () => {
    const tools = [tool('a', { command: { type: 'array' } }), tool('b', { command: { type: 'string' } })];
    expect(resolveExecAdapter(tools, { tool: 'b', source: 'flag' })).toMatchObject({ tool: 'b', arguments: { command: '{{command}}' } });
    expect(resolveExecAdapter(tools, { tool: 'zzz', source: 'flag' })).toEqual({ missing: expect.stringContaining('no tool named "zzz"') });
  });
  test('a command declared as anyOf/oneOf of string and array is detected, the array form preferred', () => {
    const str = { type: 'string' };
    const arr = { type: 'array', items: { type: 'string' } };
    for (const union of [
      { anyOf: [str, arr] },
      { anyOf: [arr, str] },
      { oneOf: [str, arr, { type: 'null' }] },
      { oneOf: [{ type: 'null' }, arr] },
      { type: ['string', 'array'] },
    ]) {
      expect(argumentsFromSchema(tool('shell', { command: union }))).toEqual({ command: '{{argv}}' });
    }
    expect(argumentsFromSchema(tool('shell', { command: { anyOf: [str, { type: 'null' }] } }))).toEqual({ command: '{{command}}' });
    expect(argumentsFromSchema(tool('shell', { command: { anyOf: [{ type: 'number' }] } }))).toBeUndefined();
  });
  test('a required cwd-like string property gets "{{cwd}}"; a required timeout a generous value; optional properties are left out', () => {
    const schema = { command: { type: 'array' }, cwd: { type: 'string' }, timeout: { type: 'number' }, env: { type: 'object' } };
    expect(argumentsFromSchema(tool('shell', schema, ['command', 'cwd', 'timeout']))).toEqual({ command: '{{argv}}', cwd: '{{cwd}}', timeout: 60_000 });
    expect(argumentsFromSchema(tool('shell', schema, ['command']))).toEqual({ command: '{{argv}}' });
    for (const name of ['workdir', 'working_directory', 'workingDirectory', 'dir', 'directory']) {
      expect(argumentsFromSchema(tool('run', { cmd: { type: 'string' }, [name]: { type: ['string', 'null'] } }, ['cmd', name]))).toEqual({
        cmd: '{{command}}',
        [name]: '{{cwd}}',
      });
    }
    // Not of string type, or a string with nothing to choose from: left out, and named.
    const found = detectTemplate(tool('run', { cmd: { type: 'string' }, cwd: { type: 'array' }, mode: { type: 'string' } }, ['cmd', 'cwd', 'mode']));
    expect(found).toEqual({ arguments: { cmd: '{{command}}' }, chosen: [], unfilled: ['cwd', 'mode'] });
  });
  test("desktop-commander's start_process (required command string and timeout_ms number) gets a template its schema accepts", () => {
    const startProcess = {
      name: 'start_process',
      description: 'Start a new terminal process with intelligent state detection.',
      inputSchema: {
        type: 'object',
        properties: { command: { type: 'string' }, timeout_ms: { type: 'number' }, shell: { type: 'string' }, verbose_timing: { type: 'boolean' } },
        required: ['command', 'timeout_ms'],
        additionalProperties: false,
      },
    };
    const adapter = resolveExecAdapter([startProcess]);
    expect(adapter).toMatchObject({
      tool: 'start_process',
      arguments: { command: '{{command}}', timeout_ms: 60_000 },
      source: 'detected',
      chosen: ['timeout_ms: 60000 (a timeout in ms: generous)'],
    });
    // The header says which values were chosen and why; the hint prints that template, which the schema accepts.
    expect(adapterDescription(adapter as ExecAdapter)).toContain('chose timeout_ms: 60000 (a timeout in ms: generous)');
    const hint = hintText('exec-adapter', { exec: adapter as ExecAdapter });
    expect(hint).toContain(`--exec-tool start_process --exec-args '{"command":"{{command}}","timeout_ms":60000}'`);
    expect(hint).not.toContain('{{argv}}');
  });
  test('every required property is filled from its schema where it can be: default, const, enum, examples, bounds, unit', () => {
    const props = {
      script: { type: 'string' },
      shell: { type: 'string', default: 'bash' },
      kind: { type: 'string', const: 'oneshot' },
      mode: { type: 'string', enum: ['fast', 'safe'] },
      label: { type: 'string', examples: ['build'] },
      retries: { type: 'integer', minimum: 2, maximum: 5 },
      timeoutSeconds: { type: 'integer', maximum: 30, description: 'in seconds' },
      timeout_s: { type: 'number' },
      detach: { type: 'boolean' },
      note: { type: 'string' },
    };
    const found = detectTemplate(tool('run_script', props, Object.keys(props)));
    expect(found?.arguments).toEqual({
      script: '{{command}}',
      shell: 'bash',
      kind: 'oneshot',
      mode: 'fast',
      label: 'build',
      retries: 2,
      timeoutSeconds: 30,
      timeout_s: 60,
      detach: false,
    });
    expect(found?.unfilled).toEqual(['note']);
    expect(found?.chosen).toContain('timeoutSeconds: 30 (a timeout in seconds: generous, within its bounds)');
    // The header warns about what could not be filled, and the hint asks for it.
    const adapter = resolveExecAdapter([tool('run_script', props, Object.keys(props))]) as ExecAdapter;
    expect(adapterDescription(adapter)).toMatch(/WARNING: could not fill the required "note"/);
    expect(hintText('exec-adapter', { exec: adapter })).toMatch(/with a value of your own for "note"/);
  });
  test('every command property name, and a description that says it runs something, are detected', () => {
    for (const name of ['command', 'cmd', 'argv', 'script', 'code', 'shell', 'program', 'commandLine']) {
      expect(argumentsFromSchema(tool('t', { [name]: { type: 'string' } }))).toEqual({ [name]: '{{command}}' });
    }
    const byDescription = {
      name: 'go',
      description: 'Runs a shell command line and returns its output.',
      inputSchema: { type: 'object', properties: { line: { type: 'string' }, n: { type: 'number' } }, required: ['line'] },
    };
    expect(argumentsFromSchema(byDescription)).toEqual({ line: '{{command}}' });
    expect(argumentsFromSchema({ ...byDescription, description: 'Echo a line.' })).toBeUndefined();
  });
  test('explicit arguments win', () => {
    expect(resolveExecAdapter([], { tool: 'x', arguments: { a: 1 }, source: 'config' })).toEqual({ tool: 'x', arguments: { a: 1 }, source: 'config' });
  });
});

describe('every exec tool', () => {
  const tools = [
    tool('exec', { command: { type: 'array' } }, ['command']),
    tool('echo', { text: { type: 'string' } }),
    tool('run_script', { script: { type: 'string' } }, ['script']),
    { ...tool('rm_rf', { command: { type: 'string' } }), annotations: { destructiveHint: true } },
    { name: 'web', description: 'Starts a browser process.', inputSchema: { type: 'object', properties: { url: { type: 'number' } } } },
  ];
  test('the first is the primary; every other that takes a command is driven, whatever its annotations; every listed tool is accounted for', () => {
    const { primary, extra, accounts } = resolveExecTools(tools);
    expect(primary).toMatchObject({ tool: 'exec' });
    expect(extra.map((a) => a.tool)).toEqual(['run_script', 'rm_rf']);
    expect(accounts.map((a) => [a.name, a.role ?? a.why])).toEqual([
      ['exec', 'primary'],
      ['run_script', 'extra'],
      ['rm_rf', 'extra'],
      ['echo', 'no command-like input'],
      ['web', 'its description says it runs something, but it has no property the suite can place a command in'],
    ]);
  });
  test('named tools say how to call them and which is the primary; detection still drives every other exec tool', () => {
    const { primary, extra, accounts } = resolveExecTools(tools, {
      configured: [
        { tool: 'run_script', source: 'flag' },
        { tool: 'exec', arguments: { command: '{{argv}}' }, source: 'flag' },
        { tool: 'nope', source: 'flag' },
      ],
    });
    expect(primary).toMatchObject({ tool: 'run_script', arguments: { script: '{{command}}' }, source: 'flag' });
    expect(extra.map((a) => [a.tool, a.source])).toEqual([
      ['exec', 'flag'],
      ['rm_rf', 'detected'],
    ]);
    expect(accounts.find((a) => a.name === 'nope')?.why).toMatch(/no tool named "nope"/);
  });
  test('only a name the operator leaves out keeps an exec tool undriven, and its account says so', () => {
    const { extra, accounts } = resolveExecTools(tools, { skip: ['rm_rf'] });
    expect(extra.map((a) => a.tool)).toEqual(['run_script']);
    expect(accounts.find((a) => a.name === 'rm_rf')).toEqual({ name: 'rm_rf', why: SKIPPED_BY_OPERATOR, skipped: true });
  });
  test('a tool the Codex config disables is accounted for, not driven', () => {
    const { extra, accounts } = resolveExecTools(tools, { filter: { disabled: ['run_script', 'rm_rf'] } });
    expect(extra).toEqual([]);
    expect(accounts.find((a) => a.name === 'run_script')?.why).toMatch(/not enabled/);
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
  test('{{cwd}} and other vars are filled when given and left as they are otherwise; values are not substituted again', () => {
    const template = { command: '{{argv}}', cwd: '{{cwd}}', id: '{{sessionId}}' };
    expect(renderArguments(template, ['ls'], { cwd: '/w/work space' })).toEqual({ command: ['ls'], cwd: '/w/work space', id: '{{sessionId}}' });
    expect(renderArguments(template, ['ls'])).toEqual({ command: ['ls'], cwd: '{{cwd}}', id: '{{sessionId}}' });
    expect(renderArguments('{{cwd}} {{command}}', ['echo', '{{cwd}}'], { cwd: '{{command}}' })).toBe("{{command}} echo '{{cwd}}'");
  });
  test('toolArguments: one place builds a call: the command as the template places it, variables, optional values, extra properties', () => {
    const argvTool = { tool: 'run', arguments: { command: '{{argv}}', cwd: '{{cwd}}' } };
    const built = toolArguments(
      argvTool,
      { argv: ['ls', 'a b'], script: 'ignored' },
      { vars: { cwd: '/w' }, optional: { timeout_ms: 60000 }, extra: { x: 1 } },
    );
    expect(built).toEqual({ arguments: { command: ['ls', 'a b'], cwd: '/w', timeout_ms: 60000, x: 1 }, argv: ['ls', 'a b'], line: "ls 'a b'" });
    // A shell-string tool gets a script verbatim when one is given, else the quoted argv; no argv to match after `--`.
    const shellTool = { tool: 'sh', arguments: { cmd: '{{command}}' } };
    expect(toolArguments(shellTool, { argv: ['echo', 'hi there'] })).toEqual({ arguments: { cmd: "echo 'hi there'" }, line: "echo 'hi there'" });
    expect(toolArguments(shellTool, { argv: ['x'], script: 'echo $HOME | cat' })).toEqual({ arguments: { cmd: 'echo $HOME | cat' }, line: 'echo $HOME | cat' });
    // Nothing is set on a template that is not an object.
    expect(toolArguments({ tool: 't', arguments: '{{command}}' }, { argv: ['ls'] }, { extra: { x: 1 } }).arguments).toBe('ls');
  });
  test("the header says what a tool is sent beyond its template: its optional properties and their values, a code tool's languages", () => {
    const adapter: ExecAdapter = { tool: 'run', arguments: { command: '{{argv}}' }, source: 'detected' };
    const account = withShapes({ name: 'run', role: 'extra', adapter });
    expect(account.sent).toBeUndefined();
    expect(toolAccountText(account)).toBe(
      '"run": tested by the fixed EXEC-1/LAUNCH calls (execution/every-exec-tool) with {"command":"{{argv}}"} (detected from its input schema)',
    );
    const inputSchema = { type: 'object', properties: { command: { type: 'array' }, workdir: { type: 'string' }, login: { type: 'boolean' } } };
    expect(toolAccountText(withShapes({ ...account, adapter: { ...adapter, inputSchema } }))).toContain(
      'with {"command":"{{argv}}"}; its calls also send each optional property alone and all together (workdir: "{{cwd}}" | "{{subdir}}"; login: true | false) (',
    );
  });
  test('shellQuote round-trips through sh', async () => {
    const { execFileSync } = await import('node:child_process');
    const tricky = ["it's", 'a b', '$(touch x)', '"q"', '', 'plain'];
    const out = execFileSync('sh', ['-c', `printf '%s\\n' ${tricky.map(shellQuote).join(' ')}`], { encoding: 'utf8' });
    expect(out.split('\n').slice(0, -1)).toEqual(tricky);
  });
});

describe('adapter description', () => {
  test('names the tool, the template and where it came from', () => {
    expect(adapterDescription({ tool: 'run', arguments: { cmd: '{{command}}' }, source: 'detected' })).toBe(
      'exec tool "run" with arguments {"cmd":"{{command}}"} (detected from its input schema)',
    );
    expect(adapterDescription({ tool: 'x', arguments: {}, source: 'flag' })).toMatch(/\(given by --exec-tool\)$/);
    expect(adapterDescription({ tool: 'x', arguments: {}, source: 'config' })).toMatch(/\(from the config file\)$/);
  });
});

const errorResult = (text: string): RawOutcome => ({ kind: 'result', result: { content: [{ type: 'text', text }], isError: true }, message: {} });
const rpcError = (code: number, message: string): RawOutcome => ({ kind: 'error', error: { code, message }, message: {} });

describe('adapterRejection', () => {
  test("the SDK's own messages for an unknown tool and for arguments its schema refuses", async () => {
    // Produced live, so that a change of wording in the SDK shows here.
    const server = new McpServer({ name: 's', version: '1' });
    server.registerTool('exec', { inputSchema: { command: z.array(z.string()).min(1), cwd: z.string() } }, async () => ({
      content: [{ type: 'text', text: 'ran' }],
    }));
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'c', version: '1' });
    await client.connect(clientSide);
    try {
      for (const [name, args] of [
        ['nope', {}],
        ['exec', {}],
        ['exec', { command: 'ls', cwd: '/' }],
        ['exec', { command: [], cwd: '/' }],
        ['exec', { command: ['ls'] }],
      ] as const) {
        const result = await client.callTool({ name, arguments: args });
        expect(result.isError, JSON.stringify(result)).toBe(true);
        expect(adapterRejection({ kind: 'result', result, message: {} }), JSON.stringify(result)).toBe((result.content as { text: string }[])[0]!.text);
      }
      const ok = await client.callTool({ name: 'exec', arguments: { command: ['ls'], cwd: '/' } });
      expect(adapterRejection({ kind: 'result', result: ok, message: {} })).toBeUndefined();
    } finally {
      await client.close();
      await server.close();
    }
  });
  test('recorded messages of the SDK and of other servers', () => {
    for (const text of [
      'MCP error -32602: Tool nope not found',
      'MCP error -32602: Input validation error: Invalid arguments for tool exec: Invalid input: expected array, received undefined at command',
      'MCP error -32602: Input validation error: Invalid arguments for tool exec: [\n  {\n    "code": "invalid_type",\n    "expected": "array",\n    "received": "undefined",\n    "path": ["command"],\n    "message": "Required"\n  }\n]',
      'Unknown tool: exec',
      'Error executing tool exec: 1 validation error for execArguments\ncommand\n  Field required [type=missing, input_value={}, input_type=dict]',
      "'command' is a required property",
      "data must have required property 'cwd'",
      'Invalid arguments: cwd must be an absolute path. Nothing was run.',
      'Schema validation failed: /command must be array',
      'missing required argument: cwd',
    ]) {
      expect(adapterRejection(errorResult(text)), text).toBe(text);
    }
    expect(adapterRejection(rpcError(-32602, 'MCP error -32602: invalid cursor'))).toBe('MCP error -32602: invalid cursor');
    expect(adapterRejection(rpcError(-32601, 'Method not found'))).toBe('Method not found');
    expect(adapterRejection(rpcError(-32603, 'Internal error: Unknown tool: run'))).toBe('Internal error: Unknown tool: run');
  });
  test('sandbox refusals, failures and successes are not rejections', () => {
    for (const text of [
      'Refused: no sandbox launcher in _meta (codex/sandbox-launcher), so there is no sandbox to run the command in. Nothing was run.',
      'Refused: the sandbox launcher is malformed (codexExecutable must be an absolute path), so there is no sandbox to run the command in. Nothing was run.',
      'Refused: the sandbox state in _meta is not a JSON object, so there is no sandbox to run the command in. Nothing was run.',
      'Refused: no sandbox launcher is accepted over HTTP, so there is no sandbox to run the command in. Nothing was run.',
      'Refused: the sandbox state differs from the one this session was opened under; open a new session instead. Nothing was sent.',
      'sandbox launcher validation failed: /x/codex is not executable',
      'Failed to start /w/launcher/codex: spawn EACCES. Nothing was run.',
      'fake codex: expected sandbox --sandbox-state-json <state> -- <command...>\nexit code: 64',
      'MCP error -32602: Output validation error: Tool exec has an output schema but no structured content was provided',
    ]) {
      expect(adapterRejection(errorResult(text)), text).toBeUndefined();
    }
    expect(adapterRejection({ kind: 'result', result: { content: [{ type: 'text', text: 'Unknown tool: x' }] }, message: {} })).toBeUndefined();
    expect(adapterRejection(rpcError(-32603, 'Internal error: spawn ENOENT'))).toBeUndefined();
    expect(adapterRejection(rpcError(-32000, 'Refused: no sandbox launcher in _meta'))).toBeUndefined();
    expect(adapterRejection({ kind: 'timeout', afterMs: 10 })).toBeUndefined();
    expect(adapterRejection({ kind: 'closed', detail: 'server exited' })).toBeUndefined();
  });
});

describe('readSessionId', () => {
  const text = (t: string) => ({ content: [{ type: 'text', text: t }] });
  test('with a path: a string or a number there', () => {
    expect(readSessionId({ structuredContent: { id: 7 } }, 'structuredContent.id')).toBe('7');
    expect(readSessionId(text('abc'), 'content.0.text')).toBe('abc');
    expect(readSessionId({ structuredContent: { id: { x: 1 } } }, 'structuredContent.id')).toBeUndefined();
    expect(readSessionId({ structuredContent: { sessionId: 's' } }, 'nowhere')).toBeUndefined();
  });
  test('without: structuredContent.sessionId, else the only text block, or its JSON sessionId', () => {
    expect(readSessionId({ ...text('{"sessionId":"t"}'), structuredContent: { sessionId: 's' } })).toBe('s');
    expect(readSessionId({ structuredContent: { sessionId: 12 } })).toBe('12');
    expect(readSessionId(text('  0410aab9-ddcd\n'))).toBe('0410aab9-ddcd');
    expect(readSessionId(text('{"sessionId": 42}'))).toBe('42');
    expect(readSessionId(text('{"other": 1}'))).toBeUndefined();
    expect(readSessionId(text('{not json'))).toBe('{not json');
    expect(readSessionId({ content: [{ type: 'image', data: '' }, ...text('only').content] })).toBe('only');
    expect(readSessionId({ content: [...text('a').content, ...text('b').content] })).toBeUndefined();
    expect(readSessionId(text('   '))).toBeUndefined();
    expect(readSessionId(undefined)).toBeUndefined();
  });
  test("a detected pair's id: its own name first, then the usual ones, in structuredContent or a JSON text", () => {
    expect(readSessionId({ structuredContent: { terminal_id: 't-3', id: 'x' } }, undefined, ['terminal_id'])).toBe('t-3');
    expect(readSessionId({ structuredContent: { pid: 4242 } })).toBe('4242');
    expect(readSessionId(text('{"session_id": "s-1", "note": "ready"}'))).toBe('s-1');
    expect(readSessionId(text('{"terminalId": 9}'), undefined, ['terminalId'])).toBe('9');
  });
  test('text that names the id: "session:<id>", "Session ID = <id>", "pid 1234"; a bare number is the id', () => {
    expect(readSessionId(text('session:0410aab9-ddcd'))).toBe('0410aab9-ddcd');
    expect(readSessionId(text('Opened /bin/sh.\nSession ID = abc_12 (use it with shell_send)'))).toBe('abc_12');
    expect(readSessionId(text('Started process with PID 1234, waiting for input'))).toBe('1234');
    expect(readSessionId(text('terminal_id: t-7.'))).toBe('t-7');
    expect(readSessionId(text('1002'))).toBe('1002');
    expect(readSessionId(text('opened session: 5'))).toBe('5');
    expect(readSessionId(text('no id here, sorry'))).toBe('no id here, sorry');
  });
});
