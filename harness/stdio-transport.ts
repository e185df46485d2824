import type { ChildProcess } from 'node:child_process';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { BoundedJsonParser, STRING_KEEP } from './bounded-json.js';
import { ConnectionFailure } from './codex-session.js';
import { spawnTracked, type TrackedProcess } from './process-registry.js';
import { assertNotAborted } from './process-scope.js';
import type { Transcript } from './transcript.js';

export interface StdioTargetSpec {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** Cap on one stdout line (one JSON-RPC message): a bigger one fails the connection. */
  maxMessageBytes: number;
}

/** Default cap on one stdout line (one JSON-RPC message), when the plan sets none. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** A line longer than this is parsed as it arrives, into its bounded form (harness/bounded-json.ts), never held whole. */
const STREAM_LINES_FROM = STRING_KEEP;
const GARBAGE_KEEP_LINES = 100;
const GARBAGE_LINE_CHARS = 1000;
/** After the server exits, how long to wait for its stdout to close (a leftover child may hold it open). */
const CLOSE_AFTER_EXIT_MS = 200;

const mb = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MB`;

/**
 * Stdio transport for the SDK's `Transport` interface. We do not use the SDK's
 * StdioClientTransport because it cannot start the server in its own process group (so the
 * server's children could outlive a run), replaces the environment with a short default list,
 * and drops stdout lines that are not valid JSON-RPC, which the suite must report instead.
 * Framing is the same: one JSON message per line. Hostile output is bounded: one line may hold
 * at most the message cap (64 MB by default; more fails the connection with that reason), and is
 * held whole only up to 64 KB (a longer one is parsed as it comes, keeping its bounded form); the
 * transcript bounds stderr, and keeps the first 100 non-JSON lines (1000 characters each).
 */
export class ProcessGroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcess;
  private tracked?: TrackedProcess;
  /** The current, unfinished line, as raw chunks (a newline byte never occurs inside UTF-8 sequences) while short. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** A long current line: its parser (undefined once it found the line is not JSON), and its start (for the garbage record). */
  private long?: { parser?: BoundedJsonParser; head: string };
  private closed = false;
  private garbageLines = 0;
  private lastStdoutAt = 0;
  exitInfo?: { code: number | null; signal: NodeJS.Signals | null };
  /** Why the harness gave up on the connection, when it did (e.g. a message over the cap). */
  failure?: string;

  constructor(
    private readonly spec: StdioTargetSpec,
    private readonly transcript: Transcript,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      try {
        assertNotAborted();
      } catch (error) {
        reject(error);
        return;
      }
      let tracked: TrackedProcess;
      try {
        tracked = spawnTracked(this.spec.command, this.spec.args, { env: this.spec.env, cwd: this.spec.cwd, stdio: ['pipe', 'pipe', 'pipe'], contain: true });
      } catch (error) {
        reject(error as Error);
        return;
      }
      const child = tracked.child;
      this.tracked = tracked;
      this.child = child;
      child.once('error', (error) => {
        if (child.pid === undefined) reject(error);
        else this.onerror?.(error);
      });
      child.once('spawn', () => resolve());
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        // A child the server left behind may hold stdout open: the server is gone all the same,
        // once what it wrote before exiting has been read (stdout quiet for a moment).
        const check = () => {
          if (this.closed) return;
          const quiet = Date.now() - this.lastStdoutAt;
          if (quiet >= CLOSE_AFTER_EXIT_MS) this.markClosed();
          else setTimeout(check, CLOSE_AFTER_EXIT_MS - quiet).unref();
        };
        setTimeout(check, CLOSE_AFTER_EXIT_MS).unref();
      });
      child.once('close', () => this.markClosed());
      child.stdin?.on('error', () => {
        // The server closed its stdin; the exit handler reports it.
      });
      child.stdout?.on('data', (chunk: Buffer) => this.onStdout(chunk));
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => this.transcript.stderr(chunk));
    });
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.pendingBytes > 0 && !this.failure) this.recordGarbage(this.lineStart(), ' (an unfinished line: no newline before the stream ended)');
    this.resetLine();
    this.onclose?.();
  }

  private lineStart(): string {
    return this.long?.head ?? Buffer.concat(this.pending).toString('utf8');
  }

  private resetLine(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.long = undefined;
  }

  private recordGarbage(line: string, suffix = ''): void {
    this.garbageLines++;
    if (this.garbageLines <= GARBAGE_KEEP_LINES) {
      const shown = line.length > GARBAGE_LINE_CHARS ? `${line.slice(0, GARBAGE_LINE_CHARS)}… (${line.length - GARBAGE_LINE_CHARS} more characters)` : line;
      this.transcript.garbage(shown + suffix);
    } else if (this.garbageLines === GARBAGE_KEEP_LINES + 1) {
      this.transcript.note(`more than ${GARBAGE_KEEP_LINES} stdout lines that are not JSON: the rest are not kept`);
    }
  }

  private onStdout(chunk: Buffer): void {
    this.lastStdoutAt = Date.now();
    if (this.failure) return;
    let start = 0;
    let newline: number;
    while ((newline = chunk.indexOf(0x0a, start)) >= 0) {
      if (!this.take(chunk.subarray(start, newline))) return;
      start = newline + 1;
      this.endLine();
      if (this.failure || this.closed) return;
    }
    if (start < chunk.length) this.take(chunk.subarray(start));
  }

  /** Adds a piece of the current line; false when that took it over the cap (the connection is then over). */
  private take(piece: Buffer): boolean {
    const bytes = this.pendingBytes + piece.length;
    if (bytes > this.spec.maxMessageBytes) {
      this.overflow(bytes);
      return false;
    }
    this.pendingBytes = bytes;
    if (this.long) this.feed(piece);
    else this.pending.push(piece);
    if (!this.long && bytes > STREAM_LINES_FROM) {
      // Long: parsed from here on as it comes; what came so far first.
      this.long = { parser: new BoundedJsonParser(), head: this.lineStart().slice(0, GARBAGE_LINE_CHARS) };
      for (const earlier of this.pending) this.feed(earlier);
      this.pending = [];
    }
    return true;
  }

  private feed(piece: Buffer): void {
    try {
      this.long?.parser?.feed(piece);
    } catch {
      this.long!.parser = undefined; // not JSON: the rest is only counted
    }
  }

  private endLine(): void {
    const bytes = this.pendingBytes;
    const long = this.long;
    const line = long ? long.head : Buffer.concat(this.pending).toString('utf8').replace(/\r$/, '');
    this.resetLine();
    let message: unknown;
    try {
      if (long && !long.parser) throw new SyntaxError('not JSON');
      message = long ? long.parser!.finish() : line.trim() === '' ? undefined : JSON.parse(line);
    } catch {
      this.recordGarbage(line, long ? ` (a line of ${bytes} bytes)` : '');
      return;
    }
    if (message !== undefined) this.onmessage?.(message as JSONRPCMessage);
  }

  /** A line over the cap: keep nothing of it, stop the server, and say why. */
  private overflow(bytes: number): void {
    this.failure = `the server sent a message over the ${mb(this.spec.maxMessageBytes)} limit (${bytes} bytes without a newline): connection closed, server stopped`;
    this.resetLine();
    this.transcript.note(this.failure);
    this.onerror?.(new ConnectionFailure(this.failure));
    const child = this.child;
    child?.stdout?.destroy();
    if (child) void this.stop(child);
    this.markClosed();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.closed || stdin.destroyed) {
        reject(new Error(this.failure ?? 'server is not running'));
        return;
      }
      if (stdin.write(JSON.stringify(message) + '\n')) resolve();
      else stdin.once('drain', () => resolve());
    });
  }

  private stopping?: Promise<void>;
  private stop(child: ChildProcess): Promise<void> {
    this.stopping ??= (async () => {
      child.stdin?.end();
      await this.tracked?.stop();
    })();
    return this.stopping;
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    await this.stop(child);
    // Stdout may stay open in a descendant we could not reach; the connection is over regardless.
    child.stdout?.destroy();
    child.stderr?.destroy();
    this.markClosed();
  }
}
