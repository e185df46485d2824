#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { hideBin } from 'yargs/helpers';
import { packageRoot } from '../harness/paths.js';
import { codexServerEnvironment, userServerEnvironment } from '../harness/codex-environment.js';
import { containment } from '../harness/containment.js';
import { cleanUpEverythingNow } from '../harness/process-registry.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../harness/stdio-transport.js';
import { allChecks, allScenarios, checkById, everyCheck, transportsOf } from '../suites/index.js';
import { ELICITATION_ANSWERS } from '../harness/elicitation.js';
import { EXPLORE_DEFAULTS } from '../suites/server/explore.js';
import type { ExploreOptions } from '../suites/engine/model.js';
import type { StdioTarget } from '../harness/target.js';
import { DEFAULT_RUN_TIMEOUT_MS, defaultScenarioTimeoutMs, runSuite, type RunPlan } from '../suites/engine/runner.js';
import {
  assertDirectory,
  envVarNames,
  loadConfig,
  exploreSeed,
  globMatcher,
  exploreSequences,
  MAX_TIMER_MS,
  parseEnvPairs,
  execEntries,
  skippedTools,
  execFlags,
  parseReplay,
  parseSessionFlag,
  timeoutSeconds,
  type ConfigFile,
  UsageError,
} from './config.js';
import { defaultCodexConfigPath, loadCodexServer, type CodexServerEntry } from './codex-config.js';
import { diagnoseEnvironment } from './diagnose.js';
import { EXIT, EXIT_SIGNAL } from './exit-codes.js';
import { createProgress } from './progress.js';
import { renderExplain, renderList } from './reporters/catalog.js';
import { cliParser, listOf, selectionOf, selectionOptions } from './parser.js';
import { checkOutputPaths, emitResults, resultOptions } from './results.js';
import { assertLoopbackUrl, realCodexPath, stdioTarget, TargetNotFound, unlistedExecTool, type CliStdioTarget } from './target.js';

