import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import {
  INVENTORY_LISTS,
  initializeParams,
  newThread,
  resourceReadMeta,
  toolCallMeta,
  type CodexThread,
  type ConnectionPurpose,
  type SandboxEntries,
  type Transport as TransportKind,
} from './codex-wire.js';
import { answerElicitation, elicitationMode, type Elicitation, type ElicitationAnswer } from './elicitation.js';
import { currentScope, type ProcessScope } from './process-scope.js';
import type { Transcript } from './transcript.js';
import { isObject } from './json.js';

/**
 * What came back for one request, kept raw so that checks judge what the server really sent. A
 * tools/call's outcome also lists the elicitations the server sent while it was awaiting its answer.
 */
export type RawOutcome = (
  | { kind: 'result'; result: unknown; message: unknown }
  | { kind: 'error'; error: { code?: unknown; message?: unknown; data?: unknown }; message: unknown }
  | { kind: 'timeout'; afterMs: number }
  | { kind: 'closed'; detail: string }
) & { elicitations?: readonly Elicitation[] };

export interface Handshake {
  /** The raw `initialize` response message, exactly as received. */
  initializeResponse: unknown;
  initializeResult: Record<string, unknown>;
  /** Every tool of every `tools/list` page, raw. */
  tools: Record<string, unknown>[];
  startupMs: number;
  /** On an inventory connection: what each of INVENTORY_LISTS got, raw (judged by the catalog checks, not here). */
  inventory?: Partial<Record<(typeof INVENTORY_LISTS)[number], RawOutcome>>;
}

export class TargetStartError extends Error {
  constructor(
    message: string,
    readonly stderrTail: string,
    /** The server process ended before it answered `initialize` (it did not hang, nor answer wrongly). */
    readonly endedBeforeInitialize = false,
    /** What it wrote shows it does not speak MCP over stdio (only text that is not JSON-RPC, or our own request echoed back). */
    readonly notMcp = false,
  ) {
    super(message);
  }
}

/** The harness gave up on a connection (e.g. a message over the size cap): the reason replaces "connection closed". */
export class ConnectionFailure extends Error {}

interface Pending {
  method: string;
  resolve: (outcome: RawOutcome) => void;
  timer: NodeJS.Timeout;
  /** When the request is out of time (epoch ms). */
  deadline: number;
  timeoutMs: number;
}

/** Why a message from the server is not a valid JSON-RPC 2.0 message, or undefined when it is one. */
export function envelopeProblem(message: unknown): string | undefined {
  if (!isObject(message)) return `not a JSON object (${Array.isArray(message) ? 'an array' : message === null ? 'null' : typeof message})`;
  if (message.jsonrpc !== '2.0') return `"jsonrpc" is ${JSON.stringify(message.jsonrpc) ?? 'missing'}, not "2.0"`;
  if (typeof message.method === 'string') {
    if ('id' in message && typeof message.id !== 'string' && typeof message.id !== 'number') return 'a request whose id is not a string or a number';
    return undefined;
  }
  if ('method' in message) return '"method" is not a string';
  const hasResult = 'result' in message;
  const hasError = 'error' in message;
  if (hasResult && hasError) return 'a response with both "result" and "error"';
  if (!hasResult && !hasError) return 'neither a request nor a response (no "method", "result" or "error")';
  if (typeof message.id !== 'string' && typeof message.id !== 'number' && !(hasError && message.id === null))
    return 'a response whose id is not a string or a number';
  if (hasError) {
    const error = message.error;
    if (!isObject(error) || typeof error.code !== 'number' || !Number.isInteger(error.code) || typeof error.message !== 'string') {
      return '"error" is not an object with an integer "code" and a string "message"';
    }
  }
  return undefined;
}

