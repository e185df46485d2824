import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect as tcpConnect } from 'node:net';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { assertNotAborted, currentScope, killProcessGroup, markedEnvironment, trackGroup, untrackGroup } from './process-group.js';
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

/**
 * Starts `--http-command` on a free loopback port (its `{port}` filled in), in its own process
 * group, and waits until the port accepts connections. Throws with the reason on exit or timeout.
 */
export async function startHttpCommand(
  template: string,
  path: string,
  env: NodeJS.ProcessEnv,
  cwd: string | undefined,
  timeoutMs: number,
  transcript: Transcript,
): Promise<StartedHttpServer> {
  assertNotAborted();
  const port = await freePort();
  const command = template.replaceAll('{port}', String(port));
  transcript.note(`starting: ${command}`);
  const child = spawn('/bin/sh', ['-c', command], { env: markedEnvironment(env), cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  if (child.pid !== undefined) trackGroup(child.pid);
  // Its output goes to the transcript, up to 1 MB (a chatty server must not fill the memory).
  let kept = 0;
  const record = (chunk: string) => {
    if (kept >= 1024 * 1024) return;
    kept += chunk.length;
    transcript.stderr(chunk);
  };
  child.stdout?.setEncoding('utf8').on('data', record);
  child.stderr?.setEncoding('utf8').on('data', record);
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = signal ? `signal ${signal}` : `code ${code}`));
  child.once('error', (error) => (exited = error.message));
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= killProcessGroup(child).then(() => {
      if (child.pid !== undefined) untrackGroup(child.pid);
    }));
  // An aborted job (timeout, target dead) stops the server at once, also while it is starting.
  const scope = currentScope();
  let aborted: string | undefined;
  const forget = scope?.onAbort((reason) => {
    aborted = reason;
    void stop();
  });
  const deadline = Date.now() + timeoutMs;
  // Poll the port often at first (most servers listen within a few hundred ms), then every 25 ms.
  let pause = 5;
  while (!(await portOpen(port))) {
    if (aborted !== undefined) {
      await stop();
      throw new Error(aborted);
    }
    if (exited) {
      await stop();
      forget?.();
      throw new Error(`--http-command exited (${exited}) before listening on port ${port}`);
    }
    if (Date.now() > deadline) {
      await stop();
      forget?.();
      throw new Error(`--http-command did not listen on port ${port} within the startup timeout (${timeoutMs} ms)`);
    }
    await new Promise((r) => setTimeout(r, pause));
    pause = Math.min(25, pause + 5);
  }
  return { url: `http://127.0.0.1:${port}${path}`, child, stop };
}

/** The SDK's Streamable HTTP client transport; the host session on top stays ours. */
export function httpTransport(url: string): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url));
}
