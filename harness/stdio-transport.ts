import { spawn, type ChildProcess } from 'node:child_process';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { killProcessGroup, killProcessGroupNow } from './process-group.js';
import type { Transcript } from './transcript.js';

export interface StdioTargetSpec {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
}

const liveGroups = new Set<number>();
/** Every server group still running; the CLI kills them on SIGINT/SIGTERM. */
export function killAllLiveGroups(): void {
  for (const pgid of liveGroups) killProcessGroupNow(pgid);
  liveGroups.clear();
}

/**
 * Stdio transport for the SDK's `Transport` interface. We do not use the SDK's
 * StdioClientTransport because it cannot start the server in its own process group (so the
 * server's children could outlive a run), replaces the environment with a short default list,
 * and drops stdout lines that are not valid JSON-RPC, which the suite must report instead.
 * Framing is the same: one JSON message per line.
 */
export class ProcessGroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcess;
  private buffer = '';
  private closed = false;
  exitInfo?: { code: number | null; signal: NodeJS.Signals | null };

  constructor(
    private readonly spec: StdioTargetSpec,
    private readonly transcript: Transcript,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.spec.command, this.spec.args, {
        env: this.spec.env,
        cwd: this.spec.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
      this.child = child;
      child.once('error', (error) => {
        if (child.pid === undefined) reject(error);
        else this.onerror?.(error);
      });
      child.once('spawn', () => {
        if (child.pid !== undefined) liveGroups.add(child.pid);
        resolve();
      });
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
      });
      child.once('close', () => {
        this.closed = true;
        this.onclose?.();
      });
      child.stdin?.on('error', () => {
        // The server closed its stdin; the exit handler reports it.
      });
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (chunk: string) => this.onStdout(chunk));
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => this.transcript.stderr(chunk));
    });
  }

  private onStdout(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline).replace(/\r$/, '');
      this.buffer = this.buffer.slice(newline + 1);
      if (line.trim() === '') continue;
      let message: unknown;
      try {
        message = JSON.parse(line);
      } catch {
        this.transcript.garbage(line);
        continue;
      }
      this.onmessage?.(message as JSONRPCMessage);
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.closed || stdin.destroyed) {
        reject(new Error('server is not running'));
        return;
      }
      if (stdin.write(JSON.stringify(message) + '\n')) resolve();
      else stdin.once('drain', () => resolve());
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.stdin?.end();
    await killProcessGroup(child);
    if (child.pid !== undefined) liveGroups.delete(child.pid);
  }
}
