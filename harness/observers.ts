import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fixturesDir } from './paths.js';
import { privateCodexHome } from './real-codex.js';

/** Single-quotes a string for POSIX sh. */
export function shellQuote(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

export interface Launch {
  id: string;
  /** Which fake launcher ran: "a" (the one sent by default) or "b" (the second). */
  launcher: string;
  argv: string[];
  /** True for Codex's own capability probe (`sandbox --sandbox-state-json {} --help`). */
  isCapabilityProbe: boolean;
}
/** One execution of the probe (each execution leaves its own record; none overwrites another). */
export interface ProbeRun {
  nonce: string;
  /** The launch it ran under; empty when it ran without the fake launcher. */
  launchId: string;
  cwd: string;
  pid: string;
  /** How it was invoked ($0): the probe path, or one of its everyday names. */
  invoked: string;
  /**
   * 'stdout' when it could not leave its record (inside the real sandbox, under a state that
   * forbids the write) and the record is its stdout line, as the launcher kept it outside the sandbox.
   */
  via?: 'stdout';
}
/** The head of what a launch printed, as the launcher kept it (fixtures/observers/codex-launcher.sh). */
export interface Printed {
  stdout: string;
  stderr: string;
  /** False when the launcher kept nothing of it: not a launch of a control (ScenarioObservers.keepingOutput), nor under --codex. */
  kept?: boolean;
}
export interface TrapCall {
  trap: string;
  argv: string[];
}

/** The names of the executables the suite hands out as launchers, as they appear in launch ids. */
export type LauncherName = 'a' | 'b' | 'broken';

/** Everyday command names the probe is also installed under (EXEC-1: no command shape is exempt). */
export const EVERYDAY_NAMES = ['echo', 'cat', 'ls', 'git', 'pwd', 'true'] as const;
export type EverydayName = (typeof EVERYDAY_NAMES)[number];
export interface Observations {
  launches: Launch[];
  probeRuns: ProbeRun[];
  trapCalls: TrapCall[];
}

type ObservedRecord = { kind: 'launch'; launch: Launch } | { kind: 'trap'; call: TrapCall } | { kind: 'probe'; run: ProbeRun };

/** What one record file of the log or marker directory says; undefined for a probe record created but not written yet. */
function recordOf(name: string, text: string): ObservedRecord | undefined {
  if (name.startsWith('launch-') && name.endsWith('.argv')) {
    const argv = decodeArgv(text);
    const isCapabilityProbe = JSON.stringify(argv) === JSON.stringify(CAPABILITY_PROBE);
    const id = name.slice(0, -'.argv'.length);
    return { kind: 'launch', launch: { id, launcher: id.split('-').at(-1) ?? '', argv, isCapabilityProbe } };
  }
  if (name.startsWith('trap.')) return { kind: 'trap', call: { trap: name.split('.')[1] ?? '', argv: decodeArgv(text) } };
  // Created but not written yet (the probe makes it, then writes it in one write), or never
  // written (the probe was killed in between): not a record, for every reader (a wait goes on
  // waiting; a judge never takes it for a run outside any launch).
  if (text === '') return undefined;
  const fields = Object.fromEntries(text.split('\n').map((line) => [line.split('=')[0], line.slice(line.indexOf('=') + 1)]));
  return {
    kind: 'probe',
    run: { nonce: name.split('.')[1] ?? '', launchId: fields.launch ?? '', cwd: fields.cwd ?? '', pid: fields.pid ?? '', invoked: fields.invoked ?? '' },
  };
}

const templates = new Map<string, Promise<string>>();
function template(name: string): Promise<string> {
  let text = templates.get(name);
  if (!text) {
    text = readFile(join(fixturesDir(), 'observers', name), 'utf8');
    templates.set(name, text);
  }
  return text;
}

const RECORD_LAUNCH = '@@RECORD_LAUNCH@@\n';

async function install(path: string, templateName: string, values: Record<string, string>): Promise<string> {
  let text = await template(templateName);
  // The launchers share how they record a launch, pasted in: sourcing it would cost each launch a read.
  if (text.includes(RECORD_LAUNCH)) text = text.replace(RECORD_LAUNCH, await template('record-launch.sh'));
  for (const [key, value] of Object.entries(values)) text = text.replaceAll(`@@${key}@@`, shellQuote(value));
  await writeFile(path, text, { mode: 0o755 });
  return path;
}

/** How much of each stream of a launch the suite reads (the launcher keeps at most 4 KB). */
const PRINTED_HEAD_BYTES = 2048;

/** The probe runs a launch's stdout shows that left no record of their own (probe.sh's "ok <nonce> <launch> unrecorded"). */
export function unrecordedProbeLines(stdout: string, launchId: string): ProbeRun[] {
  const runs: ProbeRun[] = [];
  for (const line of stdout.split('\n')) {
    const match = /^ok ([0-9a-f]{12}) (\S+) unrecorded$/.exec(line);
    if (match && match[2] === launchId) runs.push({ nonce: match[1]!, launchId, cwd: '', pid: '', invoked: '', via: 'stdout' });
  }
  return runs;
}

const decodeArgv = (raw: string): string[] => (raw === '' ? [] : raw.replace(/\0$/, '').split('\0'));

/** The directory in the workspace where probes leave markers when they run in the real sandbox. */
export const MARKER_DIR_NAME = 'mcp-conformance-markers';

/** What the enforcement probe reported: from its marker file, or from its stdout line. */
export interface EnforcementRun {
  nonce: string;
  launchId: string;
  cwd: string;
  action: string;
  /** done | refused | exiting | unknown-action */
  result: string;
  detail: string;
  source: 'marker' | 'stdout';
}

const CAPABILITY_PROBE = ['sandbox', '--sandbox-state-json', '{}', '--help'];

/**
 * The observers of one scenario, each in the scenario's own directory: the fake launcher, the
 * PATH trap, named traps, the probe, and a workspace. Every script has the log directory
 * baked in, so it records even when the server strips the environment.
 */
export class ScenarioObservers {
  private constructor(
    readonly dir: string,
    readonly logDir: string,
    readonly launcherPath: string,
    readonly pathTrapDir: string,
    readonly probePath: string,
    readonly workspaceDir: string,
    readonly sessionShellPath: string,
    /**
     * The state's `codexLinuxSandboxExe`: a helper path under a CODEX_HOME of its own
     * (`codex-home/tmp/arg0/<id>/codex-linux-sandbox`), as Codex normally sends it, distinct from
     * the launcher. A trap for anything but the real `codex sandbox` (fixtures/observers/linux-sandbox-helper.sh).
     */
    readonly linuxSandboxHelper: string,
    private readonly realCodex: string,
    /**
     * Where probes leave their markers. With a real Codex the probe runs inside the real sandbox,
     * which only lets it write inside the state's writable roots: the markers then go to a
     * directory inside the workspace (the state's cwd, writable under the default state). The
     * launcher and the traps run outside any sandbox and keep writing to `logDir`, which the
     * sandboxed command cannot reach, so it cannot forge a launch record.
     */
    readonly markerDir: string = logDir,
    /** The private CODEX_HOME the real codex runs with (empty without a real Codex). */
    private readonly codexHome: string = '',
  ) {}

  /** Controls in flight (keepingOutput). */
  private keeping = 0;

  /** A second fake launcher at another path, same log: for "the launcher changed" scenarios. */
  secondLauncher(): Promise<string> {
    this.launcherB ??= (async () => {
      const dir = join(this.dir, 'launcher-b');
      await mkdir(dir, { recursive: true });
      const path = await install(join(dir, 'codex'), 'codex-launcher.sh', {
        LOG_DIR: this.logDir,
        REAL_CODEX: this.realCodex,
        CODEX_HOME: this.codexHome,
        LAUNCHER_NAME: 'b',
      });
      this.launcherNames.set(path, 'b');
      return path;
    })();
    return this.launcherB;
  }
  private launcherB?: Promise<string>;

  /** A session shell that first runs the probe with `nonce`: the worker of an open that must run nothing, so that one started anyway shows. */
  sessionShellRunningProbe(nonce: string): Promise<string> {
    return install(join(this.dir, `session-shell-${nonce}`), 'session-shell.sh', { NONCE: nonce, PROBE: this.probePath });
  }

  /** A launcher that exists and is executable but fails like a sandbox that cannot be set up. */
  brokenLauncher(): Promise<string> {
    this.launcherBroken ??= (async () => {
      const dir = join(this.dir, 'launcher-broken');
      await mkdir(dir, { recursive: true });
      const path = await install(join(dir, 'codex'), 'codex-broken.sh', { LOG_DIR: this.logDir });
      this.launcherNames.set(path, 'broken');
      return path;
    })();
    return this.launcherBroken;
  }
  private launcherBroken?: Promise<string>;

  /** Which of the suite's launchers lives at this path, if any. */
  launcherName(path: string): LauncherName | undefined {
    return this.launcherNames.get(path);
  }
  private readonly launcherNames = new Map<string, LauncherName>();

  static async create(dir: string, options: { realCodex?: string } = {}): Promise<ScenarioObservers> {
    const logDir = join(dir, 'log');
    const pathTrapDir = join(dir, 'path');
    const workspaceDir = join(dir, 'work space');
    const markerDir = options.realCodex ? join(workspaceDir, MARKER_DIR_NAME) : logDir;
    // The fake launcher's HOME for the commands it runs (made here: one mkdir fewer per launch).
    await Promise.all([logDir, pathTrapDir, workspaceDir, markerDir, join(dir, 'launcher'), join(dir, 'home')].map((d) => mkdir(d, { recursive: true })));
    const codexHome = options.realCodex ? privateCodexHome(dir) : '';
    const helperDir = join(dir, 'codex-home', 'tmp', 'arg0', `codex-arg0${randomBytes(3).toString('hex')}`);
    // The real Codex serves its helper's calls only when invoked under the helper's name (argv[0]).
    const realHelper = options.realCodex ? join(helperDir, 'real', 'codex-linux-sandbox') : '';
    await mkdir(options.realCodex ? join(helperDir, 'real') : helperDir, { recursive: true });
    if (options.realCodex) await symlink(options.realCodex, realHelper);
    const [launcherPath, , probePath, sessionShellPath, linuxSandboxHelper] = await Promise.all([
      install(join(dir, 'launcher', 'codex'), 'codex-launcher.sh', {
        LOG_DIR: logDir,
        REAL_CODEX: options.realCodex ?? '',
        CODEX_HOME: codexHome,
        LAUNCHER_NAME: 'a',
      }),
      install(join(pathTrapDir, 'codex'), 'trap.sh', { LOG_DIR: logDir, TRAP_NAME: 'path-search' }),
      install(join(dir, 'task'), 'probe.sh', { LOG_DIR: markerDir }),
      install(join(dir, 'session-shell'), 'session-shell.sh', { NONCE: '', PROBE: join(dir, 'task') }),
      install(join(helperDir, 'codex-linux-sandbox'), 'linux-sandbox-helper.sh', { LOG_DIR: logDir, REAL_HELPER: realHelper }),
    ]);
    const observers = new ScenarioObservers(
      dir,
      logDir,
      launcherPath,
      pathTrapDir,
      probePath,
      workspaceDir,
      sessionShellPath,
      linuxSandboxHelper,
      options.realCodex ?? '',
      markerDir,
      codexHome,
    );
    observers.launcherNames.set(launcherPath, 'a');
    return observers;
  }

  /**
   * Installs an executable trap named `name` (as `<dir>/<file>`, by default in a directory of its
   * own) and returns its absolute path.
   */
  async trap(name: string, where: { dir?: string; file?: string } = {}): Promise<string> {
    const dir = where.dir ?? join(this.dir, `trap-${name}`);
    await mkdir(dir, { recursive: true });
    return install(join(dir, where.file ?? 'codex'), 'trap.sh', { LOG_DIR: this.logDir, TRAP_NAME: name });
  }

  /** Another workspace directory, so that a state can be told apart by its sandboxCwd alone. */
  async workspaceVariant(name: string): Promise<string> {
    const dir = join(this.dir, `work space ${name}`);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /** A directory inside the workspace (for commands that `cd` into one), created once. */
  async workspaceSubdir(name: string): Promise<string> {
    const dir = join(this.workspaceDir, name);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /** An absolute launcher path where no file exists. */
  missingLauncherPath(): string {
    return join(this.dir, 'missing', 'codex');
  }

  newNonce(): string {
    return randomBytes(6).toString('hex');
  }

  /** The probe command, with arguments that a sloppy join-and-split would not keep intact. */
  probeCommand(nonce: string): string[] {
    return [this.probePath, nonce, 'two words', "it's"];
  }

  /** The probe installed (once) under an everyday name, e.g. `<dir>/bin/git`: absolute path. */
  everydayProbe(name: EverydayName): Promise<string> {
    let path = this.everyday.get(name);
    if (!path) {
      path = mkdir(join(this.dir, 'bin'), { recursive: true }).then(() => install(join(this.dir, 'bin', name), 'probe.sh', { LOG_DIR: this.markerDir }));
      this.everyday.set(name, path);
    }
    return path;
  }
  private readonly everyday = new Map<string, Promise<string>>();

  /** Installs (once) the enforcement probe of the real-Codex tier and returns its path. */
  enforcementProbe(): Promise<string> {
    this.enforcePath ??= install(join(this.dir, 'enforce'), 'enforce.sh', { LOG_DIR: this.markerDir, NODE: process.execPath });
    return this.enforcePath;
  }
  private enforcePath?: Promise<string>;

  /** What the enforcement probe with this nonce recorded in its marker, if it left one. */
  async readEnforcement(nonce: string): Promise<EnforcementRun | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.markerDir, `enforce.${nonce}.ran`), 'utf8');
    } catch {
      return undefined;
    }
    const fields = Object.fromEntries(text.split('\n').map((line) => [line.split('=')[0], line.slice(line.indexOf('=') + 1)]));
    return {
      nonce,
      launchId: fields.launch ?? '',
      cwd: fields.cwd ?? '',
      action: fields.action ?? '',
      result: fields.result ?? '',
      detail: fields.detail ?? '',
      source: 'marker',
    };
  }

  /** The head of what a launch printed (empty when it printed nothing; not kept when the launcher kept nothing of it, or it is not one of ours). */
  async printed(launchId: string): Promise<Printed> {
    const head = async (stream: 'stdout' | 'stderr'): Promise<string | undefined> => {
      if (!/^launch-[\w-]+$/.test(launchId)) return undefined;
      try {
        const file = await open(join(this.logDir, `${launchId}.${stream}`), 'r');
        try {
          const buffer = Buffer.alloc(PRINTED_HEAD_BYTES);
          const { bytesRead } = await file.read(buffer, 0, PRINTED_HEAD_BYTES, 0);
          return buffer.subarray(0, bytesRead).toString('utf8');
        } finally {
          await file.close();
        }
      } catch {
        return undefined;
      }
    };
    const [stdout, stderr] = await Promise.all([head('stdout'), head('stderr')]);
    return { stdout: stdout ?? '', stderr: stderr ?? '', kept: stdout !== undefined || stderr !== undefined };
  }

  /**
   * Runs `send` (a control's call and its wait) with the launcher keeping what each launch prints
   * (its keep-output marker in the log directory, there while any such call is in flight): a
   * control that launched but never ran its command is then told by what its launch printed.
   * Other launches keep nothing (two tees and two fifos each would double a launch's cost).
   */
  async keepingOutput<T>(send: () => Promise<T>): Promise<T> {
    const marker = join(this.logDir, 'keep-output');
    if (this.keeping++ === 0) await writeFile(marker, '');
    try {
      return await send();
    } finally {
      if (--this.keeping === 0) await rm(marker, { force: true });
    }
  }

  /** Records read whole, by path: each is written once, and read() is polled. */
  private readonly records = new Map<string, ObservedRecord>();

  async read(): Promise<Observations> {
    const dirs = [...new Set([this.logDir, this.markerDir])];
    // Records only: never the launcher's fifos (opening one waits for a writer) nor its output heads.
    const isRecord = (name: string) =>
      (name.startsWith('launch-') && name.endsWith('.argv')) || name.startsWith('trap.') || (name.startsWith('probe.') && name.endsWith('.ran'));
    const listed = await Promise.all(dirs.map(async (dir) => (await readdir(dir)).map((name) => ({ dir, name }))));
    const names = listed.flat().filter(({ name }) => isRecord(name));
    const observations: Observations = { launches: [], probeRuns: [], trapCalls: [] };
    for (const { dir, name } of names) {
      const path = join(dir, name);
      let record = this.records.get(path);
      if (!record) {
        // Read at once, not through the thread pool: records are a few hundred bytes, polled while
        // a call is awaited, and an async read's open, fstat, read and close cost more than the read.
        const text = readFileSync(path, 'utf8');
        record = recordOf(name, text);
        // A record is written once, in one write: kept once whole (an argv ends with its NUL).
        if (record && (record.kind === 'probe' || (text.endsWith('\0') && text.length < 4096))) this.records.set(path, record);
      }
      if (record?.kind === 'launch') observations.launches.push(record.launch);
      else if (record?.kind === 'trap') observations.trapCalls.push(record.call);
      else if (record?.kind === 'probe') observations.probeRuns.push(record.run);
    }
    observations.launches.sort((a, b) => a.id.localeCompare(b.id));
    if (this.realCodex) observations.probeRuns.push(...(await this.unrecordedRuns(observations)));
    return observations;
  }

  /**
   * Inside the real sandbox a state may forbid the probe's record (the marker directory is not
   * among its writable roots): the probe then says so on stdout, and its line, as the launcher kept
   * it outside the sandbox, ties the run to the launch whose output it is in.
   */
  private async unrecordedRuns(observations: Observations): Promise<ProbeRun[]> {
    const runs = await Promise.all(
      observations.launches.filter((l) => !l.isCapabilityProbe).map(async (launch) => unrecordedProbeLines((await this.printed(launch.id)).stdout, launch.id)),
    );
    return runs.flat();
  }

  /** The path of each of the suite's launchers by name (those installed so far). */
  launcherPaths(): Map<string, LauncherName> {
    return new Map(this.launcherNames);
  }
}
