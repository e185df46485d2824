import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { rmSync } from 'node:fs';
import {
  cgroupMembers,
  cgroupPopulated,
  killCgroup,
  newServerCgroup,
  removeServerCgroup,
  removeServerCgroupNow,
  serverCgroupParent,
  spawnInCgroup,
} from './containment.js';
import { descendantsOf, groupRunning, pidAlive, readStat, signalGroup, signalPid } from './proc.js';
import { currentScope, type ProcessScope } from './process-scope.js';

/**
 * How the harness makes sure nothing it started outlives a run.
 *
 * 1. Every process is spawned `detached` (spawnTracked), so it leads its own process group;
 *    stopping it signals the whole group: SIGTERM, then SIGKILL after a grace period (only when
 *    something is still alive: a server that exits on SIGTERM costs no grace).
 * 2. Before signalling, the leader's descendants are read from /proc (parent links), so children
 *    that moved to a group or session of their own (setsid, `detached`) are signalled too.
 * 3. A server (spawned with `contain`) runs in a cgroup of its own where the kernel allows it
 *    (containment.ts): stopping it, or the end of its run, kills the whole cgroup, the
 *    `setsid env -i` daemon that double-forked away included.
 * 4. Without cgroups, a server's process tree is recorded while it lives (polled every 100 ms,
 *    each process by pid and start time, so a reused pid is never mistaken for it): stopping the
 *    server, or the end of its run, kills whatever of that record still runs. A daemon that
 *    leaves the tree between two looks is not found.
 * Nothing is added to what the server sees: its environment is the caller's, untouched.
 */

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface TrackedGroup {
  pgid: number;
  child: ChildProcess;
  /** The run it belongs to (the root scope), for the run's final sweep. */
  run?: ProcessScope;
  cgroup?: string;
  /** Without a cgroup: every process seen in the server's tree, pid to start time. */
  seen?: Map<number, number>;
}

/** Groups still running, by leader pid: the end of their run, and the CLI's signal handlers, kill them. */
const liveGroups = new Map<number, TrackedGroup>();
/** Temp directories still in use, for the signal handlers to remove. */
const liveDirs = new Set<string>();

function trackGroup(group: TrackedGroup): void {
  liveGroups.set(group.pgid, group);
  if (group.seen) startPolling();
}
function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

/** A temp directory, removed by cleanUpEverythingNow unless forgotten (the returned function) first. */
export function trackTempDir(dir: string): () => void {
  liveDirs.add(dir);
  return () => liveDirs.delete(dir);
}

/** The processes of a record still running as the very processes recorded (same start time). */
function stillSeen(seen: Map<number, number>): number[] {
  const out: number[] = [];
  for (const [pid, startTime] of seen) {
    const info = readStat(pid);
    if (info && info.startTime === startTime && info.state !== 'Z') out.push(pid);
    else seen.delete(pid); // ended: its pid may go to someone else
  }
  return out;
}

/** Adds the current descendants of every process of the record to it. */
function recordTree(group: TrackedGroup): void {
  const seen = group.seen!;
  for (const root of new Set([group.pgid, ...stillSeen(seen)])) {
    for (const pid of descendantsOf(root)) {
      if (seen.has(pid)) continue;
      const info = readStat(pid);
      if (info && info.state !== 'Z') seen.set(pid, info.startTime);
    }
  }
}

const POLL_MS = 100;
let poller: NodeJS.Timeout | undefined;
function startPolling(): void {
  poller ??= setInterval(() => {
    const recorded = [...liveGroups.values()].filter((g) => g.seen);
    for (const group of recorded) recordTree(group);
    if (recorded.length === 0) {
      clearInterval(poller);
      poller = undefined;
    }
  }, POLL_MS).unref();
}

export interface SpawnTrackedOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  stdio: StdioOptions;
  /** A server: in a cgroup of its own, or, where there are none, with its process tree recorded (see above). */
  contain?: boolean;
}

export interface TrackedProcess {
  child: ChildProcess;
  /**
   * Ends it: its group, its descendants and (contained) its cgroup or recorded tree, then forgets
   * it. SIGTERM, SIGKILL after `graceMs` to whatever is left. Safe to call more than once.
   */
  stop(graceMs?: number): Promise<void>;
  /** Its processes now: its cgroup's members, else its group leader and what was recorded of its tree. */
  pids(): number[];
}

/**
 * Spawns `command args` detached (a process group of its own) and registers it for the end of
 * its run and for cleanUpEverythingNow. It is forgotten once stopped, or at its exit when nothing
 * of it is left. A spawn that fails (no such command) emits `error` as Node's spawn does.
 */
