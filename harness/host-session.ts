import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import {
  initializeParams,
  newThread,
  toolCallMeta,
  type CodexThread,
  type SandboxEntries,
  type Transport as TransportKind,
} from './codex-wire.js';
import type { Transcript } from './transcript.js';
import { isObject } from './json.js';

/** What came back for one request, kept raw so that checks judge what the server really sent. */
export type RawOutcome =
  | { kind: 'result'; result: unknown; message: unknown }
  | { kind: 'error'; error: { code?: unknown; message?: unknown; data?: unknown }; message: unknown }
  | { kind: 'timeout'; afterMs: number }
  | { kind: 'closed'; detail: string };

export interface Handshake {
  /** The raw `initialize` response message, exactly as received. */
  initializeResponse: unknown;
  initializeResult: Record<string, unknown>;
  /** Every tool of every `tools/list` page, raw. */
  tools: Record<string, unknown>[];
  startupMs: number;
}

export class TargetStartError extends Error {
  constructor(
    message: string,
    readonly stderrTail: string,
  ) {
    super(message);
  }
}

interface Pending {
  resolve: (outcome: RawOutcome) => void;
  timer: NodeJS.Timeout;
}


/**
 * The fake Codex's side of one connection. It owns the JSON-RPC itself (ids from 0, Codex's
 * initialize, progress tokens, `_meta` layout) instead of using the SDK Client, which would
 * request another protocol version and validate away the malformed replies we must report.
 */
export class HostSession {
  private nextId = 0;
  private nextProgressToken = 0;
  private nextCall = 1;
  private readonly pending = new Map<number, Pending>();
  private closedDetail?: string;
  readonly thread: CodexThread = newThread();

  constructor(
    private readonly transport: Transport,
    readonly transcript: Transcript,
    readonly kind: TransportKind,
    private readonly describeExit: () => string = () => 'connection closed',
  ) {
    transport.onmessage = (message) => this.onMessage(message);
    transport.onclose = () => this.failAll(this.describeExit());
    transport.onerror = (error) => transcript.note(`transport error: ${error.message}`);
  }

  async start(): Promise<void> {
    await this.transport.start();
  }

  private failAll(detail: string): void {
    this.closedDetail = detail;
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.resolve({ kind: 'closed', detail });
      this.pending.delete(id);
    }
  }

  private onMessage(message: JSONRPCMessage): void {
    const msg = message as Record<string, unknown>;
    if (typeof msg.method === 'string' && msg.id !== undefined) {
      void this.answerServerRequest(msg.id, msg.method);
      return;
    }
    if (typeof msg.method === 'string') return; // a notification: logged by the recorder
    const id = typeof msg.id === 'number' ? msg.id : Number.NaN;
    const pending = this.pending.get(id);
    if (!pending) return; // unknown id: stays in the transcript for checks to see
    this.pending.delete(id);
    clearTimeout(pending.timer);
    if (isObject(msg.error)) pending.resolve({ kind: 'error', error: msg.error, message });
    else pending.resolve({ kind: 'result', result: msg.result, message });
  }

  /** Server-to-host requests: answer like a headless Codex (no user to ask). */
  private async answerServerRequest(id: unknown, method: string): Promise<void> {
    const reply =
      method === 'ping'
        ? { jsonrpc: '2.0', id, result: {} }
        : method === 'elicitation/create'
          ? { jsonrpc: '2.0', id, result: { action: 'decline' } }
          : { jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${method}` } };
    await this.transport.send(reply as JSONRPCMessage).catch(() => undefined);
  }

  request(method: string, params: Record<string, unknown> | undefined, timeoutMs: number): Promise<RawOutcome> {
    if (this.closedDetail) return Promise.resolve({ kind: 'closed', detail: this.closedDetail });
    const id = this.nextId++;
    const message: Record<string, unknown> = { jsonrpc: '2.0', id, method };
    if (params !== undefined) message.params = params;
    return new Promise<RawOutcome>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ kind: 'timeout', afterMs: timeoutMs });
      }, timeoutMs);
      this.pending.set(id, { resolve, timer });
      this.transport.send(message as JSONRPCMessage).catch((error: Error) => {
        this.pending.delete(id);
        clearTimeout(timer);
        resolve({ kind: 'closed', detail: this.closedDetail ?? error.message });
      });
    });
  }

  async notify(method: string, params?: Record<string, unknown>): Promise<void> {
    const message: Record<string, unknown> = { jsonrpc: '2.0', method };
    if (params !== undefined) message.params = params;
    await this.transport.send(message as JSONRPCMessage).catch(() => undefined);
  }

  /** Codex's startup: initialize, notifications/initialized, tools/list (all pages). */
  async handshake(timeoutMs: number): Promise<Handshake> {
    const started = Date.now();
    const deadline = started + timeoutMs;
    const left = () => Math.max(1, deadline - Date.now());
    const describe = (outcome: RawOutcome) =>
      outcome.kind === 'timeout' ? `no answer within the startup timeout (${timeoutMs} ms)` : describeOutcome(outcome);
    const init = await this.request('initialize', initializeParams(this.kind), left());
    if (init.kind !== 'result' || !isObject(init.result)) {
      throw new TargetStartError(`initialize failed: ${describe(init)}`, this.transcript.stderrTail());
    }
    await this.notify('notifications/initialized');
    const tools: Record<string, unknown>[] = [];
    let cursor: unknown;
    for (let page = 0; page < 100; page++) {
      const params: Record<string, unknown> = { _meta: { progressToken: this.nextProgressToken++ } };
      if (cursor !== undefined) params.cursor = cursor;
      const list = await this.request('tools/list', params, left());
      if (list.kind !== 'result' || !isObject(list.result)) {
        throw new TargetStartError(`tools/list failed: ${describe(list)}`, this.transcript.stderrTail());
      }
      const pageTools = Array.isArray(list.result.tools) ? list.result.tools : [];
      tools.push(...pageTools.filter(isObject));
      cursor = list.result.nextCursor;
      if (cursor === undefined || cursor === null) break;
    }
    return { initializeResponse: init.message, initializeResult: init.result, tools, startupMs: Date.now() - started };
  }

  /** A model-initiated tools/call with Codex's `_meta`. */
  callTool(name: string, args: unknown, sandbox: SandboxEntries, timeoutMs: number): Promise<RawOutcome> {
    const meta = toolCallMeta(this.thread, this.nextCall++, sandbox, this.nextProgressToken++);
    return this.request('tools/call', { _meta: meta, name, arguments: args }, timeoutMs);
  }

  /** resources/read as Codex forwards it: caller `_meta` (already validated) gets a progress token. */
  readResource(uri: string, callerMeta: Record<string, unknown> | undefined, timeoutMs: number): Promise<RawOutcome> {
    const params: Record<string, unknown> = { uri };
    if (callerMeta !== undefined) params._meta = { ...callerMeta, progressToken: this.nextProgressToken++ };
    return this.request('resources/read', params, timeoutMs);
  }

  close(): Promise<void> {
    this.failAll('closed by the host');
    return this.transport.close();
  }
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
