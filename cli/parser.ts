import yargs, { type Argv } from 'yargs';
import { globMatcher, UsageError } from './config.js';
import { selectionFlags } from './flags.js';

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
