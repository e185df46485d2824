import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** One observed event of a scenario: a JSON-RPC message either way, a raw stdout line, or stderr. */
export type TranscriptEntry =
  | { t: number; dir: 'host->server' | 'server->host'; message: unknown }
  | { t: number; dir: 'server-stdout-garbage'; line: string }
  | { t: number; dir: 'server-stderr'; text: string }
  | { t: number; dir: 'note'; text: string };

/** The per-scenario log every check can point at. */
export class Transcript {
  readonly entries: TranscriptEntry[] = [];
  /** When it started (epoch ms): entries' `t` count from here. */
  readonly started = Date.now();

  private now(): number {
    return Date.now() - this.started;
  }
  sent(message: unknown): void {
    this.entries.push({ t: this.now(), dir: 'host->server', message });
  }
  received(message: unknown): void {
    this.entries.push({ t: this.now(), dir: 'server->host', message });
  }
  garbage(line: string): void {
    this.entries.push({ t: this.now(), dir: 'server-stdout-garbage', line });
  }
  stderr(text: string): void {
    this.entries.push({ t: this.now(), dir: 'server-stderr', text });
  }
  note(text: string): void {
    this.entries.push({ t: this.now(), dir: 'note', text });
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
    inner.onclose = () => this.onclose?.();
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
