/** How many fresh things may be starting ahead at most, for a target that takes long to start. */
const MAX_AHEAD = 6;

/**
 * Keeps fresh things (servers) starting in the background while the current ones are used: each
 * `take()` hands out a fresh one and starts its successors, so a start overlaps the work before
 * it. How many start ahead follows what it measures: as many as one start's duration covers of
 * the time between two takes (the work done on each, shared by everyone taking), at least one and
 * at most MAX_AHEAD. A target that starts in 2 s, used for 1 s at a time by two takers, gets four
 * ahead; one that starts in 0.1 s gets one (or as many as `prime` asked for, until the gap is
 * known). `drain()` disposes of what nobody took.
 */
export class SparePool<T> {
  private readonly spares: Promise<T>[] = [];
  /** How long the last start took, ms. */
  private startMs?: number;
  /** The time between one take's hand-out and the next take (its wait for a spare excluded), smoothed. */
  private gapMs?: number;
  private handedOutAt?: number;
  /** How many start ahead before the time between takes is known (prime). */
  private primed = 1;

  constructor(
    private readonly start: () => Promise<T>,
    private readonly dispose: (item: T) => Promise<void>,
  ) {}

  async take(): Promise<T> {
    const asked = Date.now();
    if (this.handedOutAt !== undefined) {
      const gap = Math.max(0, asked - this.handedOutAt);
      this.gapMs = this.gapMs === undefined ? gap : (this.gapMs + gap) / 2;
    }
    const item = await (this.spares.shift() ?? this.timedStart());
    this.handedOutAt = Date.now();
    this.fill(this.ahead);
    return item;
  }

  /** Starts up to `count` (at most MAX_AHEAD) at once, before the first take: the takes they are for are known to come. */
  prime(count: number): void {
    this.primed = Math.min(MAX_AHEAD, Math.max(1, count));
    this.fill(this.primed);
  }

  private fill(count: number): void {
    while (this.spares.length < count) {
      const next = this.timedStart();
      next.catch(() => undefined); // awaited by the take that gets it, or by drain
      this.spares.push(next);
    }
  }

  private get ahead(): number {
    if (this.startMs === undefined || this.gapMs === undefined) return this.primed;
    return Math.min(MAX_AHEAD, Math.max(1, Math.ceil(this.startMs / Math.max(1, this.gapMs))));
  }

  private timedStart(): Promise<T> {
    const started = Date.now();
    const item = this.start();
    item.then(
      () => (this.startMs = Date.now() - started),
      () => undefined,
    );
    return item;
  }

  async drain(): Promise<void> {
    await Promise.all(
      this.spares.splice(0).map(async (spare) => {
        const unused = await spare.catch(() => undefined);
        if (unused !== undefined) await this.dispose(unused);
      }),
    );
  }
}
