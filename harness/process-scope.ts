import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Where a spawn belongs: the run (its root scope, by which the run's end finds what is left of it)
 * and, for a job, the switch that aborts it (scenario timeout, run timeout, a target found dead at startup). Spawners and host
 * sessions read it from the async context, so the runner needs no handle on each process.
 */
export class ProcessScope {
  /** The run's scope: the root of this scope's chain. */
  readonly root: ProcessScope;
  private reason?: string;
  private readonly listeners = new Set<(reason: string) => void>();

  constructor(readonly parent?: ProcessScope) {
    this.root = parent?.root ?? this;
  }

  get aborted(): string | undefined {
    return this.reason;
  }
  /** Aborts this scope (and every scope whose parent it is, through their onAbort registration). */
  abort(reason: string): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener(reason);
  }
  /** Calls `listener` with the reason once the scope is aborted (at once if it already is); returns the unsubscribe. */
  onAbort(listener: (reason: string) => void): () => void {
    if (this.reason !== undefined) {
      listener(this.reason);
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  /** A scope for one job of this run: aborted with the run. */
  child(): ProcessScope {
    const scope = new ProcessScope(this);
    const forget = this.onAbort((reason) => scope.abort(reason));
    scope.onAbort(() => forget());
    return scope;
  }
  /** Runs `fn` with this scope as the current one. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return storage.run(this, fn);
  }
}

const storage = new AsyncLocalStorage<ProcessScope>();
export const currentScope = (): ProcessScope | undefined => storage.getStore();

/** Throws when the current scope is aborted: nothing new starts in an aborted job. */
export function assertNotAborted(): void {
  const reason = currentScope()?.aborted;
  if (reason !== undefined) throw new Error(reason);
}