const version = (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;

/** The options that take a value: each must be given one. */
const VALUE_OPTIONS = [
  'exec-tool',
  'exec-args',
  'skip-tool',
  'config',
  'env',
  'env-var',
  'cwd',
  'url',
  'http-command',
  'http-path',
  'server',
  'codex',
  'session',
  'startup-timeout',
  'call-timeout',
  'scenario-timeout',
  'run-timeout',
  'max-message-mb',
  'catalog-startups',
  'jobs',
  'only',
  'skip',
  'reporter',
  'transcripts',
  'baseline',
  'explore',
  'explore-seed',
  'explore-time',
  'replay',
  'soak',
];

/** The exploration budget from --explore/--no-explore, --explore-seed, --explore-time, --replay and the config; undefined when off. */
function exploreOptions(
  args: { explore?: unknown; 'explore-seed'?: unknown; 'explore-time'?: unknown; replay?: unknown },
  config: ConfigFile,
): ExploreOptions | undefined {
  for (const flag of ['explore', 'explore-seed', 'explore-time', 'replay'] as const) {
    if (Array.isArray(args[flag])) throw new UsageError(`--${flag} given more than once`);
  }
  const fromConfig = config.explore === false ? { sequences: 0 } : (config.explore ?? {});
  // yargs reads --no-explore as explore: false.
  const runs =
    args.explore === false ? 0 : args.explore !== undefined ? exploreSequences(args.explore, '--explore') : (fromConfig.sequences ?? EXPLORE_DEFAULTS.runs);
  const seed = args['explore-seed'] !== undefined ? exploreSeed(args['explore-seed'], '--explore-seed') : (fromConfig.seed ?? EXPLORE_DEFAULTS.seed);
  const timeSec = args['explore-time'] !== undefined ? timeoutSeconds(args['explore-time'], '--explore-time') : fromConfig.timeSec;
  const replay = typeof args.replay === 'string' ? parseReplay(args.replay) : undefined;
  if (replay && runs === 0) throw new UsageError('--replay needs exploration on: drop --no-explore / --explore 0');
  if (runs === 0) return undefined;
  return { runs, seed, ...(timeSec !== undefined ? { timeMs: Math.round(timeSec * 1000) } : {}), ...(replay ? { replay } : {}) };
}

function onSignal(signal: NodeJS.Signals, code: number): void {
  process.once(signal, () => {
    // Server mode's servers and temp dirs, and host mode's hosts, recording servers and temp dirs: one registry.
    cleanUpEverythingNow();
    process.stderr.write(`\nmcp-sandbox-conformance: interrupted (${signal}); servers stopped, temp files removed\n`);
    process.exit(code);
  });
}

/** The server-mode command line: what it accepts, its help, and the result and selection options. */
function serverParser(argv: string[]) {
  const parser = cliParser(
    argv,
    [
      'Checks an MCP server against the sandbox contract OpenAI Codex gives servers that run commands.',
      'A fake Codex host starts the server once per scenario and reports each check with expected vs actual.',
      '',
      'Usage:',
      '  $0 [options] <server> [args...]   a stdio server (an executable, or a .js/.mjs/.cjs file)',
      '  $0 [options] -- <command...>      any command that starts a stdio server',
      '  $0 list                           every check, its rule and what it needs',
      '  $0 explain <check-id | rule-id>   one check, or every check of a rule',
      '  $0 host [options]                 check a Codex build instead (host --help)',
    ].join('\n'),
    110,
  )
    .option('exec-tool', {
      type: 'string',
      describe:
        'A tool that runs a command (repeatable: the first gets every check, the others the fixed EXEC-1/LAUNCH calls; default: every tool detected from a command/cmd/argv/script/code/shell/program/commandLine input property or a description that says it runs something)',
      group: 'Target:',
    })
    .option('exec-args', {
      type: 'string',
      describe:
        'JSON arguments for --exec-tool (one per --exec-tool, in order, or none); "{{argv}}" becomes the command as an array, "{{command}}" as one shell-quoted string',
      group: 'Target:',
    })
    .option('skip-tool', {
      type: 'string',
      describe:
        'Leave out a tool the suite would drive (repeatable); said in the report. Every other exec tool is driven, whatever its annotations and whichever tools --exec-tool names',
      group: 'Target:',
    })
    .option('exercise-all-tools', {
      type: 'boolean',
      describe: 'No effect (the default now: every exec tool is driven whatever its annotations); kept so that old command lines still run',
      hidden: true,
    })
    .option('config', { type: 'string', describe: 'Config file (default: ./mcp-sandbox-conformance.json when present)', group: 'Target:' })
    .option('env', {
      type: 'string',
      describe:
        "The server's env, as in Codex's config: NAME=VALUE (repeatable), on top of the environment Codex builds (HOME, PATH, USER, LANG, ..., the CA-bundle variables; nothing else of ours)",
      group: 'Target:',
    })
    .option('env-var', {
      type: 'string',
      describe: "The server's env_vars, as in Codex's config: a variable NAME passed on from our environment (repeatable)",
      group: 'Target:',
    })
    .option('cwd', { type: 'string', describe: 'Working directory of the server', group: 'Target:' })
    .option('codex-config', {
      type: 'string',
      describe:
        "Test the server as Codex is configured to start it: the [mcp_servers.<--server>] entry of Codex's config.toml FILE (default: $CODEX_HOME/config.toml, else ~/.codex/config.toml); flags given beside it win",
      group: 'Target:',
    })
    .option('server', { type: 'string', describe: 'The server to test from --codex-config: the NAME of its [mcp_servers.NAME] entry', group: 'Target:' })
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
    .option('elicitation', {
      choices: ELICITATION_ANSWERS,
      describe:
        'How the fake Codex answers the server\'s elicitation/create: accept (as a person at Codex would: the form filled from its schema; a URL request is cancelled, no browser), decline (as codex exec with approval_policy = "never" does) or cancel [default: accept]',
      group: 'Target:',
    })
    .option('assume-opt-in', { type: 'boolean', describe: 'Send sandbox keys even if the server did not opt in (Codex would not)', group: 'Target:' })
    .option('startup-timeout', { type: 'number', describe: 'Seconds for initialize + tools/list, like Codex startup_timeout_sec [default: 30]', group: 'Run:' })
    .option('call-timeout', { type: 'number', describe: 'Seconds for one tools/call [default: 60]', group: 'Run:' })
    .option('scenario-timeout', {
      type: 'number',
      describe:
        'Seconds for one scenario, its server startups included; on expiry its checks are errors [default: 2 x startup + 3 x call timeout, 240 s with their defaults]',
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
    .option('jobs', {
      alias: 'j',
      type: 'number',
      default: availableParallelism(),
      describe: 'Scenarios acting on their servers at once (their servers may start meanwhile)',
      group: 'Run:',
    })
    .option('explore', {
      type: 'number',
      describe: `Random call sequences to explore, each on a fresh server (explore/sequences-hold-contract); 0 or --no-explore turns it off [default: ${EXPLORE_DEFAULTS.runs}]`,
      group: 'Exploration:',
    })
    .option('explore-seed', {
      type: 'number',
      describe: `Seed of the sequence generator: the same seed gives the same sequences [default: ${EXPLORE_DEFAULTS.seed}]`,
      group: 'Exploration:',
    })
    .option('explore-time', {
      type: 'number',
      describe: 'Stop starting sequences after this many seconds (the sequences not started are not run)',
      group: 'Exploration:',
    })
    .option('replay', { type: 'string', describe: 'Rerun exactly one sequence, <seed:path> as a failure report prints it', group: 'Exploration:' })
    .option('soak', {
      type: 'number',
      describe:
        'One long-lived server per transport gets exploration traffic, with idle gaps, for this many seconds (explore/soak-holds-contract; off by default, e.g. --soak 600 nightly)',
      group: 'Exploration:',
    })
    .epilog(
      [
        'Exit codes: 0 conformant, 1 violations, 2 usage or config error, 3 incomplete (a check that applies could not run), 4 target failed to start, 129/130/143 interrupted by SIGHUP/SIGINT/SIGTERM (servers killed, temp files removed).',
        'A live progress line goes to stderr on a terminal (not when output is redirected or CI is set).',
        'Docs: README.md; each check: mcp-sandbox-conformance explain <id>.',
      ].join('\n'),
    )
    .parserConfiguration({ 'halt-at-non-option': true, 'populate--': true })
    .version(version);
  // A string or number option must get its value: `--exec-tool` at the end, or followed by another
  // option, is an error rather than silently nothing.
  return resultOptions(selectionOptions(parser, 'launcher/*')).requiresArg(VALUE_OPTIONS);
}

type ServerArgs = Awaited<ReturnType<ReturnType<typeof serverParser>['parseAsync']>>;

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

/** The server to test: from a Codex config entry (--codex-config --server) or the command line, and its HTTP side. */
function serverTarget(args: ServerArgs): { codexEntry?: CodexServerEntry; command: string[] } {
  const positional = (args._ as (string | number)[]).map(String);
  const dashDash = ((args['--'] as (string | number)[] | undefined) ?? []).map(String);
  for (const flag of ['codex-config', 'server'] as const) if (Array.isArray(args[flag])) throw new UsageError(`--${flag} given more than once`);
  if (args.server !== undefined && args['codex-config'] === undefined)
    throw new UsageError('--server names an entry of a Codex config: give --codex-config [FILE] too');
  if (args['codex-config'] !== undefined && !args.server) throw new UsageError('--codex-config needs --server NAME (the [mcp_servers.NAME] entry to test)');
  if (args['codex-config'] !== undefined && positional.length + dashDash.length > 0) {
    throw new UsageError('give the server either through --codex-config --server or on the command line, not both');
  }
  // Codex's config.toml entry: how the server starts, its budgets and its tools. Flags beside it win.
  const codexEntry =
    args['codex-config'] !== undefined ? loadCodexServer(args['codex-config'] || defaultCodexConfigPath(process.env), args.server!, process.env) : undefined;
  const command = codexEntry?.stdio ? [codexEntry.stdio.command, ...codexEntry.stdio.args] : [...positional, ...dashDash];
  if (command.length === 0 && !args.url && !args['http-command'] && !codexEntry?.http) {
    throw new UsageError('no server given: mcp-sandbox-conformance <server> [args...], --url or --http-command (see --help)');
  }
  if (args.url && args['http-command']) throw new UsageError('give --url or --http-command, not both');
  if (args.url) assertLoopbackUrl(args.url);
  for (const flag of VALUE_OPTIONS) {
    const value = (args as Record<string, unknown>)[flag];
    for (const one of Array.isArray(value) ? value : [value]) if (one === '') throw new UsageError(`--${flag} needs a value`);
  }
  if (args['http-command'] && !args['http-command'].includes('{port}')) throw new UsageError('--http-command must contain {port}');
  return { codexEntry, command };
}

/** Flags given twice, and timeouts and counts out of range: usage errors before anything starts. */
function checkFlagValues(args: ServerArgs): void {
  for (const flag of ['config', 'cwd', 'url', 'http-command', 'http-path', 'codex', 'session', 'elicitation'] as const) {
    if (Array.isArray(args[flag])) throw new UsageError(`--${flag} given more than once`);
  }
  for (const flag of ['startup-timeout', 'call-timeout', 'scenario-timeout', 'run-timeout'] as const) {
    if (args[flag] !== undefined) timeoutSeconds(args[flag], `--${flag}`);
  }
  for (const [flag, value] of [
    ['max-message-mb', args['max-message-mb']],
    ['jobs', args.jobs],
    ['catalog-startups', args['catalog-startups']],
  ] as const) {
    if (value === undefined) continue;
    if (Array.isArray(value)) throw new UsageError(`--${flag} given more than once`);
    if (!(Number(value) > 0) || !Number.isFinite(value)) throw new UsageError(`--${flag} must be a positive number, not ${String(value)}`);
    if (flag !== 'max-message-mb' && !Number.isInteger(value)) throw new UsageError(`--${flag} must be a whole number of at least 1, not ${String(value)}`);
  }
  if (args['max-message-mb'] !== undefined && args['max-message-mb'] * 1024 * 1024 > Number.MAX_SAFE_INTEGER) {
    throw new UsageError(`--max-message-mb is too large: ${String(args['max-message-mb'])}`);
  }
}

/** The run the flags, the config file and a Codex config entry ask for (flags win, then the entry, then the file). */
function planOf(
  args: ServerArgs,
  { codexEntry, command }: ReturnType<typeof serverTarget>,
): { plan: RunPlan; env: Record<string, string>; execs: ReturnType<typeof execFlags> } {
  const { config } = loadConfig(args.config);
  const env = { ...config.env, ...codexEntry?.env, ...parseEnvPairs(listOf(args.env)) };
  const envVars = [...(config.envVars ?? []), ...(codexEntry?.envVars ?? []), ...envVarNames(listOf(args['env-var']), '--env-var')];
  const execs = execFlags(listOf(args['exec-tool']), listOf(args['exec-args']));
  checkFlagValues(args);

  const select = selectionOf(args, allChecks, 'mcp-sandbox-conformance list');

  const cwd = args.cwd ?? codexEntry?.cwd ?? config.cwd;
  if (cwd !== undefined)
    assertDirectory(cwd, args.cwd !== undefined ? '--cwd' : codexEntry?.cwd !== undefined ? `[mcp_servers.${codexEntry.name}] cwd` : 'the config\'s "cwd"');
  const realCodex = args.codex ? realCodexPath(args.codex) : undefined;
  const explore = exploreOptions(args, config);
  if (Array.isArray(args.soak)) throw new UsageError('--soak given more than once');
  const soak = args.soak !== undefined ? { seconds: timeoutSeconds(args.soak, '--soak') } : undefined;
  // Every file and directory the run will write, checked before any server starts.
  checkOutputPaths(listOf(args.reporter), args.transcripts);
  // Without the flag the harness's default holds (harness/target.ts): one place for it.
  const maxMessageBytes = args['max-message-mb'] !== undefined ? { maxMessageBytes: Math.floor(args['max-message-mb'] * 1024 * 1024) } : {};
  // From a Codex config the command runs exactly as Codex spawns it; on the command line a .js file runs with node.
  const stdioOf = (argv: string[], environment: Record<string, string>): StdioTarget =>
    codexEntry?.stdio ? { kind: 'stdio', command: argv[0]!, args: argv.slice(1), environment, cwd } : stdioTarget(argv, environment, cwd);
  const httpHeaders = codexEntry?.http && Object.keys(codexEntry.http.headers).length ? { headers: codexEntry.http.headers } : {};
  const exec = execs.length ? execs : execEntries(config.exec).map((e) => ({ ...e, source: 'config' as const }));
  const plan: RunPlan = {
    targets: {
      // Codex starts a stdio server with an environment it builds; its user starts an HTTP one with theirs.
      stdio: command.length ? { ...stdioOf(command, codexServerEnvironment(process.env, { env, envVars })), ...maxMessageBytes } : undefined,
      http: args.url
        ? { kind: 'http-url', url: args.url, ...httpHeaders }
        : args['http-command']
          ? {
              kind: 'http-command',
              command: args['http-command'],
              path: args['http-path'],
              environment: userServerEnvironment(process.env, env),
              cwd,
              ...httpHeaders,
            }
          : codexEntry?.http
            ? { kind: 'http-url', url: codexEntry.http.url, ...httpHeaders }
            : undefined,
    },
    tools: codexEntry?.tools,
    realCodex,
    session: parseSessionFlag(args.session) ?? config.session,
    resourceReadMeta: config.resourceReadMeta,
    exec,
    skipTools: skippedTools([...(config.skipTools ?? []), ...listOf(args['skip-tool'])], exec),
    options: {
      assumeOptIn: args['assume-opt-in'] ?? config.assumeOptIn ?? false,
      startupTimeoutMs: Math.round((args['startup-timeout'] ?? codexEntry?.startupTimeoutSec ?? config.startupTimeoutSec ?? 30) * 1000),
      callTimeoutMs: Math.round((args['call-timeout'] ?? codexEntry?.toolTimeoutSec ?? config.callTimeoutSec ?? 60) * 1000),
      catalogStartups: args['catalog-startups'],
      explore,
      elicitation: args.elicitation ?? config.elicitation ?? 'accept',
      ...(soak ? { soak } : {}),
    },
    jobs: Math.floor(args.jobs),
    scenarioTimeoutMs: args['scenario-timeout'] !== undefined ? Math.round(args['scenario-timeout'] * 1000) : undefined,
    runTimeoutMs: args['run-timeout'] !== undefined ? Math.round(args['run-timeout'] * 1000) : undefined,
    select,
  };

  // The derived default may exceed what a timer can hold even when each part is valid.
  plan.scenarioTimeoutMs ??= Math.min(defaultScenarioTimeoutMs(plan.options), MAX_TIMER_MS);
  return { plan, env, execs };
}

/** Runs the plan, then diagnoses a start failure, and reports. */
async function runAndReport(
  plan: RunPlan,
  args: ServerArgs,
  { codexEntry, command }: ReturnType<typeof serverTarget>,
  { env, execs }: { env: Record<string, string>; execs: ReturnType<typeof execFlags> },
): Promise<number> {
  const progress = createProgress();
  plan.onProgress = progress.onProgress;
  let report;
  try {
    report = await runSuite(plan, allScenarios);
  } finally {
    progress.stop();
  }
  // How the run made sure nothing it started outlives it: the harness's, for the header.
  report.containment = containment();
  // A stdio server that died before answering initialize under Codex's environment: is a variable
  // it needs missing? (Started again for diagnosis only, with the suite's full environment.)
  const stdio = plan.targets.stdio;
  if (stdio && report.startFailure?.transport === 'stdio' && report.startFailure.endedBeforeInitialize) {
    const diagnosis = await diagnoseEnvironment(stdio, { parent: process.env, env, startupTimeoutMs: plan.options.startupTimeoutMs, server: codexEntry?.name });
    report.startFailure = { ...report.startFailure, message: [report.startFailure.message, ...diagnosis.lines].join('\n') };
  }
  const unknownTool = execs.map((e) => unlistedExecTool(e.tool, report)).find(Boolean);
  if (unknownTool) throw new UsageError(unknownTool);
  const httpText = args.url ?? args['http-command'] ?? codexEntry?.http?.url ?? '';
  const entryText = codexEntry ? ` ([mcp_servers.${codexEntry.name}] in ${codexEntry.file})` : '';
  const runWith = (plan.targets.stdio as CliStdioTarget | undefined)?.runWith;
  const targetText = [`${command.join(' ')}${runWith ? ` (run with ${runWith})` : ''}`, httpText].filter(Boolean).join(' + HTTP: ') + entryText;
  return emitResults(report, args, {
    target: targetText,
    version,
    checks: allChecks,
    ...(codexEntry
      ? {
          codexConfig: { file: codexEntry.file, server: codexEntry.name, command: command.length ? command : undefined, url: codexEntry.http?.url },
          secrets: codexEntry.secrets,
        }
      : {}),
  });
}

async function main(argv: string[]): Promise<number> {
  // The subcommands are plain words: yargs stops parsing at the first non-option (so that the
  // server's own flags reach the server), which also stops it from seeing commands.
  if (argv[0] === 'host') return (await import('./host.js')).hostCommand(argv.slice(1), version);
  if (argv[0] === 'list') return listChecks(argv.slice(1));
  if (argv[0] === 'explain') return explainChecks(argv.slice(1));
  const args = await serverParser(argv).parseAsync();
  if (args.help || args.version) return EXIT.ok;
  const target = serverTarget(args);
  const { plan, ...given } = planOf(args, target);
  if (args['exercise-all-tools'])
    process.stderr.write(
      'mcp-sandbox-conformance: --exercise-all-tools has no effect: every exec tool is driven by default (--skip-tool NAME leaves one out)\n',
    );
  return runAndReport(plan, args, target, given);
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
