import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants as fsConstants, existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path';
import { pidAlive } from './proc.js';

/**
 * Kernel containment: every server in a cgroup (v2) of its own, below one cgroup per CLI process.
 * Writing `cgroup.kill` ends every process in a cgroup, whatever it did to leave the server's
 * tree (`setsid`, a double fork, `env -i`): cgroup membership is inherited on fork and only root
 * can move a process out. Unlike a PID namespace, the server sees nothing unusual: its own PID
 * among the host's (so concurrent servers never share pid-named files), its real parent, the
 * host's /proc. Where cgroup v2 is not writable, the registry's sweep is all there is.
 */

export interface Containment {
  /** `cgroup`: each server in a cgroup of its own; `sweep`: process groups and the process trees recorded while servers ran. */
  mechanism: 'cgroup' | 'sweep';
  detail: string;
}

/** `sweep` forces the fallback (for tests, or a host where cgroups misbehave). */
export const CONTAINMENT_ENV = 'MCP_SANDBOX_CONFORMANCE_CONTAINMENT';

/**
 * Run by `/bin/sh` before the server: moves itself into the server's cgroup, then becomes the
 * server (exec keeps the pid), so nothing the server starts is ever outside the cgroup. Node's
 * spawn has no hook between fork and exec, and moving the server after spawn would race its
 * first fork.
 */
const ENTER_CGROUP = 'echo $$ > "$1" || exit 125; shift; exec "$@"';

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

let probed: (Containment & { parent?: string }) | undefined;

/** The containment in force for this process's runs; probed once (a cgroup made, one `sh` moved into it: about 3 ms). */
export function containment(): Containment {
  probed ??= probeContainment();
  return { mechanism: probed.mechanism, detail: probed.detail };
}

function probeContainment(): Containment & { parent?: string } {
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
  let moved: ReturnType<typeof spawnSync> | undefined;
  try {
    mkdirSync(probe);
    moved = spawnSync('/bin/sh', ['-c', ENTER_CGROUP, 'sh', join(probe, 'cgroup.procs'), '/bin/sh', '-c', 'exit 0'], { stdio: 'ignore', timeout: 5000 });
  } catch {
    // reported below
  }
  removeCgroupTreeNow(probe);
  removeCgroupTreeNow(parent);
  if (moved?.status !== 0) return fallback(`cannot move a process into a cgroup below ${own} (it needs root or a delegated cgroup)`);
  return {
    mechanism: 'cgroup',
    detail:
      'each server in a cgroup of its own (cgroup v2); cgroup.kill ends everything a server started, wherever it moved, when the server is stopped and when the run ends',
    parent,
  };
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

/**
 * How to spawn `command args` inside `cgroup`: through `/bin/sh`, which joins the cgroup and
 * execs the command in its place (same pid; exit codes and signals are the server's own). The
 * command is passed as given, so the server's argv[0] is what the caller named. A command that
 * cannot be found or executed is spawned as it is, so that Node reports it as always: nothing
 * runs to contain.
 */
export function launchInCgroup(
  cgroup: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string | undefined,
): { command: string; args: string[] } {
  const file = findExecutable(command, env.PATH, cwd ?? process.cwd());
  if (!file) return { command, args };
  // A name that begins with '-' would read as an option of exec.
  const given = command.startsWith('-') ? file : command;
  return { command: '/bin/sh', args: ['-c', ENTER_CGROUP, 'sh', join(cgroup, 'cgroup.procs'), given, ...args] };
}
