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
