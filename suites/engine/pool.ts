/**
 * The jobs of a run. Two bounds: at most `jobs` act on their servers at once (an acting slot,
 * `act` / `rest`), and at most `startLimit` are under way at all, so that their servers' start-ups
 * overlap the others' acting (`widen` raises it once a first server has started). A job that only
 * waits (an idle step, a soak's gap) rests meanwhile and acts again when a slot frees up, in turn
 * with the others waiting for one.
 */
export class JobPool {
  private next = 0;
  private underWay = 0;
  private acting = 0;
  private tasks: readonly (() => Promise<unknown>)[] = [];
  /** Jobs waiting to act, first come first served. */
  private readonly waiting: (() => void)[] = [];
  private finished?: () => void;
  private failed?: (error: unknown) => void;

  constructor(
    private readonly jobs: number,
    private startLimit = jobs,
  ) {}

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

  /** Lets up to `startLimit` jobs be under way from now on (never fewer than before). */
  widen(startLimit: number): void {
    if (startLimit <= this.startLimit) return;
    this.startLimit = startLimit;
    this.pump();
  }

  /** Whether an acting slot is free with nothing left to start: capacity that would otherwise go unused. */
  get spare(): boolean {
    return this.next >= this.tasks.length && this.acting < this.limit;
  }

  private get limit(): number {
    return Math.max(1, this.jobs);
  }

  /** Takes an acting slot: at once if one is free and nobody waits, else in turn. */
  async act(): Promise<void> {
    if (this.acting < this.limit && this.waiting.length === 0) this.acting++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Gives the acting slot back: it passes to the first job waiting for one. */
  rest(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.acting--;
  }

  private pump(): void {
    while (this.underWay < Math.max(1, this.startLimit) && this.next < this.tasks.length) {
      const task = this.tasks[this.next++]!;
      this.underWay++;
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
    this.underWay--;
    this.pump();
    if (this.underWay === 0 && this.next >= this.tasks.length) this.finished?.();
  }
}

/**
 * One job's hold on an acting slot of `pool` (none: a job that acts at once, the control or a
 * resident): taken before it acts on its server, given back when it is done, and lent while
 * every one of its waits is under way (an idle step, a server starting), taken back before it goes on.
 */
export class JobSlot {
  /** How many of its waits are under way. */
  private waits = 0;
  private held = false;
  private lent = false;

  /** `waited`: told how long a turn took to come, when it took 100 ms or more (not the job's own time). */
  constructor(
    private readonly pool: JobPool | undefined,
    private readonly waited: (ms: number) => void,
  ) {}

  /** Takes an acting slot: at once if one is free and nobody waits, else in turn. */
  async act(): Promise<void> {
    if (!this.pool) return;
    const waitStarted = Date.now();
    await this.pool.act();
    this.held = true;
    const waited = Date.now() - waitStarted;
    if (waited >= 100) this.waited(waited);
  }

  /** Gives the acting slot back, if it holds one. */
  rest(): void {
    if (!this.held) return;
    this.held = false;
    this.pool?.rest();
  }

  /** Awaits `work` that only waits, lending the slot meanwhile. */
  async waiting<T>(work: Promise<T>): Promise<T> {
    if (this.waits++ === 0 && this.held) {
      this.rest();
      this.lent = true;
    }
    try {
      return await work;
    } finally {
      if (--this.waits === 0 && this.lent) {
        this.lent = false;
        await this.act();
      }
    }
  }
}