export function spawnTracked(command: string, args: string[], options: SpawnTrackedOptions): TrackedProcess {
  const cgroup = options.contain ? newServerCgroup() : undefined;
  const spawnNow = () => spawn(command, args, { env: options.env, cwd: options.cwd, stdio: options.stdio, detached: true });
  let spawned: ChildProcess | undefined;
  try {
    if (cgroup) spawnInCgroup(cgroup, () => (spawned = spawnNow()));
    else spawned = spawnNow();
  } catch (error) {
    // A failed move back out of the cgroup: what was born in it goes at once.
    if (spawned?.pid !== undefined) signalGroup(spawned.pid, 'SIGKILL');
    if (cgroup) removeServerCgroupNow(cgroup);
    throw error;
  }
  const child = spawned!;
  const pgid = child.pid;
  if (pgid === undefined) {
    // Nothing started ('error' follows).
    if (cgroup) removeServerCgroupNow(cgroup);
    return { child, stop: async () => undefined, pids: () => [] };
  }
  const group: TrackedGroup = { pgid, child, run: currentScope()?.root, cgroup };
  if (options.contain && !cgroup) group.seen = new Map([[pgid, readStat(pgid)?.startTime ?? 0]]);
  trackGroup(group);
  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 1000) =>
    (stopping ??= (async () => {
      if (group.cgroup) {
        await stopCgroup(group.cgroup, graceMs);
        await removeServerCgroup(group.cgroup);
      } else await killProcessGroup(child, graceMs, group.seen ? stillSeen(group.seen) : []);
      untrackGroup(pgid);
    })());
  child.once('exit', () => {
    // Everything the server started is in its cgroup (when it has one): one file says whether anything is left.
    const over = group.cgroup ? !cgroupPopulated(group.cgroup) : !groupRunning(pgid) && !(group.seen && stillSeen(group.seen).length > 0);
    if (over) void stop();
  });
  const pids = () => (group.cgroup ? cgroupMembers(group.cgroup) : [pgid, ...descendantsOf(pgid), ...(group.seen ? stillSeen(group.seen) : [])]);
  return { child, stop, pids };
}

/** SIGKILL, now, to a group, its leader's descendants, its cgroup and what is left of its recorded tree. */
function killNow(group: TrackedGroup): void {
  const recorded = group.seen ? stillSeen(group.seen) : [];
  signalGroup(group.pgid, 'SIGKILL');
  for (const pid of [...(leaderGone(group.child) ? [] : descendantsOf(group.pgid)), ...recorded]) signalPid(pid, 'SIGKILL');
  if (group.cgroup) removeServerCgroupNow(group.cgroup);
}

/**
 * The end of a run: SIGKILL whatever of it is still tracked (a server nobody stopped, and with it
 * whatever escaped its process group). Returns how many groups that was.
 */
export function sweepRun(run: ProcessScope): number {
  const left = [...liveGroups.values()].filter((group) => group.run === run.root);
  for (const group of left) {
    killNow(group);
    untrackGroup(group.pgid);
  }
  return left.length;
}

/**
 * Synchronous last resort for the CLI's signal handlers: SIGKILL every group still running, its
 * descendants, its cgroup or recorded tree; remove every tracked temp dir.
 */
export function cleanUpEverythingNow(): void {
  for (const group of liveGroups.values()) killNow(group);
  liveGroups.clear();
  const parent = serverCgroupParent();
  if (parent) killCgroup(parent);
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
  liveDirs.clear();
}

/** Once the leader has been reaped its pid may be someone else's: only its group (and what we recorded) is still ours. */
const leaderGone = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/**
 * Ends a server in a cgroup of its own: SIGTERM to every process in it, then (removeServerCgroup)
 * SIGKILL to whatever is left after `graceMs`. The cgroup lists its members and says when it is
 * empty: no /proc scan, whose cost grows with every process on the machine.
 */
async function stopCgroup(cgroup: string, graceMs: number): Promise<void> {
  for (const pid of cgroupMembers(cgroup)) signalPid(pid, 'SIGTERM');
  await waitWhile(() => cgroupPopulated(cgroup), Date.now() + graceMs);
}

/** Polls `alive` (from 2 ms up to 20 ms apart) until it is false or `until` (epoch ms) has passed. */
async function waitWhile(alive: () => boolean, until: number): Promise<void> {
  let pause = 2;
  while (alive() && Date.now() < until) {
    await sleep(pause);
    pause = Math.min(20, pause * 2);
  }
}

/**
 * Ends a process started with `detached: true`, everything in its group, every descendant that
 * left the group, and `others` (pids known to be its own): SIGTERM, then SIGKILL to whatever is
 * left after `graceMs`. Returns as soon as all of them are gone (polling from 2 ms up to 20 ms),
 * so a server that exits on SIGTERM costs no grace. Bounded: at most `graceMs` + 1 s.
 */
async function killProcessGroup(child: ChildProcess, graceMs = 1000, others: number[] = []): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  const targets = [...new Set([...(leaderGone(child) ? [] : descendantsOf(pgid)), ...others, ...others.flatMap(descendantsOf)])];
  const alive = () => targets.some(pidAlive) || groupRunning(pgid);
  const send = (signal: NodeJS.Signals) => {
    signalGroup(pgid, signal);
    for (const pid of targets) signalPid(pid, signal);
  };
  send('SIGTERM');
  const wait = (until: number) => waitWhile(alive, until);
  await wait(Date.now() + graceMs);
  if (alive()) {
    // Whatever forked during the grace is a descendant of someone still alive.
    for (const pid of [...targets]) if (pidAlive(pid)) targets.push(...descendantsOf(pid).filter((d) => !targets.includes(d)));
    send('SIGKILL');
    await wait(Date.now() + 1000);
  }
}
