import { expect, test } from 'vitest';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { CodexSession } from '../../harness/codex-session.js';
import { Transcript } from '../../harness/transcript.js';

/** A server that answers every request `lateMs` after it was sent, with the event loop held meanwhile (as a starved CLI process is). */
class LateAnswers implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  constructor(private readonly lateMs: number) {}
  async start(): Promise<void> {}
  async close(): Promise<void> {}
  async send(message: JSONRPCMessage): Promise<void> {
    const { id } = message as { id?: number };
    if (id === undefined) return;
    const until = Date.now() + this.lateMs;
    while (Date.now() < until); // no timer can run meanwhile
    this.onmessage?.({ jsonrpc: '2.0', id, result: {} });
  }
}

test('an answer read after the deadline is a timeout, even when its timer has not run yet', async () => {
  const late = new CodexSession(new LateAnswers(30), new Transcript(), 'stdio');
  expect(await late.request('ping', undefined, 5)).toMatchObject({ kind: 'timeout', afterMs: 5 });
  const inTime = new CodexSession(new LateAnswers(0), new Transcript(), 'stdio');
  expect(await inTime.request('ping', undefined, 1_000)).toMatchObject({ kind: 'result' });
});
