import { describe, expect, test } from 'vitest';
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

describe('SparePool: starts ahead, further ahead when the starts lag', () => {
  test('one spare ahead while spares are ready; more (up to four) after a take had to wait', async () => {
    let starts = 0;
    let delayMs = 0;
    const pool = new SparePool<number>(
      () => {
        const n = ++starts;
        return new Promise((resolve) => setTimeout(() => resolve(n), delayMs));
      },
      async () => undefined,
    );
    await pool.take();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await pool.take(); // its spare was ready
    expect(starts).toBe(3); // the two taken and one ahead
    delayMs = 120;
    await pool.take(); // ready (started at 0 ms delay)
    await pool.take(); // had to wait 120 ms: one more ahead from now on
    expect(starts).toBe(6);
    await pool.drain();
  });
});
