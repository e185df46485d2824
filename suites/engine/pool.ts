/**
 * Runs tasks with at most `limit()` of them at once (at least one), each started in list order as
 * a slot frees up or the limit grows (`widen`); resolves with their results in list order. A task
 * that throws rejects the whole pool (the others already started still run to their end).
 */
export class TaskPool<T> {
  private next = 0;
  private active = 0;
  private readonly results: T[] = [];
  private settle!: { resolve: (results: T[]) => void; reject: (error: unknown) => void };

  constructor(
    private readonly tasks: readonly (() => Promise<T>)[],
    private limit: number,
  ) {}

  run(): Promise<T[]> {
    return new Promise<T[]>((resolve, reject) => {
      this.settle = { resolve, reject };
      this.pump();
    });
  }

  /** Lets up to `limit` tasks run at once from now on (never fewer than before). */
  widen(limit: number): void {
    if (limit <= this.limit) return;
    this.limit = limit;
    if (this.settle) this.pump();
  }

  private pump(): void {
    if (this.next >= this.tasks.length && this.active === 0) return this.settle.resolve(this.results);
    while (this.next < this.tasks.length && this.active < Math.max(1, this.limit)) {
      const i = this.next++;
      this.active++;
      this.tasks[i]!().then(
        (result) => {
          this.results[i] = result;
          this.active--;
          this.pump();
        },
        (error: unknown) => this.settle.reject(error),
      );
    }
  }
}

/** Runs `tasks` with at most `jobs` at once (TaskPool with a fixed limit). */
export function runPool<T>(jobs: number, tasks: readonly (() => Promise<T>)[]): Promise<T[]> {
  return new TaskPool(tasks, jobs).run();
}

/**
 * At most `size` holders at once; the others wait in line. A scenario holds one while it acts on
 * its server, not while the server starts: start-ups that wait rather than compute overlap.
 */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = Math.max(1, size);
  }

  /** Resolves once a slot is free, with the function that gives it back (once). */
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}
