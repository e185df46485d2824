import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { listenerAmong, startHttpCommand } from '../../harness/http-target.js';
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
