import { describe, expect, test } from 'vitest';
import { detectQueuePairs, detectSessionPairs, openShape, sendShape } from '../../harness/session-pairs.js';
import { resolveExecTools } from '../../harness/exec-adapter.js';

const tool = (name: string, properties: Record<string, unknown>, required: string[] = Object.keys(properties), description?: string) => ({
  name,
  ...(description ? { description } : {}),
  inputSchema: { type: 'object', properties, required },
});
const str = { type: 'string' };

describe('session pairs', () => {
  test('a send tool: a command-like input beside a required session id; `id` only when its description says session, terminal or process', () => {
    expect(sendShape(tool('shell_send', { session: str, command: str }))).toEqual({
      idProperty: 'session',
      numericId: false,
      arguments: { session: '{{sessionId}}', command: '{{command}}' },
      viaInput: false,
    });
    expect(sendShape(tool('interact_with_process', { pid: { type: 'integer' }, input: str }))).toMatchObject({ idProperty: 'pid', numericId: true });
    expect(sendShape(tool('write_stdin', { session_id: { type: 'number' }, chars: str }))).toMatchObject({ arguments: { chars: '{{command}}' } });
    expect(sendShape(tool('send', { id: { ...str, description: 'the terminal to write to' }, command: str }))).toMatchObject({ idProperty: 'id' });
    // An id of anything else, an optional session, or no command: not a send tool.
    expect(sendShape(tool('get_issue', { id: str, command: str }))).toBeUndefined();
    expect(sendShape(tool('run', { session: str, command: str }, ['command']))).toBeUndefined();
    expect(sendShape(tool('close', { sessionId: str }))).toBeUndefined();
    // A required property the schema cannot fill: not driven.
    expect(sendShape(tool('send', { session: str, command: str, token: str }))).toBeUndefined();
  });
  test('an open tool: by its name or description it opens a session, shell, terminal or process; its command gets the session shell', () => {
    expect(openShape(tool('shell_open', {}))).toEqual({});
    expect(openShape(tool('start_process', { command: str, timeout_ms: { type: 'number' } }))).toEqual({ command: '{{command}}', timeout_ms: 60_000 });
    expect(openShape(tool('begin', {}, [], 'Creates a new terminal and returns its terminal_id.'))).toEqual({});
    expect(openShape(tool('newTerminal', {}))).toEqual({});
    expect(openShape(tool('run_shell', { command: str }))).toBeUndefined();
    expect(openShape(tool('open_file', { path: str }))).toBeUndefined();
  });
  test('pairs by shared name words and descriptions; several pairs; none without an open tool', () => {
    const tools = [
      tool('run_shell', { command: str }),
      tool('session_open', { command: { type: 'array' } }, ['command'], 'Start a long-lived command and return its sessionId.'),
      tool('session_send', { sessionId: str, input: str }, undefined, 'Write one line to a session started by session_open.'),
      tool('shell_open', {}),
      tool('shell_send', { session: str, command: str }),
    ];
    const pairs = detectSessionPairs(tools);
    expect(pairs.map((p) => [p.open.tool, p.send.tool])).toEqual([
      ['session_open', 'session_send'],
      ['shell_open', 'shell_send'],
    ]);
    expect(pairs[0]).toMatchObject({ open: { arguments: { command: '{{argv}}' } }, send: { arguments: { sessionId: '{{sessionId}}', input: '{{command}}' } } });
    expect(pairs[1]!.detected!.reads).toContain('"session: <id>"');
    expect(detectSessionPairs([tools[0]!, tools[4]!])).toEqual([]);
    // Two open tools and nothing to tell them apart: no guess.
    expect(detectSessionPairs([tool('open_shell', {}), tool('start_terminal', {}), tool('send', { pid: { type: 'integer' }, input: str })])).toEqual([]);
    // Input that is not a command (a chat's), with nothing in the pair saying it runs things: no pair.
    const chat = [tool('create_session', {}, [], 'Creates a chat session.'), tool('send_message', { session_id: str, input: str })];
    expect(detectSessionPairs(chat)).toEqual([]);
    expect(detectSessionPairs([chat[0]!, tool('send_input', { session_id: str, input: str }, undefined, 'Writes to the process stdin.')])).toHaveLength(1);
    // The tool filter counts, as for exec tools.
    expect(detectSessionPairs(tools, { disabled: ['shell_open'] }).map((p) => p.send.tool)).toEqual(['session_send']);
    // A lone open tool beside a lone send tool pairs with no other sign.
    expect(detectSessionPairs([tool('begin', {}, [], 'Opens a shell.'), tool('write', { pid: { type: 'integer' }, input: str })])).toHaveLength(1);
  });
  test('a send tool is not an exec tool of its own: its account says which pair drives it', () => {
    const tools = [tool('run_shell', { command: str }), tool('shell_open', {}), tool('shell_send', { session: str, command: str })];
    const sends = new Map([['shell_send', 'sends commands to a session "shell_open" opens']]);
    const resolved = resolveExecTools(tools, { sessionSends: sends });
    expect(resolved.extra).toEqual([]);
    expect(resolved.accounts.find((a) => a.name === 'shell_send')).toEqual({ name: 'shell_send', why: 'sends commands to a session "shell_open" opens' });
    // Without it, the send tool would be an exec tool it cannot fill.
    expect(resolveExecTools(tools).extra.map((a) => [a.tool, a.unfilled])).toEqual([['shell_send', ['session']]]);
  });
});

describe('queue pairs (issue 42 item 2)', () => {
  test('a submit tool that takes a command and a collect tool that takes only its job id', () => {
    const argv = { type: 'array', items: str };
    expect(detectQueuePairs([tool('submit_job', { command: str }), tool('job_result', { job_id: str })])).toEqual([
      {
        submit: { tool: 'submit_job', arguments: { command: '{{command}}' } },
        collect: { tool: 'job_result', arguments: { job_id: '{{jobId}}' } },
        idProperty: 'job_id',
        numericId: false,
      },
    ]);
    expect(detectQueuePairs([tool('enqueue_command', { command: argv }), tool('wait_task', { task_id: { type: 'integer' } })])).toMatchObject([
      { submit: { tool: 'enqueue_command', arguments: { command: '{{argv}}' } }, idProperty: 'task_id', numericId: true },
    ]);
  });
  test('no pair: a session pair, a start verb with no job noun, a collect tool that takes a command, a lone tool', () => {
    expect(detectQueuePairs([tool('start_process', { command: str }), tool('read_process_output', { pid: { type: 'integer' } })])).toEqual([]);
    expect(detectQueuePairs([tool('submit_job', { command: str }), tool('job_output', { job_id: str, command: str })])).toEqual([]);
    expect(detectQueuePairs([tool('run_job', { command: str })])).toEqual([]);
  });
});
