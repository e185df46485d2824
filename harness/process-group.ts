import { AsyncLocalStorage } from 'node:async_hooks';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants as fsConstants, existsSync, openSync, readSync, readdirSync, rmSync, statSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path';

/**
 * How the harness makes sure nothing it started outlives a run.
 *
 * 1. Every server is spawned `detached`, so it leads its own process group; closing it signals the
 *    whole group: SIGTERM, then SIGKILL after a grace period (only when something is still alive:
 *    a server that exits on SIGTERM costs no grace).
 * 2. Before signalling, the server's descendants are read from /proc (parent links), so children
 *    that moved to a group or session of their own (setsid, `detached`) are signalled too.
 * 3. Every process the run starts carries `MCP_SANDBOX_CONFORMANCE_RUN=<run marker>` in its
 *    environment, which its descendants inherit. At the end of the run (and on SIGHUP/SIGINT/SIGTERM) a
 *    sweep of /proc/<pid>/environ kills whatever still carries the marker: that catches daemons
 *    that double-forked away from their parent. Its limit: a descendant that execs with a
 *    scrubbed environment (`env -i`) after leaving the session is not found.
 * 4. Where the kernel allows it (Linux, CAP_SYS_ADMIN), every server starts in a PID namespace of
 *    its own (see containment()): when the server ends, the kernel kills everything in it, the
 *    `setsid env -i` daemon included. Elsewhere 1-3 are all there is.
 */

export const RUN_MARKER_ENV = 'MCP_SANDBOX_CONFORMANCE_RUN';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Where a spawn belongs: the run (its marker, for the final sweep) and, for a job, the switch that
 * aborts it (scenario timeout, run timeout, a target found dead at startup). Spawners and host
 * sessions read it from the async context, so the runner needs no handle on each process.
 */
export class ProcessScope {
  readonly marker: string;
  private reason?: string;
  private readonly listeners = new Set<(reason: string) => void>();

  constructor(readonly parent?: ProcessScope) {
    this.marker = parent?.marker ?? `${process.pid}-${randomBytes(6).toString('hex')}`;
  }

  get aborted(): string | undefined {
    return this.reason;
  }
  /** Aborts this scope (and every scope whose parent it is, through their onAbort registration). */
  abort(reason: string): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener(reason);
  }
  /** Calls `listener` with the reason once the scope is aborted (at once if it already is); returns the unsubscribe. */
  onAbort(listener: (reason: string) => void): () => void {
    if (this.reason !== undefined) {
      listener(this.reason);
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  /** A scope for one job of this run: aborted with the run. */
  child(): ProcessScope {
    const scope = new ProcessScope(this);
    const forget = this.onAbort((reason) => scope.abort(reason));
    scope.onAbort(() => forget());
    return scope;
  }
  /** Runs `fn` with this scope as the current one. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return storage.run(this, fn);
  }
}

const storage = new AsyncLocalStorage<ProcessScope>();
export const currentScope = (): ProcessScope | undefined => storage.getStore();

/** The environment for a process the harness spawns: the run marker added. */
export function markedEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const scope = currentScope();
  return scope ? { ...env, [RUN_MARKER_ENV]: scope.marker } : env;
}

/** Throws when the current scope is aborted: nothing new starts in an aborted job. */
export function assertNotAborted(): void {
  const reason = currentScope()?.aborted;
  if (reason !== undefined) throw new Error(reason);
}

// ---------------------------------------------------------------------------------------------
// /proc
// ---------------------------------------------------------------------------------------------

interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
}

const hasProc = (() => {
  try {
    readdirSync('/proc/self');
    return true;
  } catch {
    return false;
  }
})();

/**
 * Reads a /proc file into one shared buffer (readFileSync would allocate 64 KB per file, as
 * procfs reports no size: megabytes of garbage per scan). Returns the bytes read, up to the
 * buffer's size, or undefined when the file cannot be read.
 */
