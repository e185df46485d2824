/**
 * Runs tasks with at most `jobs` of them busy at once (at least one), each started in list order
 * as a slot frees up. A task that only waits (an idle step of exploration, a soak's gap) lends its
 * slot meanwhile (`lend`, then `reclaim`): the next task starts, and the idle one takes the first slot that frees
 * up afterwards, before any task not yet started.
 */
export class JobPool {
  private busy = 0;
  private next = 0;
  private tasks: readonly (() => Promise<unknown>)[] = [];
  /** Idle tasks waiting for their slot back: served before new tasks. */
  private readonly returning: (() => void)[] = [];
  private running = 0;
  private finished?: () => void;
  private failed?: (error: unknown) => void;

  constructor(private readonly jobs: number) {}

  /** Resolves once every task has finished; a task that throws rejects it (the others still run to their end). */
  run(tasks: readonly (() => Promise<unknown>)[]): Promise<void> {
    this.tasks = tasks;
    const done = new Promise<void>((resolve, reject) => {
      this.finished = resolve;
      this.failed = reject;
    });
    this.pump();
    if (tasks.length === 0) this.finished!();
    return done;
  }

  /** Whether a slot is free with nothing left to start: capacity that would otherwise go unused. */
  get spare(): boolean {
    return this.next >= this.tasks.length && this.busy < this.limit;
  }

  private get limit(): number {
    return Math.max(1, this.jobs);
  }

  /** Gives up a slot while the task only waits: the next task starts (reclaim takes one back). */
  lend(): void {
    this.busy--;
    this.pump();
  }

  /** Takes a slot back after `lend`: the first one that frees up, before any task not yet started. */
  async reclaim(): Promise<void> {
    if (this.busy < this.limit) this.busy++;
    else await new Promise<void>((resolve) => this.returning.push(resolve));
  }

  private release(): void {
    const back = this.returning.shift();
    if (back)
      back(); // the slot passes to an idle task coming back
    else {
      this.busy--;
      this.pump();
    }
  }

  private pump(): void {
    while (this.busy < this.limit && this.returning.length > 0) {
      this.busy++;
      this.returning.shift()!();
    }
    while (this.busy < this.limit && this.next < this.tasks.length) {
      const task = this.tasks[this.next++]!;
      this.busy++;
      this.running++;
      task().then(
        () => this.settle(),
        (error: unknown) => {
          this.failed?.(error);
          this.settle();
        },
      );
    }
  }

  private settle(): void {
    this.running--;
    this.release();
    if (this.running === 0 && this.next >= this.tasks.length) this.finished?.();
  }
}

/** Runs `tasks` on a JobPool of `jobs` slots; resolves with their results in list order. */
export async function runPool<T>(jobs: number, tasks: readonly (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array<T>(tasks.length);
  await new JobPool(jobs).run(tasks.map((task, i) => async () => (results[i] = await task())));
  return results;
}
