import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { BoundedJsonParser, boundValue, STRING_KEEP } from './bounded-json.js';
import { isObject } from './json.js';
import { spawnTracked } from './process-registry.js';
import { assertNotAborted, currentScope } from './process-scope.js';
import type { Transcript } from './transcript.js';

/** A free loopback port, from the kernel. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface StartedHttpServer {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Tries of --http-command on another port when the one picked was taken before the server listened. */
const PORT_ATTEMPTS = 3;

/**
 * Starts `--http-command` on a free loopback port (its `{port}` filled in), in its own process
 * group, and waits until the port accepts connections from it. A port is picked, freed, then given
 * to the command: another process (another run's server, a client's ephemeral port) may take it in
 * between. Then the command either exits with "address in use" or, worse, the port answers for
 * someone else, whose calls and records are not this scenario's (an HTTP check judging "nothing
 * ran here" would pass on them): so the listener must be one of the command's processes, and on
 * either the command is stopped and started again on another port. Throws with the reason on
 * exit or timeout.
 */
export async function startHttpCommand(
  template: string,
  path: string,
  env: NodeJS.ProcessEnv,
  cwd: string | undefined,
  timeoutMs: number,
  transcript: Transcript,
): Promise<StartedHttpServer> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    assertNotAborted();
    const port = await freePort();
    const started = await startOnPort(template, port, { env, cwd, deadline, timeoutMs }, transcript);
    if ('stop' in started) return { url: `http://127.0.0.1:${port}${path}`, ...started };
    if (attempt >= PORT_ATTEMPTS || Date.now() > deadline) throw new Error(started.error);
    transcript.note(`${started.error}: starting it again on another port`);
  }
}

/** One start of the command on `port`: the server once it listens there, or why another port is worth a try (thrown otherwise). */
async function startOnPort(
  template: string,
  port: number,
  options: { env: NodeJS.ProcessEnv; cwd: string | undefined; deadline: number; timeoutMs: number },
  transcript: Transcript,
): Promise<{ child: ChildProcess; stop(): Promise<void> } | { error: string }> {
  const command = template.replaceAll('{port}', String(port));
  transcript.note(`starting: ${command}`);
  const tracked = spawnTracked('/bin/sh', ['-c', command], { env: options.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'], contain: true });
  const child = tracked.child;
  // Its output goes to the transcript (which keeps its start and end: a chatty server must not fill
  // the memory); its last words are kept here too, to tell a port taken from another failure.
  let tail = '';
  const record = (chunk: string) => {
    transcript.stderr(chunk);
    tail = (tail + chunk).slice(-2048);
  };
  child.stdout?.setEncoding('utf8').on('data', record);
  child.stderr?.setEncoding('utf8').on('data', record);
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = signal ? `signal ${signal}` : `code ${code}`));
  child.once('error', (error) => (exited = error.message));
  const stop = () => tracked.stop();
  // An aborted job (timeout, target dead) stops the server at once, also while it is starting.
  let aborted: string | undefined;
  const forget = currentScope()?.onAbort((reason) => {
    aborted = reason;
    void stop();
  });
  const fail = async (error: string) => {
    await stop();
    forget?.();
    return error;
  };
  // Poll the port often at first (most servers listen within a few hundred ms), then every 25 ms.
  let pause = 5;
  while (!(await portOpen(port))) {
    if (aborted !== undefined) throw new Error(await fail(aborted));
    if (exited) {
      const error = await fail(`the HTTP server command exited (${exited}) before listening on port ${port}`);
      if (/EADDRINUSE|address already in use/i.test(tail)) return { error: `${error}: the port was taken` };
      throw new Error(error);
    }
    if (Date.now() > options.deadline)
      throw new Error(await fail(`the HTTP server command did not listen on port ${port} within the startup timeout (${options.timeoutMs} ms)`));
    await new Promise((r) => setTimeout(r, pause));
    pause = Math.min(25, pause + 5);
  }
  if (!listenerAmong(port, tracked.pids())) return { error: await fail(`port ${port} answered, but not from the HTTP server command's processes`) };
  return { child, stop };
}

/** The inodes of the sockets listening on `port` (Linux: /proc/net/tcp and tcp6); undefined where they cannot be read. */
function listeningInodes(port: number): Set<string> | undefined {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set<string>();
  let readable = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
      readable = true;
    } catch {
      continue;
    }
    // sl local_address rem_address st ... inode: the state 0A is LISTEN, the inode the tenth field.
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[1]?.endsWith(hexPort) && fields[3] === '0A' && fields[9]) inodes.add(fields[9]);
    }
  }
  return readable ? inodes : undefined;
}

/** Whether one of `pids` holds the socket listening on `port` (true where this system cannot tell). */
export function listenerAmong(port: number, pids: number[]): boolean {
  const inodes = listeningInodes(port);
  if (!inodes) return true;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (socket && inodes.has(socket[1]!)) return true;
      } catch {
        // closed meanwhile
      }
    }
  }
  return false;
}

