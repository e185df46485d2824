import { UsageError } from './config.js';
import { renderJson, type ReportDocument } from './reporters/json.js';
import type { TextOut } from './flags.js';
import { SERVER_COMMAND_FLAGS } from './flags.js';
import { runServerMode, serverParser } from './server-command.js';
import { TargetNotFound } from './target.js';
import type { ProgressEvent } from '../suites/engine/runner.js';

/**
 * `checkServer`: the CLI's server mode from code. Its options are the CLI's flags, camelCased
 * (`--env-var` is `envVar`), with the CLI's meaning: they become a command line that goes through
 * the CLI's own parser, checks, run and reporters (cli/server-command.ts), so nothing is done twice
 * and an invalid option fails with the message the CLI prints. It resolves to the JSON report.
 */

/** Rejections: a usage error is the CLI's exit 2, a target not found its exit 4; the message is the one it prints. */
export { UsageError, TargetNotFound };
export type { ProgressEvent, TextOut };
/** The report of one run, as `--reporter json` writes it (schema/report.schema.json). */
export type RunReport = ReportDocument;
export type { CheckRecord, ScenarioDocument, ReportedTool } from './reporters/json.js';

type Flags = typeof SERVER_COMMAND_FLAGS;
type CamelCase<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;
type FlagValue<F> = F extends { choices: readonly (infer C)[] }
  ? C
  : F extends { type: 'boolean' }
    ? boolean
    : F extends { type: 'number' }
      ? number
      : F extends { valueOptional: true }
        ? string | true
        : string;
/** Every flag of the server mode, camelCased; a repeatable flag takes a list. */
export type FlagOptions = {
  -readonly [K in keyof Flags as CamelCase<K & string>]?: Flags[K] extends { repeatable: true }
    ? FlagValue<Flags[K]> | FlagValue<Flags[K]>[]
    : FlagValue<Flags[K]>;
};

export interface CheckServerOptions extends FlagOptions {
  /** The stdio server's command line, as after `--` on the CLI, e.g. `['node', 'dist/server.js']` (a lone .js file runs with this node). */
  command?: string[];
  /** Aborting it ends every server of the run and removes its temp files, then checkServer rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called as scenarios start, say how far they got, and finish. */
  onProgress?: (event: ProgressEvent) => void;
  /** Where the CLI's terminal output goes (the human report; a reporter without a file): nowhere unless given. */
  stdout?: TextOut;
  stderr?: TextOut;
}

const camelCase = (flag: string) => flag.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
const FLAG_OF = new Map(Object.keys(SERVER_COMMAND_FLAGS).map((flag) => [camelCase(flag), flag]));
const nowhere: TextOut = { write: () => true };

/** The command line the options stand for: `--flag=value` (a value may start with a dash); `--flag` for true, `--no-flag` for false (as yargs reads them). */
export function argvOf(options: CheckServerOptions): string[] {
  const { command = [], signal: _signal, onProgress: _onProgress, stdout: _stdout, stderr: _stderr, ...flags } = options;
  const argv = Object.entries(flags).flatMap(([key, value]) => {
    // An unknown key goes to the parser as it is: it rejects it as it rejects an unknown flag.
    const flag = FLAG_OF.get(key) ?? key;
    const boolean = (SERVER_COMMAND_FLAGS as Record<string, { type?: string }>)[flag]?.type === 'boolean';
    const one = (item: unknown): string[] =>
      item === undefined ? [] : item === false ? [`--no-${flag}`] : item === true ? [boolean ? `--${flag}` : `--${flag}=`] : [`--${flag}=${String(item)}`];
    return (Array.isArray(value) ? (value as unknown[]) : [value]).flatMap(one);
  });
  return command.length ? [...argv, '--', ...command] : argv;
}

/** Runs the conformance suite on a server, as the CLI would with the same options, and resolves to its JSON report. */
export async function checkServer(options: CheckServerOptions): Promise<RunReport> {
  options.signal?.throwIfAborted();
  const args = await serverParser(argvOf(options)).parseAsync();
  const data = await runServerMode(args, {
    progress: { onProgress: options.onProgress, stop: () => undefined },
    terminal: { stdout: options.stdout ?? nowhere, stderr: options.stderr ?? nowhere },
    signal: options.signal,
  });
  return JSON.parse(renderJson(data)) as RunReport;
}
