#!/usr/bin/env node
import { hideBin } from 'yargs/helpers';
import { cleanUpEverythingNow } from '../harness/process-registry.js';
import { checkById, everyCheck, transportsOf } from '../suites/index.js';
import { globMatcher, UsageError } from './config.js';
import { EXIT, EXIT_SIGNAL } from './exit-codes.js';
import { createProgress } from './progress.js';
import { renderExplain, renderList } from './reporters/catalog.js';
import { runServerMode, serverParser, version } from './server-command.js';
import { TargetNotFound } from './target.js';

function onSignal(signal: NodeJS.Signals, code: number): void {
  process.once(signal, () => {
    // Server mode's servers and temp dirs, and host mode's hosts, recording servers and temp dirs: one registry.
    cleanUpEverythingNow();
    process.stderr.write(`\nmcp-sandbox-conformance: interrupted (${signal}); servers stopped, temp files removed\n`);
    process.exit(code);
  });
}

/** `list [glob...]`: server checks first, then the host subcommand's; globs (`list 'host/*'`) keep the checks whose id matches one. */
function listChecks(patterns: string[]): number {
  const matches = patterns.length ? globMatcher(patterns) : () => true;
  const listed = everyCheck.filter((c) => matches(c.id));
  if (listed.length === 0) throw new UsageError(`no check id matches ${patterns.join(' ')}; see mcp-sandbox-conformance list`);
  process.stdout.write(renderList(listed, transportsOf));
  return EXIT.ok;
}

/** `explain <check-id | rule-id>`: one check, or every check of a rule. */
function explainChecks(args: string[]): number {
  const id = args[0];
  const check = id ? checkById(id) : undefined;
  // A rule ID (LAUNCH-1, EXEC-1, ...) explains every check that hangs under it.
  const underRule = id ? everyCheck.filter((c) => c.rule.toUpperCase() === id.toUpperCase()) : [];
  if ((!check && underRule.length === 0) || args.length > 1) {
    throw new UsageError(`unknown check or rule "${id ?? ''}"; see mcp-sandbox-conformance list (and CONTRACT.md for the rules)`);
  }
  process.stdout.write(
    check
      ? renderExplain(check)
      : [
          `${underRule[0]!.rule} (CONTRACT.md §${underRule[0]!.rule.startsWith('HOST-') ? 4 : 3}): ${underRule.length} check${underRule.length === 1 ? '' : 's'}`,
          '',
          ...underRule.map(renderExplain),
        ].join('\n'),
  );
  return EXIT.ok;
}

async function main(argv: string[]): Promise<number> {
  // The subcommands are plain words: yargs stops parsing at the first non-option (so that the
  // server's own flags reach the server), which also stops it from seeing commands.
  if (argv[0] === 'host') return (await import('./host.js')).hostCommand(argv.slice(1), version);
  if (argv[0] === 'list') return listChecks(argv.slice(1));
  if (argv[0] === 'explain') return explainChecks(argv.slice(1));
  const args = await serverParser(argv).parseAsync();
  if (args.help || args.version) return EXIT.ok;
  if (args['exercise-all-tools'])
    process.stderr.write(
      'mcp-sandbox-conformance: --exercise-all-tools has no effect: every exec tool is driven by default (--skip-tool NAME leaves one out)\n',
    );
  return (await runServerMode(args, { progress: createProgress() })).exitCode;
}

// A reader that goes away (`… | head -1`) is no error of the run: further output is dropped and
// the run ends with its own exit code, without an EPIPE stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
    throw error;
  });
}
onSignal('SIGHUP', EXIT_SIGNAL.SIGHUP);
onSignal('SIGINT', EXIT_SIGNAL.SIGINT);
onSignal('SIGTERM', EXIT_SIGNAL.SIGTERM);
// Should the event loop ever drain while the run is still pending (a bug: nothing left to wake
// it), never end with the exit code 0 that node would give: that would be a silent pass.
let settled = false;
process.on('beforeExit', () => {
  if (settled) return;
  settled = true;
  process.stderr.write('mcp-sandbox-conformance: internal error: the run stopped before it finished\n');
  process.exitCode = EXIT.incomplete;
});
main(hideBin(process.argv)).then(
  (code) => {
    settled = true;
    process.exitCode = code;
    // Everything the run started is gone by now; should a stray handle (a socket to a server
    // that never answers) keep the event loop alive, do not wait for it.
    setTimeout(() => process.exit(code), 1000).unref();
  },
  (error: unknown) => {
    settled = true;
    if (error instanceof UsageError) {
      process.stderr.write(`mcp-sandbox-conformance: ${error.message}\n`);
      process.exitCode = EXIT.usage;
    } else if (error instanceof TargetNotFound) {
      process.stderr.write(`mcp-sandbox-conformance: ${error.message}\n`);
      process.exitCode = EXIT.targetFailed;
    } else {
      process.stderr.write(`mcp-sandbox-conformance: internal error: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = EXIT.incomplete;
    }
  },
);
