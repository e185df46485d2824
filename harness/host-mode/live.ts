import { rmSync } from 'node:fs';
import { killProcessGroupNow } from '../process-group.js';

/**
 * What host mode has running right now: process groups (hosts, HTTP recording servers) and temp
 * dirs. The `host` subcommand's signal handlers end and remove them all on Ctrl-C.
 */
const groups = new Set<number>();
const dirs = new Set<string>();

export const trackGroup = (pgid: number | undefined): void => void (pgid !== undefined && groups.add(pgid));
export const untrackGroup = (pgid: number | undefined): void => void (pgid !== undefined && groups.delete(pgid));
export const trackDir = (dir: string): void => void dirs.add(dir);
export const untrackDir = (dir: string): void => void dirs.delete(dir);

/** Synchronous, for signal handlers: SIGKILL every live group, remove every live temp dir. */
export function cleanupHostMode(): void {
  for (const pgid of groups) killProcessGroupNow(pgid);
  groups.clear();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
}
