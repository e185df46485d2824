import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pidAlive } from './proc.js';

/**
 * Kernel containment: every server in a cgroup (v2) of its own, below one cgroup per CLI process.
 * Writing `cgroup.kill` ends every process in a cgroup, whatever it did to leave the server's
 * tree (`setsid`, a double fork, `env -i`): cgroup membership is inherited on fork and only root
 * can move a process out. Unlike a PID namespace, the server sees nothing unusual: its own PID
 * among the host's (so concurrent servers never share pid-named files), its real parent, the
 * host's /proc, exactly the environment and argv it was given. Where cgroup v2 is not writable,
 * the registry's sweep is all there is.
 */

export interface Containment {
  /** `cgroup`: each server in a cgroup of its own; `sweep`: process groups and the process trees recorded while servers ran. */
  mechanism: 'cgroup' | 'sweep';
  detail: string;
}

/** `sweep` forces the fallback (for tests, or a host where cgroups misbehave). */
export const CONTAINMENT_ENV = 'MCP_SANDBOX_CONFORMANCE_CONTAINMENT';

/** Where the cgroup v2 hierarchy holds this process's own cgroup, from /proc/self/{cgroup,mountinfo}; undefined without one. */
export function ownCgroupDir(): string | undefined {
  let own: string | undefined;
  let mountinfo: string;
  try {
    own = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((line) => line.startsWith('0::'))
      ?.slice(3);
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return undefined;
  }
  if (own === undefined) return undefined;
  // id parent major:minor root mount-point options [optional...] - fstype source super-options
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!after?.startsWith('cgroup2 ')) continue;
    const fields = before!.split(' ');
    const unescape = (text: string) => text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
    const root = unescape(fields[3] ?? '/');
    const mountPoint = unescape(fields[4] ?? '');
    if (root !== '/' && own !== root && !own.startsWith(`${root}/`)) continue;
    return join(mountPoint, root === '/' ? own : own.slice(root.length));
  }
  return undefined;
}

/** This process's parent cgroup for its servers' cgroups: `tmp-<our pid>-<random>` (neutral: a server sees it in /proc/self/cgroup). */
const PARENT_NAME = /^tmp-(\d+)-[0-9a-f]+$/;

let probed: (Containment & { parent?: string; own?: string }) | undefined;

/** The containment in force for this process's runs; probed once (two cgroups made, this process moved into one and back: about 1 ms). */
export function containment(): Containment {
  probed ??= probeContainment();
  return { mechanism: probed.mechanism, detail: probed.detail };
}

