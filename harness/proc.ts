import { closeSync, existsSync, openSync, readSync, readdirSync } from 'node:fs';

/**
 * What /proc says about processes: parent links, process groups, liveness, start times. Linux
 * only; elsewhere the answers fall back to kill(pid, 0) or are empty.
 */

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
  /** Clock ticks after boot when the process started: with the pid, it names one process, whatever reuses the pid later. */
  startTime: number;
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
function readProc(path: string): Buffer | undefined {
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

export function readStat(pid: number): ProcInfo | undefined {
  try {
    const raw = readProc(`/proc/${pid}/stat`);
    if (!raw) return undefined;
    const text = raw.toString('latin1');
    // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
    // stime cutime cstime priority nice num_threads itrealvalue starttime ...; comm may hold
    // spaces and parentheses.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { pid, state: fields[0] ?? '?', ppid: Number(fields[1]), pgid: Number(fields[2]), startTime: Number(fields[19]) };
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

export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  if (pgid <= 1 || pgid === process.pid) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

export function signalPid(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 1 || pid === process.pid) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** True while `pid` runs (a zombie does not). */
export function pidAlive(pid: number): boolean {
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
function groupAlive(pgid: number): boolean {
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
