import yargs, { type Argv, type Options } from 'yargs';
import { globMatcher, UsageError } from './config.js';

/**
 * What both of the CLI's parsers (the server mode's in main.ts, host mode's in host.ts) share:
 * the yargs setup, the --only/--skip selection and repeatable flags. Each mode adds its own
 * options; the results options are cli/results.ts's resultOptions.
 */

/** A yargs parser that never exits the process and turns every parse error into a UsageError (exit 2). */
export function cliParser(argv: string[], usage: string, width: number): Argv {
  return yargs(argv)
    .scriptName('mcp-sandbox-conformance')
    .usage(usage)
    .strict()
    .help()
    .alias('h', 'help')
    .wrap(Math.min(width, process.stdout.columns || width))
    .exitProcess(false)
    .fail((message, error) => {
      const text = message ?? error?.message ?? 'invalid arguments';
      const missing = text.match(/^Not enough arguments following: (\S+)$/);
      throw new UsageError(missing ? `${missing[1]!.length === 1 ? '-' : '--'}${missing[1]} needs a value` : text);
    });
}

/** A repeatable flag's values (yargs gives one value bare, several as an array). */
export const listOf = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/**
 * A flag as declared: yargs's options, and what yargs cannot say about it: that it may be given
 * several times (its values then come as a list, listOf), or without its value (`--codex-config`
 * alone: the default file).
 */
export type FlagDeclaration = Options & { repeatable?: true; valueOptional?: true };

/** A flag that takes a value (not a boolean). */
const takesValue = (flag: FlagDeclaration): boolean => flag.type === 'string' || flag.type === 'number' || flag.choices !== undefined;
/** A value flag whose value must be there: `--exec-tool` at the end, or followed by another option, is an error rather than silently nothing. */
const needsValue = (flag: FlagDeclaration): boolean => (flag.type === 'string' || flag.type === 'number') && !flag.valueOptional;

/** The flags of `table` that must be given a value (yargs's requiresArg). */
export const valueFlags = (table: Record<string, FlagDeclaration>): string[] => Object.keys(table).filter((name) => needsValue(table[name]!));

/** One pass over the declarations: a value flag given more than once (unless repeatable), or given an empty value, is a usage error. */
export function checkGivenOnce(args: Record<string, unknown>, table: Record<string, FlagDeclaration>): void {
  for (const [name, flag] of Object.entries(table)) {
    const value = args[name];
    if (Array.isArray(value) && takesValue(flag) && !flag.repeatable) throw new UsageError(`--${name} given more than once`);
    if (needsValue(flag) && (Array.isArray(value) ? value : [value]).includes('')) throw new UsageError(`--${name} needs a value`);
  }
}

/** --only and --skip, in the 'Run:' group; `example` is a glob the help shows. */
export const selectionFlags = (example: string) =>
  ({
    only: { type: 'string', repeatable: true, describe: `Run only checks whose id matches a glob (repeatable), e.g. "${example}"`, group: 'Run:' },
    skip: { type: 'string', repeatable: true, describe: 'Leave out checks whose id matches a glob (repeatable)', group: 'Run:' },
  }) as const satisfies Record<string, FlagDeclaration>;

export function selectionOptions<T>(y: Argv<T>, example: string) {
  return y.options(selectionFlags(example));
}

/** The checks --only/--skip select, as a predicate; a usage error when they leave none (`listing` says where to look). */
export function selectionOf(args: { only?: string | string[]; skip?: string | string[] }, checks: { id: string }[], listing: string): (id: string) => boolean {
  const only = listOf(args.only).length ? globMatcher(listOf(args.only)) : () => true;
  const skip = listOf(args.skip).length ? globMatcher(listOf(args.skip)) : () => false;
  const selected = new Set(checks.filter((c) => only(c.id) && !skip(c.id)).map((c) => c.id));
  if (selected.size === 0) throw new UsageError(`--only/--skip leave no check to run; see ${listing}`);
  return (id) => selected.has(id);
}
