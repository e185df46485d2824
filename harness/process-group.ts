import type { ChildProcess } from 'node:child_process';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** True while any process of the group led by `pgid` is alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/**
 * Ends a process started with `detached: true` and everything it spawned into its group:
 * SIGTERM, then SIGKILL after `graceMs`. The server's own children (launched commands,
 * sessions) share its group, so none of them outlives the scenario.
 */
export async function killProcessGroup(child: ChildProcess, graceMs = 1000): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  signalGroup(pgid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (groupAlive(pgid) && Date.now() < deadline) await sleep(15);
  if (groupAlive(pgid)) signalGroup(pgid, 'SIGKILL');
  while (groupAlive(pgid) && Date.now() < deadline + 1000) await sleep(15);
}

/** Synchronous last resort for process exit handlers, where nothing can be awaited. */
export function killProcessGroupNow(pgid: number): void {
  signalGroup(pgid, 'SIGKILL');
}
