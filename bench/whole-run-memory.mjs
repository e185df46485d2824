// The whole run's peak memory: a command and every process it starts (for the CLI: its servers,
// their launchers and the probes), however they detach (setsid, double forks, cgroups of their own).
//
// The command is born in a fresh memory cgroup of its own, and everything it starts inherits it:
//   cgroup v2   memory.peak, where the memory controller is on the unified hierarchy (the CLI puts
//               its servers' cgroups below its own cgroup, so they are counted: the peak is
//               hierarchical)
//   cgroup v1   memory.max_usage_in_bytes of a new cgroup in the memory hierarchy (the CLI's server
//               cgroups are on the v2 hierarchy and do not move anything out of it)
// That figure is the kernel's own charge: anonymous memory (heaps, stacks), kernel memory (pipe
// and socket buffers) and the page cache of files written during the run; not the pages of
// binaries and libraries already cached by others, which every process shares. It is read once,
// after the run: it misses nothing between two samples.
//
// Beside it, every `intervalMs`, the processes of the run (the cgroup's members, or without a
// cgroup the command's process tree) are sampled from /proc/PID/statm: the peak of their summed
// RSS (which counts shared pages, e.g. node's own binary, once per process), of their summed
// anonymous RSS (RSS less the file-backed and shared pages: what each process holds of its
// own), and of how many there are at once; with `perProcess`, each process's own peaks.
// Without a writable memory cgroup (not root, not Linux) the sampled figures are all there is.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PAGE_KB = 4; // x86-64 and arm64 Linux (statm counts pages)
const MB = 1024 * 1024;

const read = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** /proc/self/mountinfo's cgroup mounts: { version: 1 | 2, mountPoint, root, options }. */
function cgroupMounts() {
  const mounts = [];
  for (const line of (read('/proc/self/mountinfo') ?? '').split('\n')) {
    const [before, after] = line.split(' - ');
    if (!after) continue;
    const [fstype, , superOptions = ''] = after.split(' ');
    if (fstype !== 'cgroup' && fstype !== 'cgroup2') continue;
    const fields = before.split(' ');
    const unescape = (text) => text.replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(parseInt(octal, 8)));
    mounts.push({
      version: fstype === 'cgroup2' ? 2 : 1,
      root: unescape(fields[3] ?? '/'),
      mountPoint: unescape(fields[4] ?? ''),
      options: superOptions.split(','),
    });
  }
  return mounts;
}

/** The directory of this process's cgroup in `mount`, from /proc/self/cgroup's line for it. */
function ownDir(mount, cgroupLines) {
  const line = cgroupLines.find((l) => {
    const [, controllers] = l.split(':');
    return mount.version === 2 ? l.startsWith('0::') : controllers?.split(',').includes('memory');
  });
  if (!line) return undefined;
  const own = line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1);
  if (mount.root !== '/' && own !== mount.root && !own.startsWith(`${mount.root}/`)) return undefined;
  return join(mount.mountPoint, mount.root === '/' ? own : own.slice(mount.root.length));
}

/**
 * A new memory cgroup below this process's own, or undefined: { dir, mechanism, peakBytes() }.
 * v2 first (memory.peak needs Linux 5.19), then v1.
 */
