#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { packageRoot } from '../harness/paths.js';
import { DEFAULT_MAX_MESSAGE_BYTES, killAllLiveGroups, setMaxMessageBytes } from '../harness/stdio-transport.js';
import { allChecks, allScenarios, transportsOf } from '../suites/index.js';
import { DEFAULT_RUN_TIMEOUT_MS, defaultScenarioTimeoutMs, removeLiveRunDirs, runSuite, type RunPlan } from '../suites/runner.js';
import { globMatcher, loadConfig, parseEnvPairs, parseExecArgs, parseSessionFlag, UsageError } from './config.js';
import { EXIT, EXIT_SIGNAL } from './exit-codes.js';
import { createProgress } from './progress.js';
import { renderExplain, renderList } from './reporters/catalog.js';
import { emitResults, resultOptions } from './results.js';
import { assertLoopbackUrl, realCodexPath, stdioTarget, TargetNotFound } from './target.js';

const version = (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;

function onSignal(signal: NodeJS.Signals, code: number): void {
  process.once(signal, () => {
    killAllLiveGroups();
    removeLiveRunDirs();
    process.stderr.write(`\nmcp-sandbox-conformance: interrupted (${signal}); servers stopped, temp files removed\n`);
    process.exit(code);
  });
}

async function main(argv: string[]): Promise<number> {
  const parser = yargs(argv)
    .scriptName('mcp-sandbox-conformance')
    .usage(
      [
        'Checks an MCP server against the sandbox contract OpenAI Codex gives servers that run commands.',
        'A fake Codex host starts the server once per scenario and reports each check with expected vs actual.',
        '',
        'Usage:',
        '  $0 [options] <server> [server args...]   a stdio server: an executable, or a .js/.mjs/.cjs file run with node',
        '  $0 [options] -- <command...>             any command that starts a stdio server',
        '  $0 list                                  every check, with its rule and what it needs',
        '  $0 explain <check-id>                    one check: the rule, why, common mistakes, the fix',
      ].join('\n'),
    )
    .option('exec-tool', { type: 'string', describe: 'The tool that runs a command (default: detected from a command/cmd/argv input property)', group: 'Target:' })
    .option('exec-args', {
      type: 'string',
      describe: 'JSON arguments for --exec-tool; "{{argv}}" becomes the command as an array, "{{command}}" as one shell-quoted string',
      group: 'Target:',
    })
    .option('config', { type: 'string', describe: 'Config file (default: ./mcp-sandbox-conformance.json when present)', group: 'Target:' })
    .option('env', { type: 'string', describe: 'Extra environment for the server, NAME=VALUE (repeatable); it gets ours in full too', group: 'Target:' })
    .option('cwd', { type: 'string', describe: 'Working directory of the server', group: 'Target:' })
    .option('url', { type: 'string', describe: 'A running Streamable HTTP server to test too (loopback), e.g. http://127.0.0.1:8080/mcp', group: 'Target:' })
    .option('http-command', {
      type: 'string',
      describe: 'A shell command that starts the server over Streamable HTTP on port {port}; the suite starts one per scenario',
      group: 'Target:',
    })
    .option('http-path', { type: 'string', default: '/mcp', describe: 'The MCP endpoint path for --http-command', group: 'Target:' })
    .option('codex', { type: 'string', describe: 'A real Codex CLI: commands then really run in `codex sandbox` (enforcement checks)', group: 'Target:' })
    .option('session', {
      type: 'string',
      describe:
        'Session adapter JSON for the AUTH-2 session checks: {"open":{tool,arguments},"send":{tool,arguments with "{{sessionId}}" and "{{command}}"}}, optionally "sessionId":"<dotted path in the open result>" (default: structuredContent.sessionId, else the only text block of the open result)',
      group: 'Target:',
    })
    .option('assume-opt-in', { type: 'boolean', describe: 'Send sandbox keys even if the server did not opt in (Codex would not)', group: 'Target:' })
    .option('startup-timeout', { type: 'number', describe: 'Seconds for initialize + tools/list, like Codex startup_timeout_sec [default: 30]', group: 'Run:' })
    .option('call-timeout', { type: 'number', describe: 'Seconds for one tools/call [default: 60]', group: 'Run:' })
    .option('scenario-timeout', {
      type: 'number',
      describe: 'Seconds for one scenario, its server startups included; on expiry its checks are errors [default: 2 x startup + 3 x call timeout, 240 s with their defaults]',
      group: 'Run:',
    })
    .option('run-timeout', {
      type: 'number',
      describe: `Seconds for the whole run; on expiry running scenarios are errors and the rest could not run [default: ${DEFAULT_RUN_TIMEOUT_MS / 1000}]`,
      group: 'Run:',
    })
    .option('max-message-mb', {
      type: 'number',
      describe: `Largest message accepted from a stdio server, in MB; a bigger one ends the connection [default: ${DEFAULT_MAX_MESSAGE_BYTES / 1024 / 1024}]`,
      group: 'Run:',
    })
    .option('catalog-startups', { type: 'number', default: 3, describe: 'Overlapping startups for the tool-catalog checks (CAT-1, CAT-2)', group: 'Run:' })
    .option('jobs', { alias: 'j', type: 'number', default: availableParallelism(), describe: 'Scenarios run at once, each with its own server', group: 'Run:' })
    .option('only', { type: 'string', describe: 'Run only checks whose id matches a glob (repeatable), e.g. "launcher/*"', group: 'Run:' })
    .option('skip', { type: 'string', describe: 'Leave out checks whose id matches a glob (repeatable)', group: 'Run:' })
    .option('strict', { type: 'boolean', default: false, describe: 'SHOULD findings fail the run (same as --fail-on should)', group: 'Results:' })
    .option('fail-on', { choices: ['must', 'should'] as const, default: 'must' as const, describe: 'Lowest level whose failure fails the run', group: 'Results:' })
    .option('color', { type: 'boolean', describe: 'Force colors on or off (default: on for a terminal, off with NO_COLOR)', group: 'Results:' })
    .epilog(
      [
        'Exit codes: 0 conformant, 1 violations, 2 usage or config error, 3 incomplete (a check that applies could not run), 4 target failed to start, 130/143 interrupted by SIGINT/SIGTERM (servers killed, temp files removed).',
        'A live progress line goes to stderr on a terminal (not when output is redirected or CI is set).',
        'Docs: README.md; each check: mcp-sandbox-conformance explain <id>.',
      ].join('\n'),
    )
    .parserConfiguration({ 'halt-at-non-option': true, 'populate--': true })
    .strict()
    .version(version)
    .help()
    .alias('h', 'help')
    .wrap(Math.min(110, process.stdout.columns || 110))
    .exitProcess(false)
    .fail((message, error) => {
      throw new UsageError(message ?? error?.message ?? 'invalid arguments');
    });

  // The subcommands are plain words: yargs stops parsing at the first non-option (so that the
  // server's own flags reach the server), which also stops it from seeing commands.
  if (argv[0] === 'host') return (await import('./host.js')).runHostMode(argv.slice(1));
  if (argv[0] === 'list') {
    if (argv.length > 1) throw new UsageError('list takes no arguments');
    process.stdout.write(renderList(allChecks, transportsOf));
    return EXIT.ok;
  }
  if (argv[0] === 'explain') {
    const id = argv[1];
    const check = allChecks.find((c) => c.id === id);
    if (!check || argv.length > 2) throw new UsageError(`unknown check "${id ?? ''}"; see mcp-sandbox-conformance list`);
    process.stdout.write(renderExplain(check));
    return EXIT.ok;
  }

  const args = await resultOptions(parser).parseAsync();
  if (args.help || args.version) return EXIT.ok;
  const positional = (args._ as (string | number)[]).map(String);
  const dashDash = ((args['--'] as (string | number)[] | undefined) ?? []).map(String);
  const many = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

  const command = [...positional, ...dashDash];
  if (command.length === 0 && !args.url && !args['http-command']) {
    throw new UsageError('no server given: mcp-sandbox-conformance <server> [args...], --url or --http-command (see --help)');
  }
  if (args.url && args['http-command']) throw new UsageError('give --url or --http-command, not both');
  if (args.url) assertLoopbackUrl(args.url);
  if (args['http-command'] && !args['http-command'].includes('{port}')) throw new UsageError('--http-command must contain {port}');
  const { config } = loadConfig(args.config);
  const env = { ...config.env, ...parseEnvPairs(many(args.env)) };
  const execArgs = parseExecArgs(args['exec-args']);
  if (execArgs !== undefined && !args['exec-tool']) throw new UsageError('--exec-args needs --exec-tool');
  for (const [flag, value] of [
    ['startup-timeout', args['startup-timeout']],
    ['call-timeout', args['call-timeout']],
    ['scenario-timeout', args['scenario-timeout']],
    ['run-timeout', args['run-timeout']],
    ['max-message-mb', args['max-message-mb']],
    ['jobs', args.jobs],
    ['catalog-startups', args['catalog-startups']],
  ] as const) {
    if (value !== undefined && !(Number(value) > 0)) throw new UsageError(`--${flag} must be a positive number`);
  }

  const only = many(args.only).length ? globMatcher(many(args.only)) : () => true;
  const skip = many(args.skip).length ? globMatcher(many(args.skip)) : () => false;
  const selected = allChecks.filter((c) => only(c.id) && !skip(c.id));
  if (selected.length === 0) throw new UsageError('--only/--skip leave no check to run; see mcp-sandbox-conformance list');

  const cwd = args.cwd ?? config.cwd;
  const plan: RunPlan = {
    targets: {
      stdio: command.length ? stdioTarget(command, env, cwd) : undefined,
      http: args.url
        ? { kind: 'http-url', url: args.url }
        : args['http-command']
          ? { kind: 'http-command', command: args['http-command'], path: args['http-path'], env, cwd }
          : undefined,
    },
    realCodex: args.codex ? realCodexPath(args.codex) : undefined,
    session: parseSessionFlag(args.session) ?? config.session,
    resourceReadMeta: config.resourceReadMeta,
    exec: args['exec-tool']
      ? { tool: args['exec-tool'], arguments: execArgs, source: 'flag' }
      : config.exec
        ? { ...config.exec, source: 'config' }
        : undefined,
    options: {
      assumeOptIn: args['assume-opt-in'] ?? config.assumeOptIn ?? false,
      startupTimeoutMs: (args['startup-timeout'] ?? config.startupTimeoutSec ?? 30) * 1000,
      callTimeoutMs: (args['call-timeout'] ?? config.callTimeoutSec ?? 60) * 1000,
      strict: args.strict || args['fail-on'] === 'should',
      catalogStartups: args['catalog-startups'],
    },
    jobs: Math.floor(args.jobs),
    scenarioTimeoutMs: args['scenario-timeout'] !== undefined ? args['scenario-timeout'] * 1000 : undefined,
    runTimeoutMs: args['run-timeout'] !== undefined ? args['run-timeout'] * 1000 : undefined,
    select: (id) => selected.some((c) => c.id === id),
  };

  plan.scenarioTimeoutMs ??= defaultScenarioTimeoutMs(plan.options);
  if (args['max-message-mb'] !== undefined) setMaxMessageBytes(Math.floor(args['max-message-mb'] * 1024 * 1024));
  const progress = createProgress();
  plan.onProgress = progress.onProgress;
  let report;
  try {
    report = await runSuite(plan, allScenarios);
  } finally {
    progress.stop();
  }
  const targetText = [command.join(' '), args.url ?? args['http-command'] ?? ''].filter(Boolean).join(' + HTTP: ');
  return emitResults(report, args, { target: targetText, version, checks: allChecks });
}

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