/**
 * Headers Codex 0.171.0 sends on every Streamable HTTP request, GET included (captured from
 * `codex exec` against a loopback server; CONTRACT.md §2). Its `accept-encoding: zstd,gzip`
 * is left out: Node 20's fetch cannot decode zstd.
 */
export const CODEX_HTTP_HEADERS: Readonly<Record<string, string>> = {
  'user-agent': 'codex-mcp-client/0.171.0',
  accept: 'text/event-stream, application/json',
};

/**
 * A response whose messages reach the SDK in their bounded form (harness/bounded-json.ts): the SDK
 * reads each SSE event and JSON body whole, so a long one is parsed here as it arrives instead,
 * and passed on as the bounded message's JSON. Short ones pass unchanged.
 */
function boundedResponse(response: Response): Response {
  const type = response.headers.get('content-type') ?? '';
  const bounder = type.includes('text/event-stream') ? new BoundedEvents() : type.includes('application/json') ? boundedBody() : undefined;
  if (!response.body || !bounder) return response;
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, controller) => bounder.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)).forEach((out) => controller.enqueue(out)),
      flush: (controller) => bounder.end().forEach((out) => controller.enqueue(out)),
    }),
  );
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** One JSON text in pieces: passed whole while short, else as its bounded form's JSON. */
class BoundedData {
  private short: Buffer[] = [];
  private bytes = 0;
  private parser?: BoundedJsonParser;
  private head = '';

  add(piece: Buffer): void {
    this.bytes += piece.length;
    if (!this.parser && this.bytes <= STRING_KEEP) {
      this.short.push(piece);
      return;
    }
    if (!this.parser) {
      const start = Buffer.concat(this.short);
      this.head = start.subarray(0, 1000).toString('utf8');
      this.parser = new BoundedJsonParser();
      this.short = [];
      this.feed(start);
    }
    this.feed(piece);
  }
  private feed(piece: Buffer): void {
    try {
      this.parser?.feed(piece);
    } catch {
      this.parser = undefined;
      this.bytes = Number.POSITIVE_INFINITY; // not JSON: only its start is passed on
    }
  }
  /** The text to pass on (what is not JSON: its start, for the SDK to fail on). */
  end(): Buffer {
    let text: Buffer;
    if (this.bytes <= STRING_KEEP) text = Buffer.concat(this.short);
    else {
      let value: unknown;
      try {
        value = this.parser?.finish();
      } catch {
        value = undefined;
      }
      text = Buffer.from(value === undefined ? this.head : JSON.stringify(value));
    }
    this.short = [];
    this.bytes = 0;
    this.parser = undefined;
    return text;
  }
}

/** A JSON body, through BoundedData. */
function boundedBody(): { push(chunk: Buffer): Buffer[]; end(): Buffer[] } {
  const data = new BoundedData();
  return { push: (chunk) => (data.add(chunk), []), end: () => [data.end()] };
}

/** Server-sent events, each event's data through BoundedData; other lines pass as they are. */
class BoundedEvents {
  private line: Buffer[] = [];
  /** Whether the current line is a data line (undefined until its first bytes say). */
  private dataLine?: boolean;
  private data?: BoundedData;

  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let start = 0;
    for (let newline; (newline = chunk.indexOf(0x0a, start)) >= 0; start = newline + 1) {
      this.add(chunk.subarray(start, newline));
      this.endLine(out);
    }
    if (start < chunk.length) this.add(chunk.subarray(start));
    return out;
  }
  end(): Buffer[] {
    return this.line.length ? [Buffer.concat(this.line)] : [];
  }

  private add(piece: Buffer): void {
    if (this.dataLine) return this.data!.add(piece);
    this.line.push(piece);
    if (this.dataLine === false) return;
    const start = Buffer.concat(this.line);
    if (start.length < 5) return;
    this.dataLine = start.subarray(0, 5).toString('latin1') === 'data:';
    if (!this.dataLine) return;
    // The data after "data:" and its optional space; lines of one event are joined with a newline (white space to JSON).
    if (this.data) this.data.add(Buffer.from('\n'));
    else this.data = new BoundedData();
    this.line = [];
    this.data.add(start.subarray(start[5] === 0x20 ? 6 : 5));
  }

  private endLine(out: Buffer[]): void {
    const wasData = this.dataLine;
    const line = Buffer.concat(this.line);
    this.line = [];
    this.dataLine = undefined;
    if (wasData) return;
    // A blank line ends the event: its data first (every line of 5 bytes or more was sorted in add()).
    if (stripCarriageReturn(line).length === 0 && this.data) {
      out.push(Buffer.from('data: '), stripCarriageReturn(this.data.end()), Buffer.from('\n'));
      this.data = undefined;
    }
    out.push(line, Buffer.from('\n'));
  }
}

const stripCarriageReturn = (text: Buffer): Buffer => (text.at(-1) === 0x0d ? text.subarray(0, -1) : text);

