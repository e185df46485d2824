import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { STRING_KEEP } from '../../harness/bounded-json.js';
import { CodexHttpTransport, listenerAmong, startHttpCommand } from '../../harness/http-target.js';
import { Transcript } from '../../harness/transcript.js';
import { root } from '../helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'msc-http-target-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const reference = join(root, 'fixtures/servers/mutant-base/server.mjs');

test('the listener on a port is told apart by its process: ours, or someone else’s', async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  try {
    expect(listenerAmong(port, [process.pid])).toBe(true);
    expect(listenerAmong(port, [process.ppid])).toBe(false);
    expect(listenerAmong(port, [])).toBe(false);
  } finally {
    server.close();
  }
});

test('--http-command that finds its port taken is started again on another port; any other early exit is an error at once', async () => {
  // The first start says what Node says when the port is taken, and exits; the second listens.
  const marker = join(scratch, 'first-start');
  const command = `if [ -e '${marker}' ]; then exec node '${reference}' --http --port {port}; fi; : > '${marker}'; echo 'Error: listen EADDRINUSE: address already in use 127.0.0.1:{port}' >&2; exit 1`;
  const transcript = new Transcript();
  const started = await startHttpCommand(command, '/mcp', process.env, undefined, 30_000, transcript);
  try {
    expect(started.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(transcript.entries.map((e) => JSON.stringify(e)).join('\n')).toContain('the port was taken: starting it again on another port');
  } finally {
    await started.stop();
  }
  await expect(startHttpCommand("echo 'no such file' >&2; exit 3", '/mcp', process.env, undefined, 30_000, new Transcript())).rejects.toThrow(
    /exited \(code 3\) before listening/,
  );
}, 60_000);

test('over HTTP a long string keeps the marker of its first cut, with the whole string’s size (JSON and event-stream answers)', async () => {
  const text = 'build log line; '.repeat(200_000); // 3.2 MB, no escapes: its kept head and tail and the marker are over the bound when decoded
  const answer = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text }] } });
  const server = createHttpServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (request.url === '/sse') {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(`event: message\ndata: ${answer}\n\n`);
      } else {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(answer);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  try {
    for (const path of ['/json', '/sse']) {
      const transport = await CodexHttpTransport.create(`http://127.0.0.1:${port}${path}`);
      const received = new Promise<unknown>((resolve) => (transport.onmessage = resolve));
      await transport.start();
      await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'exec', arguments: {} } });
      const message = (await received) as { result: { content: { text: string }[] } };
      const kept = message.result.content[0]!.text;
      expect(kept.length, path).toBeLessThan(STRING_KEEP + 200);
      expect(kept.match(/bytes elided here/g), path).toHaveLength(1);
      expect(Number(/…\[(\d+) bytes elided/.exec(kept)![1]), path).toBe(Buffer.byteLength(JSON.stringify(text)) - 2 - STRING_KEEP); // the bytes as sent, escapes included
      await transport.close();
    }
  } finally {
    server.close();
  }
});
