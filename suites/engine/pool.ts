/**
 * Runs `tasks` with at most `jobs` of them at once (at least one), each started in list order as
 * a slot frees up; resolves with their results in list order. A task that throws rejects the
 * whole pool (the others already started still run to their end).
 */
export async function runPool<T>(jobs: number, tasks: readonly (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array<T>(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, tasks.length)) }, worker));
  return results;
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
