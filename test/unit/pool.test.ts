import { describe, expect, test, vi } from 'vitest';
import { SparePool } from '../../harness/spare-pool.js';
import { JobPool } from '../../suites/engine/pool.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const gate = () => {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, resolve: () => open() };
};

describe('JobPool: --jobs bounds acting, start-ups may overlap beyond it', () => {
  test('at most `startLimit` tasks under way, at most `jobs` acting; widen lets more start; a resting task acts again in turn', async () => {
    const pool = new JobPool(2);
    const gates = Array.from({ length: 6 }, gate);
    const started: number[] = [];
    const acting = { now: 0, most: 0 };
    const tasks = gates.map((g, i) => async () => {
      started.push(i);
      await g.promise; // "the server starts"
      await pool.act();
      acting.most = Math.max(acting.most, ++acting.now);
      await tick();
      acting.now--;
      pool.rest();
    });
    const done = pool.run(tasks);
    await tick();
    expect(started).toEqual([0, 1]);
    pool.widen(6);
    await tick();
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    for (const g of gates) g.resolve();
    await done;
    expect(acting.most).toBe(2);
    expect(pool.spare).toBe(true);
  });

  test('a task that throws rejects the run; the others still finish', async () => {
    const pool = new JobPool(1);
    let finished = false;
    const run = pool.run([
      async () => {
        throw new Error('boom');
      },
      async () => void (finished = true),
    ]);
    await expect(run).rejects.toThrow('boom');
    await tick();
    expect(finished).toBe(true);
  });
});

describe('SparePool: as many start ahead as one start covers of the time between takes', () => {
  test('one ahead while starts are quick; four once a start takes four times the work between takes', async () => {
    vi.useFakeTimers();
    try {
      let starts = 0;
      let startMs = 10;
      const pool = new SparePool<number>(
        () => {
          const n = ++starts;
          const ms = startMs;
          return new Promise((resolve) => setTimeout(() => resolve(n), ms));
        },
        async () => undefined,
      );
      /** Works `workMs` on the last one, then takes the next (the clock runs while it waits). */
      const take = async (workMs: number) => {
        await vi.advanceTimersByTimeAsync(workMs);
        const taken = pool.take();
        let done = false;
        void taken.then(() => (done = true));
        while (!done) await vi.advanceTimersByTimeAsync(1);
        return taken;
      };
      await take(0); // nothing measured yet: one ahead
      await take(100); // its spare was ready; a start (10 ms) covers a tenth of the work: one ahead
      expect(starts).toBe(3);
      startMs = 400;
      await take(100); // ready (started at 10 ms); the next starts in 400 ms
      await take(100); // waited for it: 400 ms over 100 ms between takes
      expect(starts).toBe(4 + 4);
      const drained = pool.drain();
      await vi.advanceTimersByTimeAsync(400);
      await drained;
    } finally {
      vi.useRealTimers();
    }
  });

  test('prime starts that many at once (at most six), keeps that many ahead until the time between takes is known, and none beyond the takes said', async () => {
    let starts = 0;
    const disposed: number[] = [];
    const pool = new SparePool<number>(
      async () => ++starts,
      async (n) => void disposed.push(n),
    );
    pool.prime(8);
    expect(starts).toBe(6);
    expect(await pool.take()).toBe(1);
    expect(starts).toBe(7); // the gap not known yet: topped up to six ahead
    await pool.take();
    expect(starts).toBe(7); // a start (instant here) covers none of the gap: five ahead are plenty
    for (let k = 3; k <= 8; k++) await pool.take();
    expect(starts).toBe(8); // the eight takes said: nothing left over
    expect(await pool.take()).toBe(9); // one more than said: started on demand
    await pool.drain();
    expect(disposed.length).toBe(1); // then one ahead again, as measured
  });
});
