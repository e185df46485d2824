import type { ChildProcess } from 'node:child_process';
import { isObject } from '../json.js';
import { spawnTracked, type TrackedProcess } from '../process-registry.js';
import type { HostProgram } from './host-program.js';

/** A reply to one app-server request, kept raw. */
export type AppOutcome =
  | { kind: 'result'; result: unknown }
  | { kind: 'error'; error: { code?: unknown; message?: unknown; data?: unknown } }
  | { kind: 'timeout'; afterMs: number }
  | { kind: 'closed'; detail: string };

export interface AppNotification {
  method: string;
  params: unknown;
}

interface Pending {
  resolve: (outcome: AppOutcome) => void;
  timer: NodeJS.Timeout;
}

/**
 * A client of `codex app-server` (JSON-RPC 2.0, one JSON object per line on stdio, no
 * `jsonrpc` member needed). The host runs in its own process group with a private CODEX_HOME;
 * requests the host sends to us (approvals, elicitations) are declined, as no user is present.
 */
export class AppServerClient {
  private child?: ChildProcess;
  private tracked?: TrackedProcess;
  private nextId = 1;
  private buffer = '';
  private readonly pending = new Map<number, Pending>();
  private readonly waiters: { match: (n: AppNotification) => boolean; resolve: (n: AppNotification | undefined) => void; timer: NodeJS.Timeout }[] = [];
  private closedDetail?: string;
  readonly notifications: AppNotification[] = [];
  readonly serverRequests: { method: string; params: unknown }[] = [];
  stderr = '';

  constructor(
    private readonly host: HostProgram,
    private readonly env: NodeJS.ProcessEnv,
    private readonly cwd: string,
  ) {}

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.tracked = spawnTracked(this.host.command, [...this.host.args, 'app-server'], { cwd: this.cwd, env: this.env, stdio: ['pipe', 'pipe', 'pipe'] });
      const child = this.tracked.child;
      this.child = child;
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => this.onData(chunk));
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
        if (this.stderr.length < 200_000) this.stderr += chunk;
      });
      child.stdin!.on('error', () => undefined);
      child.once('error', (error) => {
        this.fail(`cannot start ${this.host.display} app-server: ${error.message}`);
        reject(error);
      });
      child.once('spawn', () => resolve());
      child.once('exit', (code, signal) => this.fail(`app-server exited (${signal ? `signal ${signal}` : `code ${code}`})`));
    });
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) !== -1) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      if (!line) continue;
      let message: unknown;
      try {
        message = JSON.parse(line);
      } catch {
        continue; // not JSON-RPC: a log line on stdout
      }
      if (isObject(message)) this.onMessage(message);
    }
  }

  private onMessage(msg: Record<string, unknown>): void {
    if (typeof msg.method === 'string' && msg.id !== undefined) {
      // A request from the host: no user here, so decline whatever it asks.
      this.serverRequests.push({ method: msg.method, params: msg.params });
      const result = msg.method.includes('elicitation') ? { action: 'decline' } : { decision: 'decline' };
      this.write({ id: msg.id, result });
      return;
    }
    if (typeof msg.method === 'string') {
      const notification = { method: msg.method, params: msg.params };
      this.notifications.push(notification);
      for (const waiter of [...this.waiters]) {
        if (waiter.match(notification)) {
          clearTimeout(waiter.timer);
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve(notification);
        }
      }
      return;
    }
    const id = typeof msg.id === 'number' ? msg.id : Number.NaN;
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    if (isObject(msg.error)) pending.resolve({ kind: 'error', error: msg.error });
    else pending.resolve({ kind: 'result', result: msg.result });
  }

  private write(message: Record<string, unknown>): void {
    this.child?.stdin?.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
  }

  private fail(detail: string): void {
    if (this.closedDetail) return;
    this.closedDetail = detail;
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.resolve({ kind: 'closed', detail });
      this.pending.delete(id);
    }
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.resolve(undefined);
    }
  }

  request(method: string, params: unknown, timeoutMs: number): Promise<AppOutcome> {
    if (this.closedDetail) return Promise.resolve({ kind: 'closed', detail: this.closedDetail });
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ kind: 'timeout', afterMs: timeoutMs });
      }, timeoutMs);
      this.pending.set(id, { resolve, timer });
      this.write({ id, method, params });
    });
  }

  notify(method: string, params?: unknown): void {
    this.write(params === undefined ? { method } : { method, params });
  }

  /** The first notification (already received or still to come) that matches; undefined on timeout or exit. */
  waitFor(match: (n: AppNotification) => boolean, timeoutMs: number, after = 0): Promise<AppNotification | undefined> {
    const seen = this.notifications.slice(after).find(match);
    if (seen) return Promise.resolve(seen);
    if (this.closedDetail) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter = {
        match,
        resolve,
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          resolve(undefined);
        }, timeoutMs),
      };
      this.waiters.push(waiter);
    });
  }

  get closed(): string | undefined {
    return this.closedDetail;
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.stdin?.end();
    await this.tracked?.stop(1500);
    this.fail('closed by host mode');
  }
}

export function describeAppOutcome(outcome: AppOutcome): string {
  switch (outcome.kind) {
    case 'result':
      return 'a result';
    case 'error':
      return `JSON-RPC error ${String(outcome.error.code)}: ${String(outcome.error.message)}`;
    case 'timeout':
      return `no answer within ${outcome.afterMs} ms`;
    case 'closed':
      return outcome.detail;
  }
}
