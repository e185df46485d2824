import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fixturesDir } from './paths.js';

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
export interface ProbeRun {
  nonce: string;
  /** The launch it ran under; empty when it ran without the fake launcher. */
  launchId: string;
  cwd: string;
}
export interface TrapCall {
  trap: string;
  argv: string[];
}
export interface Observations {
  launches: Launch[];
  probeRuns: ProbeRun[];
  trapCalls: TrapCall[];
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

async function install(path: string, templateName: string, values: Record<string, string>): Promise<string> {
  let text = await template(templateName);
  for (const [key, value] of Object.entries(values)) text = text.replaceAll(`@@${key}@@`, shellQuote(value));
  await writeFile(path, text, { mode: 0o755 });
  return path;
}

const decodeArgv = (raw: string): string[] => (raw === '' ? [] : raw.replace(/\0$/, '').split('\0'));

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
    private readonly realCodex: string,
  ) {}

  /** A second fake launcher at another path, same log: for "the launcher changed" scenarios. */
  async secondLauncher(): Promise<string> {
    const dir = join(this.dir, 'launcher-b');
    await mkdir(dir, { recursive: true });
    return install(join(dir, 'codex'), 'codex-launcher.sh', { LOG_DIR: this.logDir, REAL_CODEX: this.realCodex, LAUNCHER_NAME: 'b' });
  }

  static async create(dir: string, options: { realCodex?: string } = {}): Promise<ScenarioObservers> {
    const logDir = join(dir, 'log');
    const pathTrapDir = join(dir, 'path');
    const workspaceDir = join(dir, 'work space');
    await Promise.all([logDir, pathTrapDir, workspaceDir, join(dir, 'launcher')].map((d) => mkdir(d, { recursive: true })));
    const [launcherPath, , probePath, sessionShellPath] = await Promise.all([
      install(join(dir, 'launcher', 'codex'), 'codex-launcher.sh', { LOG_DIR: logDir, REAL_CODEX: options.realCodex ?? '', LAUNCHER_NAME: 'a' }),
      install(join(pathTrapDir, 'codex'), 'trap.sh', { LOG_DIR: logDir, TRAP_NAME: 'path-search' }),
      install(join(dir, 'probe'), 'probe.sh', { LOG_DIR: logDir }),
      install(join(dir, 'session-shell'), 'session-shell.sh', {}),
    ]);
    return new ScenarioObservers(dir, logDir, launcherPath, pathTrapDir, probePath, workspaceDir, sessionShellPath, options.realCodex ?? '');
  }

  /** Installs an executable trap named `name` and returns its absolute path. */
  async trap(name: string): Promise<string> {
    const dir = join(this.dir, `trap-${name}`);
    await mkdir(dir, { recursive: true });
    return install(join(dir, 'codex'), 'trap.sh', { LOG_DIR: this.logDir, TRAP_NAME: name });
  }

  /** A file that looks like a launcher but has no execute bit; running it anyway trips a trap. */
  async nonExecutableLauncher(): Promise<string> {
    const path = await this.trap('not-executable');
    await chmod(path, 0o644);
    return path;
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

  async read(): Promise<Observations> {
    const names = await readdir(this.logDir);
    const observations: Observations = { launches: [], probeRuns: [], trapCalls: [] };
    await Promise.all(
      names.map(async (name) => {
        const text = await readFile(join(this.logDir, name), 'utf8');
        if (name.startsWith('launch-') && name.endsWith('.argv')) {
          const argv = decodeArgv(text);
          const isCapabilityProbe = JSON.stringify(argv) === JSON.stringify(CAPABILITY_PROBE);
          const id = name.slice(0, -'.argv'.length);
          observations.launches.push({ id, launcher: id.split('-').at(-1) ?? '', argv, isCapabilityProbe });
        } else if (name.startsWith('trap.')) {
          observations.trapCalls.push({ trap: name.split('.')[1] ?? '', argv: decodeArgv(text) });
        } else if (name.startsWith('probe.') && name.endsWith('.ran')) {
          const fields = Object.fromEntries(text.split('\n').map((line) => [line.split('=')[0], line.slice(line.indexOf('=') + 1)]));
          observations.probeRuns.push({ nonce: name.split('.')[1] ?? '', launchId: fields.launch ?? '', cwd: fields.cwd ?? '' });
        }
      }),
    );
    observations.launches.sort((a, b) => a.id.localeCompare(b.id));
    return observations;
  }
}
