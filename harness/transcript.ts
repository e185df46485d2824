import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { elidedMessages, type Elision } from './bounded-json.js';
import { isObject } from './json.js';

/**
 * One observed event of a scenario: a JSON-RPC message either way (in its bounded form, with the
 * whole's size and hash when it was cut: harness/bounded-json.ts), a raw stdout line, or stderr.
 */
export type TranscriptEntry =
  | { t: number; dir: 'host->server' | 'server->host'; message: unknown; elided?: Elision }
  | { t: number; dir: 'server-stdout-garbage'; line: string }
  | { t: number; dir: 'server-stderr'; text: string }
  | { t: number; dir: 'note'; text: string };

/** Of the server's stderr (or an HTTP server command's output), what is kept whole from its start, and then of its end. */
const STDERR_HEAD_CHARS = 64 * 1024;
const STDERR_TAIL_CHARS = 64 * 1024;
/** Of server notifications and requests between two calls of ours, how many are kept from the start, and then of the end. */
const CHATTER_HEAD = 10;
const CHATTER_TAIL = 10;
/** Methods counted by name in the note on chatter not kept (more are "other"). */
const CHATTER_METHODS = 20;

/**
 * What a server says unasked (notifications, its requests, and our answers to them) between two
 * requests of ours: the first CHATTER_HEAD kept in place, then counted, with the last CHATTER_TAIL
 * kept, added after a note when the run ends (our next request, an answer, or someone reading).
 */
class ChatterRun {
  count = 0;
  tail: TranscriptEntry[] = [];
  private readonly methods = new Map<string, number>();

  /** Whether the entry is kept in place (among the first). */
  add(entry: TranscriptEntry): boolean {
    if (++this.count <= CHATTER_HEAD) return true;
    const method = 'message' in entry && isObject(entry.message) && typeof entry.message.method === 'string' ? entry.message.method : '(our answers)';
    const name = this.methods.has(method) || this.methods.size < CHATTER_METHODS ? method : 'other';
    this.methods.set(name, (this.methods.get(name) ?? 0) + 1);
    this.tail.push(entry);
    if (this.tail.length > CHATTER_TAIL) this.tail.shift();
    return false;
  }

  /** The note and the last entries that end a run with more than its head kept; none otherwise. */
  end(t: number): TranscriptEntry[] {
    const notKept = this.count - CHATTER_HEAD - this.tail.length;
    const ending =
      notKept > 0
        ? [
            {
              t,
              dir: 'note' as const,
              text: `${notKept} more server notifications and requests (and our answers) not kept here: ${[...this.methods].map(([m, n]) => `${m} ×${n}`).join(', ')}; the last ${this.tail.length} follow`,
            },
            ...this.tail,
          ]
        : this.tail;
    this.count = 0;
    this.tail = [];
    this.methods.clear();
    return ending;
  }
}

/**
 * The per-scenario log every check can point at, bounded whatever the server sends: messages in
 * their bounded form, stderr's first and last 64 K characters, and unasked chatter as ChatterRun keeps it.
 */
export class Transcript {
  private readonly list: TranscriptEntry[] = [];
  /** When it started (epoch ms): entries' `t` count from here. */
  readonly started = Date.now();
  private readonly chatter = new ChatterRun();
  /** Requests of ours not yet answered (as far as answers go: one answer counts for any). */
  private awaiting = 0;
  private stderrKept = 0;
  private stderrTailChunks: string[] = [];
  private stderrTailChars = 0;
  private stderrSkipped = 0;

  /** Every entry so far (what a run of chatter or stderr held back is added first). */
  get entries(): readonly TranscriptEntry[] {
    this.settle();
    return this.list;
  }

  private now(): number {
    return Date.now() - this.started;
  }
  private message(dir: 'host->server' | 'server->host', message: unknown): TranscriptEntry {
    const elided = isObject(message) ? elidedMessages.get(message) : undefined;
    return { t: this.now(), dir, message, ...(elided ? { elided } : {}) };
  }
  sent(message: unknown): void {
    const entry = this.message('host->server', message);
    // Our answer to a server's request is part of its chatter; our own request ends a run of it.
    if (isObject(message) && typeof message.method !== 'string') return this.chatty(entry);
    if (isObject(message) && message.id !== undefined) this.awaiting++;
    this.push(entry, true);
  }
  received(message: unknown): void {
    const entry = this.message('server->host', message);
    // An answer while one of ours awaits one ends a run of chatter; a message unasked is chatter.
    if (this.awaiting === 0 || (isObject(message) && typeof message.method === 'string')) return this.chatty(entry);
    this.awaiting--;
    this.push(entry, true);
  }
  garbage(line: string): void {
    this.push({ t: this.now(), dir: 'server-stdout-garbage', line });
  }
  /** Stderr as it comes: its first STDERR_HEAD_CHARS in place, then only its last STDERR_TAIL_CHARS (added when read). */
  stderr(text: string): void {
    if (this.stderrKept < STDERR_HEAD_CHARS) {
      const head = text.slice(0, STDERR_HEAD_CHARS - this.stderrKept);
      this.stderrKept += head.length;
      this.push({ t: this.now(), dir: 'server-stderr', text: head });
      if (head.length === text.length) return;
      text = text.slice(head.length);
    }
    this.stderrTailChunks.push(text);
    this.stderrTailChars += text.length;
    while (this.stderrTailChars - this.stderrTailChunks[0]!.length >= STDERR_TAIL_CHARS) {
      const dropped = this.stderrTailChunks.shift()!;
      this.stderrTailChars -= dropped.length;
      this.stderrSkipped += dropped.length;
    }
  }
  note(text: string): void {
    this.push({ t: this.now(), dir: 'note', text });
  }

  private chatty(entry: TranscriptEntry): void {
    if (this.chatter.add(entry)) this.list.push(entry);
  }
  private push(entry: TranscriptEntry, endsChatter = false): void {
    if (endsChatter) this.list.push(...this.chatter.end(entry.t));
    this.list.push(entry);
  }
  /** Adds what a run of chatter or stderr held back (when read, and once the connection closed). */
  settle(): void {
    this.list.push(...this.chatter.end(this.now()));
    if (this.stderrTailChunks.length === 0) return;
    const tail = this.stderrTailChunks.join('');
    const skipped = this.stderrSkipped + Math.max(0, tail.length - STDERR_TAIL_CHARS);
    this.list.push({
      t: this.now(),
      dir: 'server-stderr',
      text: `${skipped ? `\n[… ${skipped} characters of stderr not kept …]\n` : ''}${tail.slice(-STDERR_TAIL_CHARS)}`,
    });
    this.stderrTailChunks = [];
    this.stderrTailChars = 0;
    this.stderrSkipped = 0;
  }

  stderrTail(lines = 20): string {
    const text = this.entries
      .filter((e): e is Extract<TranscriptEntry, { dir: 'server-stderr' }> => e.dir === 'server-stderr')
      .map((e) => e.text)
      .join('');
    return text.split('\n').filter(Boolean).slice(-lines).join('\n');
  }
}

/** Wraps any SDK transport and logs every message both ways, without changing them. */
export class RecordingTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(
    private readonly inner: Transport,
    readonly transcript: Transcript,
  ) {
    inner.onmessage = (message) => {
      transcript.received(message);
      this.onmessage?.(message);
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      transcript.settle();
      this.onclose?.();
    };
  }

  start(): Promise<void> {
    return this.inner.start();
  }
  send(message: JSONRPCMessage): Promise<void> {
    this.transcript.sent(message);
    return this.inner.send(message);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
