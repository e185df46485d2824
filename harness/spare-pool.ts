/**
 * Keeps one thing (a fresh server) starting in the background while the current one is used:
 * each `take()` hands out a fresh one and starts its successor, so a start overlaps the work
 * before it. `drain()` disposes of what nobody took.
 */
export class SparePool<T> {
  private readonly spares: Promise<T>[] = [];

  constructor(
    private readonly start: () => Promise<T>,
    private readonly dispose: (item: T) => Promise<void>,
  ) {}

  async take(): Promise<T> {
    const item = await (this.spares.shift() ?? this.start());
    const spare = this.start();
    spare.catch(() => undefined); // awaited by the take that gets it, or by drain
    this.spares.push(spare);
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
