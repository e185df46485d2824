import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isObject } from '../json.js';

/**
 * A scripted model provider on loopback, speaking the subset of the OpenAI Responses API (over
 * SSE) that Codex uses (README.md, "Host mode"). Each turn follows a script: its responses in
 * order, each with one or more function calls (several in one response are parallel calls), then
 * a short assistant message that ends the turn. No network beyond 127.0.0.1, no credentials.
 */
export interface ScriptedCall {
  /** The MCP server's name in the host's config: its tools reach the model as namespace `mcp__<server>`. */
  server: string;
  tool: string;
}

export interface ScriptedModelOptions {
  /** The responses of every turn (until `script` sets another): each a list of function calls, before the closing message. */
  responses?: ScriptedCall[][];
  /** Shorthand for responses of one call each. */
  calls?: ScriptedCall[];
  /** Wait this long before answering with a function call (a real model takes seconds). */
  thinkMs?: number;
}

/** One request the host made to the model, summarized for diagnostics. */
export interface ModelRequest {
  path: string;
  /** Namespaces and function names the host offered as tools. */
  offeredTools: string[];
  /** What the model answered: its function call ids, or 'message'. */
  answered: string[] | 'message';
}

export const namespaceOf = (server: string): string => `mcp__${server}`;

/** `mcp__<server>` namespaces and plain function names, as the host offered them. */
function offeredTools(body: Record<string, unknown>): string[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const names: string[] = [];
  for (const tool of tools) {
    if (!isObject(tool)) continue;
    if (tool.type === 'namespace' && typeof tool.name === 'string') {
      const inner = Array.isArray(tool.tools) ? tool.tools : [];
      for (const t of inner) if (isObject(t) && typeof t.name === 'string') names.push(`${tool.name}.${t.name}`);
    } else if (typeof tool.name === 'string') names.push(tool.name);
  }
  return names;
}

/** The argument every scripted function call carries, by which its request is found at the recording server. */
export const callNote = (callId: string): string => `model ${callId}`;

/**
 * How many of this turn's function calls already have an output: the items after the last
 * message whose role is `user` and whose text is not host-injected context. A turn's history
 * ends with its own calls and outputs, so counting outputs after the last user prompt works
 * across turns of one thread.
 */
function outputsThisTurn(body: Record<string, unknown>): number {
  const input = Array.isArray(body.input) ? body.input : [];
  let lastPrompt = -1;
  input.forEach((item, index) => {
    if (isObject(item) && item.type === 'message' && item.role === 'user' && !isHostContext(item)) lastPrompt = index;
  });
  return input.slice(lastPrompt + 1).filter((item) => isObject(item) && item.type === 'function_call_output').length;
}

/** Codex injects environment context and instructions as user messages in tags; prompts have none. */
function isHostContext(item: Record<string, unknown>): boolean {
  const content = Array.isArray(item.content) ? item.content : [];
  const text = content.map((c) => (isObject(c) && typeof c.text === 'string' ? c.text : '')).join('');
  return /^\s*<[a-z_]+[\s>]/.test(text) || text.includes('<environment_context>');
}

export class ScriptedModel {
  private server?: Server;
  private calls = 0;
  private responses = 0;
  readonly requests: ModelRequest[] = [];
  private turnResponses: ScriptedCall[][];

  constructor(private readonly options: ScriptedModelOptions) {
    this.turnResponses = options.responses ?? (options.calls ?? []).map((call) => [call]);
  }

  /** The responses of the turns from now on. */
  script(responses: ScriptedCall[][]): void {
    this.turnResponses = responses;
  }

  /** The response due after `outputs` function call outputs this turn (undefined: the closing message). */
  private dueAfter(outputs: number): ScriptedCall[] | undefined {
    let seen = 0;
    for (const response of this.turnResponses) {
      if (seen === outputs) return response.length ? response : undefined;
      seen += response.length;
    }
    return undefined;
  }

  /** `http://127.0.0.1:PORT/v1`, for the host's `base_url`. */
  baseUrl = '';
  /** Calls the script wanted but the host did not offer the tool for. */
  readonly problems: string[] = [];

  async start(): Promise<string> {
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('scripted model: no port');
    this.baseUrl = `http://127.0.0.1:${address.port}/v1`;
    return this.baseUrl;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (req.method === 'GET' && path.endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ models: [], data: [] }));
      return;
    }
    if (req.method !== 'POST' || !path.endsWith('/responses')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `not scripted: ${req.method} ${path}` } }));
      return;
    }
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (isObject(parsed)) body = parsed;
    } catch {
      // answered below like any request; the diagnostics show an empty tool list
    }
    const offered = offeredTools(body);
    const responseId = `resp_${++this.responses}`;
    const due = this.dueAfter(outputsThisTurn(body)) ?? [];
    const missing = due.map((c) => `${namespaceOf(c.server)}.${c.tool}`).filter((wanted) => !offered.includes(wanted));
    let items: Record<string, unknown>[];
    if (due.length && missing.length === 0) {
      items = due.map((call) => {
        const n = ++this.calls;
        return {
          type: 'function_call',
          id: `fc_${n}`,
          call_id: `call_${n}`,
          namespace: namespaceOf(call.server),
          name: call.tool,
          arguments: JSON.stringify({ note: callNote(`call_${n}`) }),
        };
      });
    } else {
      let text = 'done';
      if (missing.length) {
        text = `the host did not offer ${missing.join(', ')}; it offered: ${offered.join(', ') || 'nothing'}`;
        this.problems.push(text);
      }
      items = [{ type: 'message', role: 'assistant', id: `msg_${this.responses}`, content: [{ type: 'output_text', text }] }];
    }
    const calls = items.filter((i) => i.type === 'function_call');
    this.requests.push({ path, offeredTools: offered, answered: calls.length ? calls.map((i) => String(i.call_id)) : 'message' });
    if (calls.length && this.options.thinkMs) await new Promise((r) => setTimeout(r, this.options.thinkMs));
    const usage = { input_tokens: 1, input_tokens_details: null, output_tokens: 1, output_tokens_details: null, total_tokens: 2 };
    const events: [string, unknown][] = [
      ['response.created', { type: 'response.created', response: { id: responseId } }],
      ...items.map((item, index): [string, unknown] => ['response.output_item.done', { type: 'response.output_item.done', output_index: index, item }]),
      ['response.completed', { type: 'response.completed', response: { id: responseId, usage } }],
    ];
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.end(events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join(''));
  }
}