/** fetch's failure when the server closed the connection under a request (undici's SocketError "other side closed"). */
function closedUnderUs(error: unknown): boolean {
  const cause = error instanceof TypeError ? (error.cause as { code?: unknown } | undefined) : undefined;
  return cause?.code === 'UND_ERR_SOCKET';
}

/** A URL's userinfo as an `Authorization: Basic` header, and the URL without it (fetch refuses URLs with credentials). */
export function splitCredentials(text: string): { url: URL; authorization?: string } {
  const url = new URL(text);
  if (url.username === '' && url.password === '') return { url };
  const basic = Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64');
  url.username = '';
  url.password = '';
  return { url, authorization: `Basic ${basic}` };
}

/**
 * The SDK's Streamable HTTP client transport, made to speak as Codex 0.171.0 does (the host
 * session on top stays ours). The SDK alone differs in three ways: its own `Accept` order and no
 * User-Agent of Codex's (fixed in the fetch it is given), `MCP-Protocol-Version` only once told
 * the version (told here as soon as the initialize answer arrives, so `notifications/initialized`
 * carries it too), and its GET stream opened right after `notifications/initialized` (held here
 * until the first `tools/list` is answered, as Codex opens it).
 */
let sdkClient: Promise<typeof StreamableHTTPClientTransport> | undefined;

export class CodexHttpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The URL requests go to, without credentials (safe to show). */
  readonly url: string;

  private readonly sdk: StreamableHTTPClientTransport;
  private readonly headers: Record<string, string>;
  private initializeId?: unknown;
  private toolsListId?: unknown;
  private openStream!: () => void;
  /** Settled once tools/list is answered; never, when the connection ends first (the GET is then never sent). */
  private readonly listed = new Promise<void>((resolve) => (this.openStream = resolve));

  /**
   * The SDK's HTTP client is loaded only when a run has an HTTP target (it is a third of the CLI's
   * start-up); callers load it before a startup timeout starts to run, so it never eats the budget.
   */
  static load(): Promise<typeof StreamableHTTPClientTransport> {
    sdkClient ??= import('@modelcontextprotocol/sdk/client/streamableHttp.js').then((m) => m.StreamableHTTPClientTransport);
    return sdkClient;
  }

  /** `extraHeaders`: sent on every request too (a Codex config's http_headers, env_http_headers, bearer token); Codex's own win. */
  static async create(url: string, extraHeaders: Record<string, string> = {}): Promise<CodexHttpTransport> {
    return new CodexHttpTransport(url, await CodexHttpTransport.load(), extraHeaders);
  }

  private constructor(url: string, Sdk: typeof StreamableHTTPClientTransport, extraHeaders: Record<string, string>) {
    const parts = splitCredentials(url);
    this.url = parts.url.href;
    const extra = Object.fromEntries(Object.entries(extraHeaders).map(([name, value]) => [name.toLowerCase(), value]));
    this.headers = { ...extra, ...CODEX_HTTP_HEADERS, ...(parts.authorization ? { authorization: parts.authorization } : {}) };
    this.sdk = new Sdk(parts.url, { fetch: (input, init) => this.fetch(input, init) });
    this.sdk.onmessage = (whole) => {
      // The SDK parsed it whole; only its bounded form is kept (harness/bounded-json.ts).
      const message = boundValue(whole) as JSONRPCMessage;
      this.observe(message);
      this.onmessage?.(message);
    };
    this.sdk.onclose = () => this.onclose?.();
    this.sdk.onerror = (error) => this.onerror?.(error);
  }

  private async fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(this.headers)) headers.set(name, value);
    if (init?.method === 'GET') await this.listed;
    let response: Response;
    try {
      response = await fetch(input, { ...init, headers });
    } catch (error) {
      // A kept-alive connection the server closed as we reused it (its idle timeout, often 5 s,
      // met our own on a starved event loop): the request never got an answer on it. Sent again
      // once on a new connection, as HTTP clients do; a second failure is the server's.
      if (!closedUnderUs(error)) throw error;
      response = await fetch(input, { ...init, headers });
    }
    return boundedResponse(response);
  }

  private observe(message: JSONRPCMessage): void {
    const raw: unknown = message;
    if (!isObject(raw) || raw.id === undefined) return;
    if (raw.id === this.initializeId && isObject(raw.result) && typeof raw.result.protocolVersion === 'string')
      this.sdk.setProtocolVersion(raw.result.protocolVersion);
    if (raw.id === this.toolsListId) this.openStream();
  }

  start(): Promise<void> {
    return this.sdk.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const raw: unknown = message;
    if (isObject(raw) && raw.id !== undefined) {
      if (raw.method === 'initialize') this.initializeId ??= raw.id;
      if (raw.method === 'tools/list') this.toolsListId ??= raw.id;
    }
    return this.sdk.send(message, options);
  }

  close(): Promise<void> {
    return this.sdk.close();
  }

  terminateSession(): Promise<void> {
    return this.sdk.terminateSession();
  }
}