const excerpt = (value: unknown, max = 120): string => {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max)}…` : text;
};

/**
 * The fake Codex's side of one connection. It owns the JSON-RPC itself (ids from 0, Codex's
 * initialize, progress tokens, `_meta` layout) instead of using the SDK Client, which would
 * request another protocol version and validate away the malformed replies we must report.
 */
export class CodexSession {
  private nextId = 0;
  private nextProgressToken = 0;
  private nextCall = 1;
  private readonly pending = new Map<number, Pending>();
  private closedDetail?: string;
  private failure?: string;
  private handshaking = false;
  /** Responses whose id matches no request of ours, and messages that are not valid JSON-RPC, for the timeout explanation. */
  private readonly unknownIds = new FirstFew<unknown>();
  private readonly invalid = new FirstFew<string>();
  /** Messages received that are JSON-RPC: a target that sent none and wrote other text does not speak MCP. */
  private jsonRpcReceived = 0;
  /** Our requests during the handshake, as sent: a target that copies its input to its output (cat) sends them back. */
  private readonly sentDuringHandshake = new Map<number, string>();
  private echoed?: string;
  /** How many notifications/tools/list_changed the server sent: a long-lived caller relists when it grows. */
  toolsListChanged = 0;
  private readonly scope: ProcessScope | undefined = currentScope();
  private readonly unanswered: string[] = [];
  readonly thread: CodexThread = newThread();
  /** How this host answers `elicitation/create` (harness/elicitation.ts): a person who accepts, unless told otherwise. */
  elicitation: ElicitationAnswer = 'accept';
  /** Every elicitation/create the server sent on this connection, with the answer it got, in order. */
  readonly elicitations: Elicitation[] = [];

  constructor(
    private readonly transport: Transport,
    readonly transcript: Transcript,
    readonly kind: TransportKind,
    private readonly describeExit: () => string = () => 'connection closed',
    readonly purpose: ConnectionPurpose = 'model',
  ) {
    transport.onmessage = (message) => this.onMessage(message);
    transport.onclose = () => this.failAll(this.failure ?? this.describeExit());
    transport.onerror = (error) => {
      if (error instanceof ConnectionFailure) this.failure ??= error.message;
      else transcript.note(`transport error: ${error.message}`);
    };
    // The runner aborts a job (scenario or run timeout, a target dead at startup): every pending
    // request ends now with that reason, and the server is stopped.
    this.scope?.onAbort((reason) => {
      this.failure ??= reason;
      this.failAll(reason);
      void this.transport.close().catch(() => undefined);
    });
  }

  /**
   * Requests after startup that got no answer (a timeout, or the connection closed under them, not
   * by us), in order, each as "method: why". They make verdicts resting on them suspect (see the runner).
   */
  /** Why the connection is closed (the server exited, the host closed it), once it is. */
  get closed(): string | undefined {
    return this.closedDetail;
  }

  get unansweredCalls(): readonly string[] {
    return this.unanswered;
  }

  async start(): Promise<void> {
    await this.transport.start();
  }

  private failAll(detail: string): void {
    this.closedDetail ??= detail;
    for (const id of [...this.pending.keys()]) this.settle(id, { kind: 'closed', detail });
  }

  /** Ends a pending request (its timer cleared) with `outcome`, or what it makes of the request; nothing when none is pending under `id`. */
  private settle(id: unknown, outcome: RawOutcome | ((pending: Pending) => RawOutcome)): void {
    const pending = typeof id === 'number' ? this.pending.get(id) : undefined;
    if (!pending) return;
    this.pending.delete(id as number);
    clearTimeout(pending.timer);
    pending.resolve(typeof outcome === 'function' ? outcome(pending) : outcome);
  }

  private onMessage(message: JSONRPCMessage): void {
    const problem = envelopeProblem(message);
    if (problem !== undefined) {
      if (this.invalid.add(problem)) this.transcript.note(`not a valid JSON-RPC message: ${problem}`);
      else if (this.invalid.count === FirstFew.KEPT + 1) this.transcript.note(`more messages that are not valid JSON-RPC: only counted from here`);
      // A malformed answer to a pending request ends that request: it got no usable answer.
      const raw: unknown = message;
      this.settle(isObject(raw) ? raw.id : undefined, {
        kind: 'closed',
        detail: `the server answered with an invalid JSON-RPC message (${problem}): ${excerpt(message)}`,
      });
      return;
    }
    const msg = message as Record<string, unknown>;
    if (this.isEcho(msg)) return;
    this.jsonRpcReceived++;
    if (typeof msg.method === 'string' && msg.id !== undefined) {
      void this.answerServerRequest(msg.id, msg.method, msg.params);
      return;
    }
    if (typeof msg.method === 'string') {
      // A notification: logged by the recorder; a changed tool list is counted.
      if (msg.method === 'notifications/tools/list_changed') this.toolsListChanged++;
      return;
    }
    if (!(typeof msg.id === 'number' && this.pending.has(msg.id))) {
      // Unknown id: it stays in the transcript for checks to see, and explains a timeout.
      if (!(typeof msg.id === 'number' && msg.id < this.nextId)) this.unknownIds.add(msg.id);
      return;
    }
    // The deadline is the clock's, as Codex's is: an answer read after it (its timer not yet run,
    // on a starved event loop) came too late all the same.
    this.settle(msg.id, (pending): RawOutcome => {
      if (Date.now() > pending.deadline) return { kind: 'timeout', afterMs: pending.timeoutMs };
      return isObject(msg.error) ? { kind: 'error', error: msg.error, message } : { kind: 'result', result: msg.result, message };
    });
  }

  /** Our own request sent back unchanged: not a request of the server's; the request it copies gets no answer ever. */
  private isEcho(msg: Record<string, unknown>): boolean {
    const id = typeof msg.id === 'number' ? msg.id : undefined;
    if (typeof msg.method !== 'string' || id === undefined || this.sentDuringHandshake.get(id) !== JSON.stringify(msg)) return false;
    this.echoed ??= msg.method;
    this.transcript.note(`the target sent our own ${msg.method} request back unchanged`);
    this.settle(id, { kind: 'closed', detail: `the target sent our own ${msg.method} request back unchanged` });
    return true;
  }

  /**
   * Why a target that failed its startup does not speak MCP over stdio, from what it wrote: our own
   * request echoed back, or, once it `ended`, only text that is not JSON-RPC (its first lines shown;
   * one still running may be a slow server that printed a banner). Undefined when it sent a
   * JSON-RPC message or wrote nothing.
   */
  notMcp(ended: boolean): string | undefined {
    if (this.kind !== 'stdio') return undefined;
    const what = 'it does not speak MCP over stdio (an MCP server writes JSON-RPC messages there, one per line)';
    if (this.echoed) return `it copies what it reads to its output (as cat does): ${what}`;
    const lines = garbageLines(this.transcript);
    if (!ended || this.jsonRpcReceived > 0 || lines.length === 0) return undefined;
    const first = lines.slice(0, 3).map((line) => JSON.stringify(excerpt(line, 100)));
    return `it wrote ${lines.length === 1 ? 'a line' : `${lines.length} lines`} to stdout and no JSON-RPC message: ${what}; it wrote: ${first.join(', ')}${lines.length > 3 ? ', …' : ''}`;
  }

  /**
   * Server-to-host requests: `ping`, and `elicitation/create` answered as `elicitation` says (a
   * person at Codex, or `codex exec` with approval `never`); anything else is not a method Codex has.
   */
  private async answerServerRequest(id: unknown, method: string, params: unknown): Promise<void> {
    let reply: Record<string, unknown>;
    if (method === 'ping') reply = { jsonrpc: '2.0', id, result: {} };
    else if (method === 'elicitation/create') reply = { jsonrpc: '2.0', id, result: this.elicit(params) };
    else reply = { jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${method}` } };
    await this.transport.send(reply as JSONRPCMessage).catch(() => undefined);
  }

  private elicit(params: unknown): { action: ElicitationAnswer; content?: Record<string, unknown> } {
    const answer = answerElicitation(params, this.elicitation);
    const mode = elicitationMode(params);
    const message = isObject(params) && typeof params.message === 'string' ? params.message : '';
    const duringCalls = [...this.pending].filter(([, p]) => p.method === 'tools/call').map(([callId]) => callId);
    this.elicitations.push({ mode, message, action: answer.action, ...(answer.content ? { content: answer.content } : {}), duringCalls });
    const why =
      answer.action === 'accept'
        ? 'as a person at Codex who agrees'
        : mode === 'url' && this.elicitation === 'accept'
          ? 'no browser to open'
          : `the host answers ${answer.action}`;
    this.transcript.note(
      `elicitation/create (${mode} mode) during tools/call ${duringCalls.join(', ') || '(none pending)'}: answered ${answer.action} (${why})`,
    );
    return answer;
  }

  request(method: string, params: Record<string, unknown> | undefined, timeoutMs: number): Promise<RawOutcome> {
    return this.sendRequest(method, params, timeoutMs).outcome;
  }

  /**
   * Sends a request: its id (none when the connection is already closed) and its outcome. After
   * startup, a request that got no answer makes the scenario's verdicts suspect (see unansweredCalls).
   */
  private sendRequest(method: string, params: Record<string, unknown> | undefined, timeoutMs: number): { id?: number; outcome: Promise<RawOutcome> } {
    if (this.closedDetail) return { outcome: Promise.resolve({ kind: 'closed', detail: this.closedDetail }) };
    const id = this.nextId++;
    const message: Record<string, unknown> = { jsonrpc: '2.0', id, method };
    if (params !== undefined) message.params = params;
    if (this.handshaking) this.sentDuringHandshake.set(id, JSON.stringify(message));
    const outcome = new Promise<RawOutcome>((resolve) => {
      const timer = setTimeout(() => this.settle(id, { kind: 'timeout', afterMs: timeoutMs }), timeoutMs);
      this.pending.set(id, { method, resolve, timer, deadline: Date.now() + timeoutMs, timeoutMs });
      this.transport
        .send(message as JSONRPCMessage)
        .catch((error: Error) => this.settle(id, { kind: 'closed', detail: this.closedDetail ?? errorText(error) }));
    });
    if (this.handshaking) return { id, outcome };
    const noted = outcome.then((result) => {
      if ((result.kind === 'timeout' || result.kind === 'closed') && !(result.kind === 'closed' && result.detail === HOST_CLOSED)) {
        this.unanswered.push(`${method}: ${this.explain(result)}`);
      }
      return result;
    });
    return { id, outcome: noted };
  }

  /** An outcome in words, with what the server sent meanwhile that explains a silence. */
  explain(outcome: RawOutcome, what = `no answer within ${outcome.kind === 'timeout' ? outcome.afterMs : 0} ms`): string {
    if (outcome.kind !== 'timeout') return describeOutcome(outcome);
    const hints: string[] = [];
    const { count: unknown, first: ids } = this.unknownIds;
    if (unknown) {
      hints.push(
        `the server sent ${unknown} response${unknown === 1 ? '' : 's'} with an id the host never used (${ids
          .slice(0, 3)
          .map((id) => excerpt(id, 40))
          .join(', ')})`,
      );
    }
    const { count: invalid, first: problems } = this.invalid;
    if (invalid) hints.push(`${invalid} message${invalid === 1 ? '' : 's'} that ${invalid === 1 ? 'is' : 'are'} not valid JSON-RPC (${problems[0]})`);
    const garbage = garbageLines(this.transcript);
    if (garbage.length) {
      hints.push(
        `${garbage.length} stdout line${garbage.length === 1 ? '' : 's'} that ${garbage.length === 1 ? 'is' : 'are'} not JSON, the first: ${JSON.stringify(excerpt(garbage[0]!, 80))}`,
      );
    }
    return hints.length ? `${what}; meanwhile ${hints.join('; ')}` : what;
  }

  async notify(method: string, params?: Record<string, unknown>): Promise<void> {
    const message: Record<string, unknown> = { jsonrpc: '2.0', method };
    if (params !== undefined) message.params = params;
    await this.transport.send(message as JSONRPCMessage).catch(() => undefined);
  }

  /** A list request as Codex sends it: `_meta` with the next progress token, then the cursor if any. */
  list(method: string, cursor: unknown, timeoutMs: number): Promise<RawOutcome> {
    const params: Record<string, unknown> = { _meta: { progressToken: this.nextProgressToken++ } };
    if (cursor !== undefined) params.cursor = cursor;
    return this.request(method, params, timeoutMs);
  }

  /**
   * Codex's startup: initialize, notifications/initialized, tools/list (all pages); on an
   * inventory connection then resources/list and resources/templates/list at once.
   */
  async handshake(timeoutMs: number): Promise<Handshake> {
    const started = Date.now();
    const deadline = started + timeoutMs;
    const left = () => Math.max(1, deadline - Date.now());
    const describe = (outcome: RawOutcome) => this.explain(outcome, `no answer within the startup timeout (${timeoutMs} ms)`);
    this.handshaking = true;
    try {
      return await this.runHandshake(started, left, describe);
    } finally {
      this.handshaking = false;
    }
  }

  private async runHandshake(started: number, left: () => number, describe: (outcome: RawOutcome) => string): Promise<Handshake> {
    const init = await this.request('initialize', initializeParams(this.kind, this.purpose), left());
    if (init.kind !== 'result' || !isObject(init.result)) {
      const notMcp = init.kind === 'result' ? undefined : this.notMcp(init.kind === 'closed');
      const why = init.kind === 'result' ? `the result is not an object: ${excerpt(init.result)}` : describe(init);
      throw new TargetStartError(`initialize failed: ${notMcp ? `${why}; ${notMcp}` : why}`, this.transcript.stderrTail(), false, notMcp !== undefined);
    }
    await this.notify('notifications/initialized');
    const tools = await this.listTools(left);
    if (!Array.isArray(tools)) throw new TargetStartError(`tools/list failed: ${describe(tools)}`, this.transcript.stderrTail());
    const handshake: Handshake = { initializeResponse: init.message, initializeResult: init.result, tools, startupMs: Date.now() - started };
    if (this.purpose === 'inventory') {
      const outcomes = await Promise.all(INVENTORY_LISTS.map((method) => this.list(method, undefined, left())));
      handshake.inventory = Object.fromEntries(INVENTORY_LISTS.map((method, i) => [method, outcomes[i]]));
    }
    return handshake;
  }

  /** Every tool the server lists (all pages), as Codex lists them; the failed request's outcome when one fails. */
  async listTools(left: () => number): Promise<Record<string, unknown>[] | RawOutcome> {
    const tools: Record<string, unknown>[] = [];
    let cursor: unknown;
    for (let page = 0; page < 100; page++) {
      const list = await this.list('tools/list', cursor, left());
      if (list.kind !== 'result' || !isObject(list.result)) return list;
      const pageTools = Array.isArray(list.result.tools) ? list.result.tools : [];
      tools.push(...pageTools.filter(isObject));
      cursor = list.result.nextCursor;
      if (cursor === undefined || cursor === null) break;
    }
    return tools;
  }

  /** A model-initiated tools/call with Codex's `_meta`. */
  async callTool(name: string, args: unknown, sandbox: SandboxEntries, timeoutMs: number): Promise<RawOutcome> {
    const meta = toolCallMeta(this.thread, this.nextCall++, sandbox, this.nextProgressToken++);
    const sent = this.sendRequest('tools/call', { _meta: meta, name, arguments: args }, timeoutMs);
    const outcome = await sent.outcome;
    const asked = this.elicitations.filter((e) => sent.id !== undefined && e.duringCalls.includes(sent.id));
    return asked.length ? { ...outcome, elicitations: asked } : outcome;
  }

  /** resources/read as Codex forwards it: `_meta` first, always (caller entries, already validated, plus the progress token), then `uri`. */
  readResource(uri: string, callerMeta: Record<string, unknown> | undefined, timeoutMs: number): Promise<RawOutcome> {
    return this.request('resources/read', { _meta: resourceReadMeta(callerMeta, this.nextProgressToken++), uri }, timeoutMs);
  }

  close(): Promise<void> {
    this.failAll(HOST_CLOSED);
    return this.transport.close();
  }
}