function probeContainment(): Containment & { parent?: string; own?: string } {
  const fallback = (why: string): Containment => ({
    mechanism: 'sweep',
    detail: `${why}; only process groups and the process trees recorded while servers ran (every 100 ms), which miss a daemon that leaves its session between two looks`,
  });
  if (process.env[CONTAINMENT_ENV] === 'sweep') return fallback(`${CONTAINMENT_ENV}=sweep`);
  if (process.platform !== 'linux') return fallback(`no cgroups on ${process.platform}`);
  const own = ownCgroupDir();
  if (!own) return fallback('no cgroup v2 hierarchy mounted');
  removeStaleParents(own);
  const parent = join(own, `tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    mkdirSync(parent);
  } catch (error) {
    return fallback(`cannot create a cgroup in ${own} (${(error as NodeJS.ErrnoException).code}; it needs root or a delegated cgroup)`);
  }
  // The root cgroup has no cgroup.kill: a cgroup of our own tells.
  if (!existsSync(join(parent, 'cgroup.kill'))) {
    removeCgroupTreeNow(parent, false);
    return fallback('cgroup v2 without cgroup.kill (it needs Linux 5.14 or later)');
  }
  const probe = join(parent, 'probe');
  let moved = false;
  try {
    mkdirSync(probe);
    moved = inCgroup(probe, own, () => true);
  } catch {
    // reported below
  }
  removeCgroupTreeNow(parent, false);
  if (!moved) return fallback(`cannot move a process between cgroups below ${own} (it needs root or a delegated cgroup)`);
  return {
    mechanism: 'cgroup',
    detail:
      'each server in a cgroup of its own (cgroup v2); cgroup.kill ends everything a server started, wherever it moved, when the server is stopped and when the run ends',
    parent,
    own,
  };
}

/**
 * Runs `fn` (a synchronous spawn) with this process in `cgroup`, then moves it back to `home`: the
 * child is born in the cgroup, so nothing it does is ever outside it, and nothing stands between
 * it and us (no wrapper that would change its environment, argv or exit status). JavaScript runs
 * on one thread and Node's spawn forks before it returns, so no other spawn of ours can happen
 * in between. Migration moves all of this process's threads; with no controllers enabled it
 * changes nothing for them.
 */
function inCgroup<T>(cgroup: string, home: string, fn: () => T): T {
  writeFileSync(join(cgroup, 'cgroup.procs'), String(process.pid));
  try {
    return fn();
  } finally {
    writeFileSync(join(home, 'cgroup.procs'), String(process.pid));
  }
}

/** Spawns (`spawnNow`, synchronous) a server into `cgroup` (from newServerCgroup). */
export function spawnInCgroup<T>(cgroup: string, spawnNow: () => T): T {
  return inCgroup(cgroup, probed!.own!, spawnNow);
}

/** Empty parent cgroups left by CLI processes that died without cleaning up (SIGKILL): rmdir fails on any that still holds a process. */
function removeStaleParents(own: string): void {
  let names: string[];
  try {
    names = readdirSync(own);
  } catch {
    return;
  }
  for (const name of names) {
    const owner = PARENT_NAME.exec(name)?.[1];
    if (owner !== undefined && !pidAlive(Number(owner))) removeCgroupTreeNow(join(own, name), false);
  }
}

let serverCgroups = 0;
/** Server cgroups not yet removed: the parent exists while there are any (a CLI killed between runs leaves nothing behind). */
const liveServerCgroups = new Set<string>();

/** A new cgroup for one server, or undefined when containment is the sweep. */
export function newServerCgroup(): string | undefined {
  containment();
  if (!probed?.parent) return undefined;
  if (liveServerCgroups.size === 0) mkdirSync(probed.parent, { recursive: true });
  const dir = join(probed.parent, String(++serverCgroups));
  mkdirSync(dir);
  liveServerCgroups.add(dir);
  return dir;
}

/** The parent of every server cgroup of this process (for the signal handlers), if any. */
export const serverCgroupParent = (): string | undefined => probed?.parent;

/** SIGKILLs every process in the cgroup and its descendants, at once (the kernel does it; no race with forks). */
export function killCgroup(dir: string): void {
  // Never while this process is in it (were a move back ever to fail).
  const mine = ownCgroupDir();
  if (mine === undefined || mine === dir || mine.startsWith(`${dir}/`)) return;
  try {
    writeFileSync(join(dir, 'cgroup.kill'), '1');
  } catch {
    // gone
  }
}

/** True while a process is in the cgroup or below it. */
export function cgroupPopulated(dir: string): boolean {
  try {
    return /^populated 1$/m.test(readFileSync(join(dir, 'cgroup.events'), 'utf8'));
  } catch {
    return false;
  }
}

/** The processes directly in the cgroup (none when it is gone). */
export function cgroupMembers(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Removes a cgroup: only an empty one can go; true when it is gone. */
function removeCgroup(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

const sleepNow = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Kills (unless `kill` is false) and removes a cgroup and the cgroups below it, synchronously; bounded at about 1 s. */
function removeCgroupTreeNow(dir: string, kill = true): void {
  if (kill) killCgroup(dir); // the whole subtree
  removeTreeNow(dir, kill ? Date.now() + 1000 : 0);
}

/** Removes the cgroups of a tree, leaves first, retrying until `until` while the killed leave. */
function removeTreeNow(dir: string, until: number): void {
  let children: string[];
  try {
    children = readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(dir, entry.name));
  } catch {
    return; // gone
  }
  for (const child of children) removeTreeNow(child, until);
  while (!removeCgroup(dir) && Date.now() < until) sleepNow(2);
}

/** Kills what is left in a server's cgroup and removes it, waiting (at most 1 s) for the killed to leave; the parent goes with the last one. */
export async function removeServerCgroup(dir: string): Promise<void> {
  killCgroup(dir);
  for (let waited = 0; !removeCgroup(dir) && waited < 1000; waited += 2) await new Promise((resolve) => setTimeout(resolve, 2));
  forgetServerCgroup(dir);
}

/** The synchronous removeServerCgroup, for the end of a run and the signal handlers. */
export function removeServerCgroupNow(dir: string): void {
  removeCgroupTreeNow(dir);
  forgetServerCgroup(dir);
}

function forgetServerCgroup(dir: string): void {
  if (liveServerCgroups.delete(dir) && liveServerCgroups.size === 0 && probed?.parent) removeCgroup(probed.parent);
}