export function newMemoryCgroup() {
  if (process.platform !== 'linux') return undefined;
  const lines = (read('/proc/self/cgroup') ?? '').split('\n').filter(Boolean);
  const mounts = cgroupMounts();
  const candidates = [
    ...mounts.filter((m) => m.version === 2).map((m) => ({ mount: m, file: 'memory.peak', mechanism: 'cgroup v2 memory.peak' })),
    ...mounts
      .filter((m) => m.version === 1 && m.options.includes('memory'))
      .map((m) => ({ mount: m, file: 'memory.max_usage_in_bytes', mechanism: 'cgroup v1 memory.max_usage_in_bytes' })),
  ];
  for (const { mount, file, mechanism } of candidates) {
    const own = ownDir(mount, lines);
    if (!own) continue;
    const dir = join(own, `msc-bench-memory-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      mkdirSync(dir);
    } catch {
      continue;
    }
    if (existsSync(join(dir, file))) return { dir, mechanism, peakBytes: () => Number(read(join(dir, file))) };
    removeCgroup(dir);
  }
  return undefined;
}

/** Removes a (v2: with the cgroups below it) cgroup once its processes are gone; waits up to 2 s. */
function removeCgroup(dir) {
  let children;
  try {
    children = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory());
  } catch {
    return;
  }
  for (const child of children) removeCgroup(join(dir, child.name));
  for (const until = Date.now() + 2000; ;) {
    try {
      rmdirSync(dir);
      return;
    } catch (error) {
      if (error.code === 'ENOENT' || Date.now() > until) return;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

/** Every process in the cgroup and the cgroups below it. */
function cgroupPids(dir) {
  const pids = (read(join(dir, 'cgroup.procs')) ?? '').split('\n').filter(Boolean).map(Number);
  let children = [];
  try {
    children = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory());
  } catch {
    // gone
  }
  for (const child of children) pids.push(...cgroupPids(join(dir, child.name)));
  return pids;
}

/** `root` and its descendants, from /proc/PID/stat's parent links (misses what detached). */
function treePids(root) {
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = read(`/proc/${name}/stat`);
    if (!stat) continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(Number(name));
  }
  const pids = [];
  for (const queue = [root]; queue.length;) {
    const pid = queue.shift();
    pids.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return pids;
}

/**
 * Runs `command args` to its end, measuring the whole run's peak memory (see the top of this file).
 * Resolves { code, signal, ms, stdout, stderr, mechanism, peakMb (the kernel's figure, undefined
 * without a memory cgroup), sampled: { peakRssMb, peakAnonMb, peakProcesses, samples, atPeakAnon
 * (with perProcess: { ms, processes: [{ pid, anonMb }] } at the sampled peak) }, leftBehind (processes
 * of the run still there 2 s after the command ended, killed),
 * processes (with perProcess: [{ pid, command, peakRssMb, peakAnonMb, firstMs, lastMs }]) }.
 * With perProcess, `onSample(ms, [{ pid, anonMb }])` sees every sample (a timeline).
 */
export function measureWholeRun(command, args, { env = process.env, cwd, intervalMs = 50, perProcess = false, onSample } = {}) {
  const cgroup = newMemoryCgroup();
  const started = performance.now();
  // Born in the cgroup: the shell joins it, then becomes the command (nothing between it and its children).
  const child = cgroup
    ? spawn('/bin/sh', ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup.dir, command, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = [];
  const err = [];
  child.stdout.on('data', (chunk) => out.push(chunk));
  child.stderr.on('data', (chunk) => err.push(chunk));

  const sampled = { peakRssMb: 0, peakAnonMb: 0, peakProcesses: 0, samples: 0 };
  const records = new Map();
  const sample = () => {
    const pids = cgroup ? cgroupPids(cgroup.dir) : child.pid ? treePids(child.pid) : [];
    let rss = 0;
    let anon = 0;
    let count = 0;
    const now = performance.now() - started;
    const here = [];
    for (const pid of pids) {
      const statm = read(`/proc/${pid}/statm`);
      if (!statm) continue;
      const [, resident, shared] = statm.split(' ').map(Number);
      const rssKb = resident * PAGE_KB;
      const anonKb = (resident - shared) * PAGE_KB;
      rss += rssKb;
      anon += anonKb;
      count++;
      if (perProcess) here.push({ pid, anonMb: anonKb / 1024 });
      if (perProcess) {
        const stat = read(`/proc/${pid}/stat`);
        const key = `${pid}:${stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] : '?'}`;
        let record = records.get(key);
        if (!record) records.set(key, (record = { pid, command: '', peakRssMb: 0, peakAnonMb: 0, firstMs: now, lastMs: now }));
        // Read again while it is young: a child shows its parent's command line until it execs.
        if (now - record.firstMs < 500) record.command = (read(`/proc/${pid}/cmdline`) ?? '').split('\0').join(' ').trim();
        record.peakRssMb = Math.max(record.peakRssMb, rssKb / 1024);
        record.peakAnonMb = Math.max(record.peakAnonMb, anonKb / 1024);
        record.lastMs = now;
      }
    }
    sampled.samples++;
    sampled.peakRssMb = Math.max(sampled.peakRssMb, rss / 1024);
    if (perProcess) onSample?.(now, here);
    if (anon / 1024 > sampled.peakAnonMb) {
      sampled.peakAnonMb = anon / 1024;
      if (perProcess) sampled.atPeakAnon = { ms: now, processes: here };
    }
    sampled.peakProcesses = Math.max(sampled.peakProcesses, count);
  };
  const timer = setInterval(sample, intervalMs);

  return new Promise((resolve, reject) => {
    child.on('error', (error) => {
      clearInterval(timer);
      if (cgroup) removeCgroup(cgroup.dir);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearInterval(timer);
      const ms = performance.now() - started;
      let peakMb;
      let leftBehind = 0;
      if (cgroup) {
        // Whatever the command left running is part of the run: the figure is read once it is gone
        // (after 2 s, what is still there is killed and counted: the run should have ended it).
        for (const until = Date.now() + 2000; cgroupPids(cgroup.dir).length && Date.now() < until;)
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
        for (const pid of cgroupPids(cgroup.dir)) {
          leftBehind++;
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone meanwhile
          }
        }
        peakMb = cgroup.peakBytes() / MB;
        removeCgroup(cgroup.dir);
      }
      resolve({
        code,
        signal,
        ms,
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
        mechanism: cgroup?.mechanism ?? `sampled every ${intervalMs} ms (no writable memory cgroup)`,
        peakMb,
        sampled,
        leftBehind,
        ...(perProcess ? { processes: [...records.values()] } : {}),
      });
    });
  });
}

// ---- the bench's figure: a default run against chatty.mjs with large results ----

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const chatty = join(root, 'fixtures/servers/chatty.mjs');
const referenceConfig = join(root, 'fixtures/servers/mutant-base/mcp-sandbox-conformance.json');
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * One default run of the CLI (dist/cli/main.js: exploration on, default budget, seed and jobs)
 * over stdio and HTTP (--http-command, as test/bounded.test.ts runs it) against chatty.mjs with
 * `resultBytes` of build log in every tool result (0: the reference server as it is), measured by
 * measureWholeRun. Resolves its figures, exit code, the checks' verdicts (`id transport status`,
 * sorted, from its JSON report), and at the sampled peak how much the target's server processes
 * held (anonymous RSS) against the CLI and everything else it started.
 */
export async function chattyRunMemory(resultBytes, { scratch = tmpdir(), extraArgs = [] } = {}) {
  const size = resultBytes ? ['--result-bytes', String(resultBytes)] : [];
  const json = join(scratch, `memory-${process.pid}-${randomBytes(4).toString('hex')}.json`);
  const cli = join(root, 'dist/cli/main.js');
  const args = [
    cli,
    '--reporter',
    `json=${json}`,
    '--config',
    referenceConfig,
    '--http-command',
    [process.execPath, chatty, ...size, '--http', '--port', '{port}'].join(' '),
    ...extraArgs,
    '--',
    process.execPath,
    chatty,
    ...size,
  ];
  const run = await measureWholeRun(process.execPath, args, { env: { ...process.env, NO_COLOR: '1' }, cwd: scratch, perProcess: true });
  let verdicts;
  try {
    verdicts = JSON.parse(readFileSync(json, 'utf8'))
      .checks.map((c) => `${c.id} ${c.transport} ${c.status}`)
      .sort();
  } catch {
    verdicts = undefined;
  } finally {
    rmSync(json, { force: true });
  }
  // The server processes: chatty itself (not the CLI, whose arguments name it, nor the shell of --http-command).
  const isServer = (command) => command.startsWith(`${process.execPath} ${chatty}`);
  const commands = new Map(run.processes.map((p) => [p.pid, p.command]));
  const atPeak = run.sampled.atPeakAnon?.processes ?? [];
  const sum = (list) => list.reduce((total, p) => total + p.anonMb, 0);
  const servers = atPeak.filter((p) => isServer(commands.get(p.pid) ?? ''));
  const own = atPeak.filter((p) => (commands.get(p.pid) ?? '').startsWith(`${process.execPath} ${cli}`));
  return {
    code: run.code,
    ms: run.ms,
    mechanism: run.mechanism,
    peakMb: run.peakMb ?? run.sampled.peakAnonMb,
    sampled: run.sampled,
    atPeak: { serversMb: sum(servers), servers: servers.length, cliMb: sum(own), restMb: sum(atPeak) - sum(servers) - sum(own) },
    serverProcesses: run.processes.filter((p) => isServer(p.command)).length,
    leftBehind: run.leftBehind,
    verdicts,
    stderr: run.stderr,
  };
}

/** `runs` chattyRunMemory runs for each size (alternating), and a line for each: median peak, the runs', the split at the peak, exit codes, verdicts against the ordinary server's (when 0 is among the sizes). */
export async function chattyMemoryLines(sizes, runs, options = {}) {
  const results = new Map(sizes.map((size) => [size, []]));
  for (let i = 0; i < runs; i++) for (const size of sizes) results.get(size).push(await chattyRunMemory(size, options));
  const ordinary = results.get(0)?.[0]?.verdicts;
  const mb = (value) => `${value.toFixed(0)} MB`;
  return sizes.map((size) => {
    const list = results.get(size);
    const peak = median(list.map((r) => r.peakMb));
    const codes = [...new Set(list.map((r) => r.code))].join('/');
    const left = list.reduce((total, r) => total + r.leftBehind, 0);
    const same = (r) => r.verdicts && ordinary && r.verdicts.join('\n') === ordinary.join('\n');
    const verdicts = !list.every((r) => r.verdicts)
      ? 'NO REPORT'
      : ordinary && size !== 0
        ? list.every(same)
          ? `${list[0].verdicts.length} verdicts, the ordinary server's`
          : `verdicts DIFFER from the ordinary server's: ${list.map((r) => r.verdicts.filter((v) => !ordinary.includes(v)).join(', ')).join(' | ')}`
        : `${list[0].verdicts.length} verdicts`;
    const split = (r) => `servers ${mb(r.atPeak.serversMb)} in ${r.atPeak.servers}, CLI ${mb(r.atPeak.cliMb)}, rest ${mb(r.atPeak.restMb)}`;
    const at = list.find((r) => r.peakMb === peak) ?? list[0];
    return {
      size,
      peakMb: peak,
      line:
        `whole-run peak memory, CLI default run, chatty.mjs ${size ? `with ${size / 1e6} MB results` : 'as the reference (ordinary results)'}, stdio + HTTP: ` +
        `${mb(peak)} median   [${list.map((r) => mb(r.peakMb)).join(', ')}] (${list[0].mechanism}); exit ${codes}; ${verdicts}; ` +
        `sampled peak of anonymous RSS ${mb(median(list.map((r) => r.sampled.peakAnonMb)))} (${split(at)}), up to ${Math.max(...list.map((r) => r.sampled.peakProcesses))} processes at once, ` +
        `${median(list.map((r) => r.serverProcesses))} server processes, ${(median(list.map((r) => r.ms)) / 1000).toFixed(1)} s` +
        (left ? `; ${left} processes LEFT BEHIND (killed)` : ''),
    };
  });
}

// Run directly: only this figure (BENCH_MEMORY_RUNS, BENCH_MEMORY_RESULT_BYTES as in bench.mjs).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const sizes = (process.env.BENCH_MEMORY_RESULT_BYTES ?? '10000000').split(',').map(Number);
  const runs = Number(process.env.BENCH_MEMORY_RUNS ?? 3);
  for (const { line } of await chattyMemoryLines(sizes, runs)) console.log(line);
}