const HOST_CLOSED = 'closed by the host';

/** Of what a server may send without end, the first few and a count. */
class FirstFew<T> {
  static readonly KEPT = 10;
  readonly first: T[] = [];
  count = 0;
  /** Whether it is among the first few. */
  add(item: T): boolean {
    if (++this.count > FirstFew.KEPT) return false;
    this.first.push(item);
    return true;
  }
}

/** The lines the server wrote to stdout that are not JSON (as the transcript keeps them). */
const garbageLines = (transcript: Transcript): string[] => transcript.entries.flatMap((e) => (e.dir === 'server-stdout-garbage' ? [e.line] : []));

/** An error's message with its cause (fetch's "fetch failed" says why only there). */
function errorText(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  const causeText = cause instanceof Error ? cause.message : typeof cause === 'string' ? cause : '';
  return causeText && !error.message.includes(causeText) ? `${error.message} (${causeText})` : error.message;
}

export function describeOutcome(outcome: RawOutcome): string {
  switch (outcome.kind) {
    case 'timeout':
      return `no answer within ${outcome.afterMs} ms`;
    case 'closed':
      return outcome.detail;
    case 'error':
      return `JSON-RPC error ${String(outcome.error.code)}: ${String(outcome.error.message)}`;
    case 'result':
      return 'a result that is not an object';
  }
}

/** A tools/call that refused: a JSON-RPC error or a result with `isError: true`. */
export function isRefusal(outcome: RawOutcome): boolean {
  return outcome.kind === 'error' || (outcome.kind === 'result' && isObject(outcome.result) && outcome.result.isError === true);
}
