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
  /** Takes still known to come (expect, prime): no more than these start ahead; past them, as many as `ahead` again. */
  private expected?: number;
  /** Takes so far: a count said later (prime) counts them as come. */
  private taken = 0;

  constructor(
    private readonly start: () => Promise<T>,
    private readonly dispose: (item: T) => Promise<void>,
    /** True while the next take is unlikely to come (its taker may stop): nothing starts ahead meanwhile. */
    private readonly holdAhead: () => boolean = () => false,
  ) {}

  async take(): Promise<T> {
    const asked = Date.now();
    if (this.handedOutAt !== undefined) {
      const gap = Math.max(0, asked - this.handedOutAt);
      this.gapMs = this.gapMs === undefined ? gap : (this.gapMs + gap) / 2;
    }
    // One more take than said (a failure's shrinking reruns): as many ahead as measured again.
    this.taken++;
    if (this.expected !== undefined) this.expected = this.expected > 0 ? this.expected - 1 : undefined;
    const item = await (this.spares.shift() ?? this.timedStart());
    this.handedOutAt = Date.now();
    if (!this.holdAhead()) this.fill(Math.min(this.ahead, this.expected ?? MAX_AHEAD));
    return item;
  }

  /**
   * `count` takes are known to come: up to that many (at most MAX_AHEAD) start at once, and no
   * more than are still to come start ahead later (a spare left at the end is a start for nothing).
   */
  prime(count: number): void {
    this.expect(count);
    this.primed = Math.min(MAX_AHEAD, Math.max(1, this.expected!));
    this.fill(Math.min(this.primed, this.expected!));
  }
  /** `count` takes in all are known to come (those already made among them), but none is to start yet. */
  expect(count: number): void {
    this.expected = Math.max(0, count - this.taken);
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
