/** How many fresh things may be starting ahead at most, for a target that takes long to start. */
const MAX_AHEAD = 4;

/**
 * Keeps fresh things (servers) starting in the background while the current ones are used: each
 * `take()` hands out a fresh one and starts its successor, so a start overlaps the work before
 * it. When a take had to wait for its spare (the target starts more slowly than it is used), one
 * more is kept starting ahead, up to MAX_AHEAD. `drain()` disposes of what nobody took.
 */
export class SparePool<T> {
  private readonly spares: Promise<T>[] = [];
  private ahead = 1;

  constructor(
    private readonly start: () => Promise<T>,
    private readonly dispose: (item: T) => Promise<void>,
  ) {}

  async take(): Promise<T> {
    const spare = this.spares.shift();
    const asked = Date.now();
    const item = await (spare ?? this.start());
    // A spare that was not ready yet: the starts do not keep up with the work.
    if (spare && Date.now() - asked > 50 && this.ahead < MAX_AHEAD) this.ahead++;
    while (this.spares.length < this.ahead) {
      const next = this.start();
      next.catch(() => undefined); // awaited by the take that gets it, or by drain
      this.spares.push(next);
    }
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