let procBuffer = Buffer.alloc(16 * 1024);
function readProc(path: string, whole = false): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    let length = 0;
    for (;;) {
      const n = readSync(fd, procBuffer, length, procBuffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length === procBuffer.length) {
        if (!whole) break;
        const bigger = Buffer.alloc(procBuffer.length * 2);
        procBuffer.copy(bigger);
        procBuffer = bigger;
      }
    }
    return procBuffer.subarray(0, length);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function readStat(pid: number): ProcInfo | undefined {
  try {
    const raw = readProc(`/proc/${pid}/stat`);
    if (!raw) return undefined;
    const text = raw.toString('latin1');
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { pid, state: fields[0] ?? '?', ppid: Number(fields[1]), pgid: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

function allPids(): number[] {
  if (!hasProc) return [];
  try {
    return readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return [];
  }
}

/** The direct children of `pid`, from /proc/<pid>/task/<tid>/children (undefined where the kernel lacks it). */
let taskChildrenWork = hasProc;
function childrenOf(pid: number): number[] | undefined {
  if (!taskChildrenWork) return undefined;
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return []; // gone
  }
  const out: number[] = [];
  for (const tid of tasks) {
    const raw = readProc(`/proc/${pid}/task/${tid}/children`);
    if (raw === undefined) {
      if (!existsSync(`/proc/${pid}/task/${tid}`)) continue; // the thread ended meanwhile
      taskChildrenWork = false; // no CONFIG_PROC_CHILDREN: scan /proc instead
      return undefined;
    }
    for (const word of raw.toString('latin1').split(' ')) if (word) out.push(Number(word));
  }
  return out;
}

/**
 * Every live descendant of `root` (not `root` itself), by parent links, whatever its group or
 * session. Reads each process's children lists (a few files), or scans all of /proc where the
 * kernel has no such lists.
 */
export function descendantsOf(root: number): number[] {
  const out: number[] = [];
  let children: Map<number, number[]> | undefined;
  const childrenByScan = (pid: number) => {
    if (!children) {
      children = new Map();
      for (const p of allPids()) {
        const info = readStat(p);
        if (!info || info.state === 'Z') continue;
        const list = children.get(info.ppid);
        if (list) list.push(p);
        else children.set(info.ppid, [p]);
      }
    }
    return children.get(pid) ?? [];
  };
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop()!;
    for (const child of childrenOf(pid) ?? childrenByScan(pid)) {
      if (child === process.pid || out.includes(child)) continue;
      out.push(child);
      todo.push(child);
    }
  }
  return out;
}

/** Live processes (not zombies) whose environment carries this run marker. */
export function markedProcesses(marker: string): number[] {
  const needle = Buffer.from(`\0${RUN_MARKER_ENV}=${marker}\0`);
  const first = Buffer.from(`${RUN_MARKER_ENV}=${marker}\0`);
  const out: number[] = [];
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    const environ = readProc(`/proc/${pid}/environ`, true);
    if (!environ) continue; // gone, or not ours
    if (environ.includes(needle) || environ.subarray(0, first.length).equals(first)) {
      if (readStat(pid)?.state !== 'Z') out.push(pid);
    }
  }
  return out;
}

/** SIGKILLs every process that still carries the run marker; returns how many there were. */
export function sweepMarked(marker: string): number {
  const pids = markedProcesses(marker);
  for (const pid of pids) signalPid(pid, 'SIGKILL');
  return pids.length;
}

// ---------------------------------------------------------------------------------------------
// Signals
// ---------------------------------------------------------------------------------------------

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  if (pgid <= 1 || pgid === process.pid) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 1 || pid === process.pid) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

function pidAlive(pid: number): boolean {
  if (hasProc) {
    const info = readStat(pid);
    return info !== undefined && info.state !== 'Z';
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True while any process of the group led by `pgid` exists (zombies awaiting their reaper included). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * True while a process of the group is alive and not a zombie. Orphans are reparented to PID 1,
 * which may reap them late (seconds, on some init processes): a group of zombies is over.
 */
export function groupRunning(pgid: number): boolean {
  if (!groupAlive(pgid)) return false;
  if (!hasProc) return true;
  if (pidAlive(pgid)) return true;
  for (const pid of allPids()) {
    const info = readStat(pid);
    if (info && info.pgid === pgid && info.state !== 'Z') return true;
  }
  return false;
}

/*
 * What is running right now, server mode's and host mode's alike: process groups (servers, hosts,
 * HTTP recording servers), run markers and temp dirs. The CLI's signal handlers end and remove
 * them all, synchronously, with cleanUpEverythingNow.
 */
/** Groups still running, by leader pid: the CLI's signal handlers kill them synchronously. */
const liveGroups = new Set<number>();
/** Markers of runs still going, for the signal handlers' sweep. */
const liveMarkers = new Set<string>();
/** Temp directories still in use, for the signal handlers to remove. */
const liveDirs = new Set<string>();

export function trackGroup(pgid: number): void {
  liveGroups.add(pgid);
}
export function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid);
}
export function trackRunMarker(marker: string): () => void {
  liveMarkers.add(marker);
  return () => liveMarkers.delete(marker);
}

