import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect as tcpConnect } from 'node:net';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { killProcessGroup } from './process-group.js';
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
  const port = await freePort();
  const command = template.replaceAll('{port}', String(port));
  transcript.note(`starting: ${command}`);
  const child = spawn('/bin/sh', ['-c', command], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => transcript.stderr(chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => transcript.stderr(chunk));
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = signal ? `signal ${signal}` : `code ${code}`));
  child.once('error', (error) => (exited = error.message));
  const stop = () => killProcessGroup(child);
  const deadline = Date.now() + timeoutMs;
  while (!(await portOpen(port))) {
    if (exited) {
      await stop();
      throw new Error(`--http-command exited (${exited}) before listening on port ${port}`);
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`--http-command did not listen on port ${port} within the startup timeout (${timeoutMs} ms)`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return { url: `http://127.0.0.1:${port}${path}`, child, stop };
}

/** The SDK's Streamable HTTP client transport; the host session on top stays ours. */
export function httpTransport(url: string): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url));
}