/** A temp directory, removed by cleanUpEverythingNow unless forgotten (the returned function) first. */
export function trackTempDir(dir: string): () => void {
  liveDirs.add(dir);
  return () => liveDirs.delete(dir);
}

/**
 * Synchronous last resort for the CLI's signal handlers: SIGKILL every group still running and
 * its descendants, sweep every live run's marker, remove every tracked temp dir.
 */
export function cleanUpEverythingNow(): void {
  for (const pgid of liveGroups) killProcessGroupNow(pgid);
  liveGroups.clear();
  for (const marker of liveMarkers) sweepMarked(marker);
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
  liveDirs.clear();
}

/** SIGKILL, now, to a group and to every descendant of its leader (in any group). */
export function killProcessGroupNow(pgid: number): void {
  const descendants = descendantsOf(pgid);
  signalGroup(pgid, 'SIGKILL');
  for (const pid of descendants) signalPid(pid, 'SIGKILL');
}

/**
 * Ends a process started with `detached: true`, everything in its group, and every descendant
 * that left the group: SIGTERM, then SIGKILL to whatever is left after `graceMs`. Returns as soon
 * as all of them are gone (polling from 2 ms up to 20 ms), so a server that exits on SIGTERM
 * costs no grace. Bounded: at most `graceMs` + 1 s.
 */
export async function killProcessGroup(child: ChildProcess, graceMs = 1000): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  const descendants = descendantsOf(pgid);
  const alive = () => descendants.some(pidAlive) || groupRunning(pgid);
  const send = (signal: NodeJS.Signals) => {
    signalGroup(pgid, signal);
    for (const pid of descendants) signalPid(pid, signal);
  };
  send('SIGTERM');
  const wait = async (until: number) => {
    let pause = 2;
    while (alive() && Date.now() < until) {
      await sleep(pause);
      pause = Math.min(20, pause * 2);
    }
  };
  await wait(Date.now() + graceMs);
  if (alive()) {
    // Whatever forked during the grace is a descendant of someone still alive.
    for (const pid of [...descendants]) if (pidAlive(pid)) descendants.push(...descendantsOf(pid).filter((d) => !descendants.includes(d)));
    send('SIGKILL');
    await wait(Date.now() + 1000);
  }
  liveGroups.delete(pgid);
}

// ---------------------------------------------------------------------------------------------
// Kernel containment
// ---------------------------------------------------------------------------------------------

export interface Containment {
  /** `pid-namespace`: each server in a PID namespace of its own; `sweep`: process groups, /proc descendants and the marker sweep only. */
  mechanism: 'pid-namespace' | 'sweep';
  detail: string;
}

/** `sweep` forces the fallback (for tests, or a host where namespaces misbehave). */
export const CONTAINMENT_ENV = 'MCP_SANDBOX_CONFORMANCE_CONTAINMENT';

// --mount-proc: a /proc of the namespace's own, for whatever in it reads /proc by the PIDs it sees
// (bubblewrap, the real Codex sandbox, opens /proc/<its child>/ns/*). About 2 ms a spawn in all.
const UNSHARE_ARGS = ['--pid', '--fork', '--kill-child', '--mount-proc', '--'];
/**
 * PID 1 of a namespace ignores every signal it has no handler for, and a node server's SIGTERM
 * default re-raises it with the default action: as PID 1 it would outlive SIGTERM and cost every
 * close the whole grace. So a shell is PID 1 and only waits: the server runs as PID 2 with
 * ordinary signals (the group's SIGTERM reaches it directly), stdin and stdout are inherited,
 * and when it ends the shell exits, which ends the namespace. `exit $?` keeps the shell from
 * exec'ing the server in its place. The shell exports a `PWD` of its own, which the server must
 * not get unless its environment had one (Codex's has none: harness/codex-environment.ts).
 */
const NAMESPACE_INIT = '[ "$1" = keep ] || unset PWD; shift; "$@"; exit $?';

/** An executable `name` (a path, or a bare name searched on `path`), absolute; undefined when there is none. */
function findExecutable(name: string, path: string | undefined, cwd: string): string | undefined {
  const candidates = name.includes('/')
    ? [resolvePath(cwd, name)]
    : (path ?? '')
        .split(delimiter)
        .filter(isAbsolute)
        .map((dir) => join(dir, name));
  for (const file of candidates) {
    try {
      if (statSync(file).isFile()) {
        accessSync(file, fsConstants.X_OK);
        return file;
      }
    } catch {
      // not this one
    }
  }
  return undefined;
}

let probed: (Containment & { unshare?: string }) | undefined;

/** The containment in force for this process's runs; probed once (one `unshare` start, about 5 ms). */
export function containment(): Containment {
  probed ??= probeContainment();
  return { mechanism: probed.mechanism, detail: probed.detail };
}

function probeContainment(): Containment & { unshare?: string } {
  const fallback = (why: string): Containment => ({
    mechanism: 'sweep',
    detail: `${why}; only process groups and the run-marker sweep, which miss a daemon that leaves its session and scrubs its environment`,
  });
  if (process.env[CONTAINMENT_ENV] === 'sweep') return fallback(`${CONTAINMENT_ENV}=sweep`);
  if (process.platform !== 'linux') return fallback(`no PID namespaces on ${process.platform}`);
  const unshare = findExecutable('unshare', process.env.PATH, process.cwd());
  if (!unshare) return fallback('unshare (util-linux) not found on PATH');
  const probe = spawnSync(unshare, [...UNSHARE_ARGS, '/bin/sh', '-c', 'exit 0'], { stdio: 'ignore', timeout: 5000 });
  if (probe.error || probe.status !== 0)
    return fallback(`unshare --pid failed (${probe.error?.message ?? `exit ${probe.status ?? probe.signal}`}; it needs root or CAP_SYS_ADMIN)`);
  return {
    mechanism: 'pid-namespace',
    detail: 'each server in a PID namespace of its own (unshare --pid), so the kernel ends whatever a server started when the server ends',
    unshare,
  };
}

/** Signal numbers to names; the first name of an alias pair (SIGABRT, not SIGIOT), as Node reports them. */
const signalNames = new Map<number, NodeJS.Signals>();
for (const [name, number] of Object.entries(osConstants.signals)) if (!signalNames.has(number)) signalNames.set(number, name as NodeJS.Signals);

export interface ContainedLaunch {
  command: string;
  args: string[];
  /** The server's own exit, from the exit of the process spawned. */
  exit(code: number | null, signal: NodeJS.Signals | null): { code: number | null; signal: NodeJS.Signals | null };
}

/**
 * How to spawn `command args` under the run's containment. In a namespace the server's death by
 * signal N reaches us as the shell's exit code 128+N, read back as that signal (a server that
 * exits with such a code itself is then reported as killed by it). A command that cannot be found
 * or executed is spawned as it is, so that Node reports it as always: nothing runs to contain.
 */
export function containedLaunch(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string | undefined): ContainedLaunch {
  const plain: ContainedLaunch = { command, args, exit: (code, signal) => ({ code, signal }) };
  containment();
  if (!probed?.unshare) return plain;
  const file = findExecutable(command, env.PATH, cwd ?? process.cwd());
  if (!file) return plain;
  return {
    command: probed.unshare,
    args: [...UNSHARE_ARGS, '/bin/sh', '-c', NAMESPACE_INIT, 'sh', env.PWD === undefined ? 'drop' : 'keep', file, ...args],
    exit: (code, signal) => {
      const killedBy = code !== null && code > 128 ? signalNames.get(code - 128) : undefined;
      return killedBy ? { code: null, signal: killedBy } : { code, signal };
    },
  };
}
