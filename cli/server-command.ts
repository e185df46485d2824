import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../harness/paths.js';
import { codexServerEnvironment, userServerEnvironment } from '../harness/codex-environment.js';
import { containment } from '../harness/containment.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../harness/stdio-transport.js';
import { allChecks, allScenarios } from '../suites/index.js';
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
  exploreSequences,
  MAX_TIMER_MS,
  parseEnvPairs,
  execEntries,
  execFlags,
  parseReplay,
  parseSessionFlag,
  timeoutSeconds,
  type ConfigFile,
  UsageError,
} from './config.js';
import { defaultCodexConfigPath, loadCodexServer, type CodexServerEntry } from './codex-config.js';
import { diagnoseEnvironment } from './diagnose.js';
import type { Progress } from './progress.js';
import { checkGivenOnce, cliParser, listOf, selectionFlags, selectionOf, selectionOptions, valueFlags, type FlagDeclaration } from './parser.js';
import { checkOutputPaths, emitReport, RESULT_FLAGS, resultOptions, type Terminal } from './results.js';
import type { ReportData } from './reporters/index.js';
import { assertLoopbackUrl, realCodexPath, stdioTarget, unlistedExecTool, type CliStdioTarget } from './target.js';

/**
 * The server mode (`mcp-sandbox-conformance [options] <server>`): its flags, the plan they ask for,
 * the run and its reports. The CLI (main.ts) and the API (api/index.ts) both run it: one engine.
 */

export const version = (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;

const SELECTION_EXAMPLE = 'launcher/*';

/** The server mode's own flags, as --help shows them. */
const SERVER_FLAGS = {
  'exec-tool': {
    type: 'string',
    repeatable: true,
    describe:
      'A tool that runs a command (repeatable: the first gets every check, the others the fixed EXEC-1/LAUNCH calls; default: every tool detected from a command/cmd/argv/script/code/shell/program/commandLine input property or a description that says it runs something)',
    group: 'Target:',
  },
  'exec-args': {
    type: 'string',
    repeatable: true,
    describe:
      'JSON arguments for --exec-tool (one per --exec-tool, in order, or none); "{{argv}}" becomes the command as an array, "{{command}}" as one shell-quoted string',
    group: 'Target:',
  },
  'exercise-all-tools': {
    type: 'boolean',
    describe: 'Also drive exec tools whose annotations say destructiveHint or openWorldHint (left out by default, and listed)',
    group: 'Target:',
  },
  config: { type: 'string', describe: 'Config file (default: ./mcp-sandbox-conformance.json when present)', group: 'Target:' },
  env: {
    type: 'string',
    repeatable: true,
    describe:
      "The server's env, as in Codex's config: NAME=VALUE (repeatable), on top of the environment Codex builds (HOME, PATH, USER, LANG, ..., the CA-bundle variables; nothing else of ours)",
    group: 'Target:',
  },
  'env-var': {
    type: 'string',
    repeatable: true,
    describe: "The server's env_vars, as in Codex's config: a variable NAME passed on from our environment (repeatable)",
    group: 'Target:',
  },
  cwd: { type: 'string', describe: 'Working directory of the server', group: 'Target:' },
  'codex-config': {
    type: 'string',
    valueOptional: true,
    describe:
      "Test the server as Codex is configured to start it: the [mcp_servers.<--server>] entry of Codex's config.toml FILE (default: $CODEX_HOME/config.toml, else ~/.codex/config.toml); flags given beside it win",
    group: 'Target:',
  },
  server: { type: 'string', describe: 'The server to test from --codex-config: the NAME of its [mcp_servers.NAME] entry', group: 'Target:' },
  url: { type: 'string', describe: 'A running Streamable HTTP server to test too (loopback), e.g. http://127.0.0.1:8080/mcp', group: 'Target:' },
  'http-command': {
    type: 'string',
    describe: 'A shell command that starts the server over Streamable HTTP on port {port}; the suite starts one per scenario',
    group: 'Target:',
  },
  'http-path': { type: 'string', default: '/mcp', describe: 'The MCP endpoint path for --http-command', group: 'Target:' },
  codex: { type: 'string', describe: 'A real Codex CLI: commands then really run in `codex sandbox` (enforcement checks)', group: 'Target:' },
  session: {
    type: 'string',
    describe:
      'Session adapter JSON for the AUTH-2 session checks: {"open":{tool,arguments},"send":{tool,arguments with "{{sessionId}}" and "{{command}}"}}, optionally "sessionId":"<dotted path in the open result>" (default: structuredContent.sessionId, else the only text block of the open result)',
    group: 'Target:',
  },
  elicitation: {
    choices: ELICITATION_ANSWERS,
    describe:
      'How the fake Codex answers the server\'s elicitation/create: accept (as a person at Codex would: the form filled from its schema; a URL request is cancelled, no browser), decline (as codex exec with approval_policy = "never" does) or cancel [default: accept]',
    group: 'Target:',
  },
  'assume-opt-in': { type: 'boolean', describe: 'Send sandbox keys even if the server did not opt in (Codex would not)', group: 'Target:' },
  'startup-timeout': { type: 'number', describe: 'Seconds for initialize + tools/list, like Codex startup_timeout_sec [default: 30]', group: 'Run:' },
  'call-timeout': { type: 'number', describe: 'Seconds for one tools/call [default: 60]', group: 'Run:' },
  'scenario-timeout': {
    type: 'number',
    describe:
      'Seconds for one scenario, its server startups included; on expiry its checks are errors [default: 2 x startup + 3 x call timeout, 240 s with their defaults]',
    group: 'Run:',
  },
  'run-timeout': {
    type: 'number',
    describe: `Seconds for the whole run; on expiry running scenarios are errors and the rest could not run [default: ${DEFAULT_RUN_TIMEOUT_MS / 1000}]`,
    group: 'Run:',
  },
  'max-message-mb': {
    type: 'number',
    describe: `Largest message accepted from a stdio server, in MB; a bigger one ends the connection [default: ${DEFAULT_MAX_MESSAGE_BYTES / 1024 / 1024}]`,
    group: 'Run:',
  },
  'catalog-startups': { type: 'number', default: 3, describe: 'Overlapping startups for the tool-catalog checks (CAT-1, CAT-2)', group: 'Run:' },
  jobs: {
    alias: 'j',
    type: 'number',
    default: availableParallelism(),
    describe: 'Scenarios acting on their servers at once (their servers may start meanwhile)',
    group: 'Run:',
  },
  explore: {
    type: 'number',
    describe: `Random call sequences to explore, each on a fresh server (explore/sequences-hold-contract); 0 or --no-explore turns it off [default: ${EXPLORE_DEFAULTS.runs}]`,
    group: 'Exploration:',
  },
  'explore-seed': {
    type: 'number',
    describe: `Seed of the sequence generator: the same seed gives the same sequences [default: ${EXPLORE_DEFAULTS.seed}]`,
    group: 'Exploration:',
  },
  'explore-time': {
    type: 'number',
    describe: 'Stop starting sequences after this many seconds (the sequences not started are not run)',
    group: 'Exploration:',
  },
  replay: { type: 'string', describe: 'Rerun exactly one sequence, <seed:path> as a failure report prints it', group: 'Exploration:' },
  soak: {
    type: 'number',
    describe:
      'One long-lived server per transport gets exploration traffic, with idle gaps, for this many seconds (explore/soak-holds-contract; off by default, e.g. --soak 600 nightly)',
    group: 'Exploration:',
  },
} as const satisfies Record<string, FlagDeclaration>;

/** Every flag of the server mode: its own, --only/--skip and the results flags (the API's options are these). */
export const SERVER_COMMAND_FLAGS = { ...SERVER_FLAGS, ...selectionFlags(SELECTION_EXAMPLE), ...RESULT_FLAGS };

/** The exploration budget from --explore/--no-explore, --explore-seed, --explore-time, --replay and the config; undefined when off. */
function exploreOptions(
  args: { explore?: unknown; 'explore-seed'?: unknown; 'explore-time'?: unknown; replay?: unknown },
  config: ConfigFile,
): ExploreOptions | undefined {
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

/** The server-mode command line: what it accepts, its help, and the result and selection options. */
export function serverParser(argv: string[]) {
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
    .options(SERVER_FLAGS)
    .epilog(
      [
        'Exit codes: 0 conformant, 1 violations, 2 usage or config error, 3 incomplete (a check that applies could not run), 4 target failed to start, 129/130/143 interrupted by SIGHUP/SIGINT/SIGTERM (servers killed, temp files removed).',
        'A live progress line goes to stderr on a terminal (not when output is redirected or CI is set).',
        'Docs: README.md; each check: mcp-sandbox-conformance explain <id>.',
      ].join('\n'),
    )
    .parserConfiguration({ 'halt-at-non-option': true, 'populate--': true })
    .version(version);
  return resultOptions(selectionOptions(parser, SELECTION_EXAMPLE)).requiresArg(valueFlags(SERVER_COMMAND_FLAGS));
}

export type ServerArgs = Awaited<ReturnType<ReturnType<typeof serverParser>['parseAsync']>>;

/** The server to test: from a Codex config entry (--codex-config --server) or the command line, and its HTTP side. */
function serverTarget(args: ServerArgs): { codexEntry?: CodexServerEntry; command: string[] } {
  const positional = (args._ as (string | number)[]).map(String);
  const dashDash = ((args['--'] as (string | number)[] | undefined) ?? []).map(String);
  checkGivenOnce(args, SERVER_COMMAND_FLAGS);
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
  if (args['http-command'] && !args['http-command'].includes('{port}')) throw new UsageError('--http-command must contain {port}');
  return { codexEntry, command };
}

/** Timeouts and counts out of range: usage errors before anything starts. */
function checkFlagValues(args: ServerArgs): void {
  for (const flag of ['startup-timeout', 'call-timeout', 'scenario-timeout', 'run-timeout'] as const) {
    if (args[flag] !== undefined) timeoutSeconds(args[flag], `--${flag}`);
  }
  for (const [flag, value] of [
    ['max-message-mb', args['max-message-mb']],
    ['jobs', args.jobs],
    ['catalog-startups', args['catalog-startups']],
  ] as const) {
    if (value === undefined) continue;
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
  const soak = args.soak !== undefined ? { seconds: timeoutSeconds(args.soak, '--soak') } : undefined;
  // Every file and directory the run will write, checked before any server starts.
  checkOutputPaths(listOf(args.reporter), args.transcripts);
  // Without the flag the harness's default holds (harness/target.ts): one place for it.
  const maxMessageBytes = args['max-message-mb'] !== undefined ? { maxMessageBytes: Math.floor(args['max-message-mb'] * 1024 * 1024) } : {};
  // From a Codex config the command runs exactly as Codex spawns it; on the command line a .js file runs with node.
  const stdioOf = (argv: string[], environment: Record<string, string>): StdioTarget =>
    codexEntry?.stdio ? { kind: 'stdio', command: argv[0]!, args: argv.slice(1), environment, cwd } : stdioTarget(argv, environment, cwd);
  const httpHeaders = codexEntry?.http && Object.keys(codexEntry.http.headers).length ? { headers: codexEntry.http.headers } : {};
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
    exec: execs.length ? execs : execEntries(config.exec).map((e) => ({ ...e, source: 'config' as const })),
    exerciseAllTools: args['exercise-all-tools'] ?? false,
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
  { progress, terminal, signal }: ServerRunHooks,
): Promise<ReportData> {
  plan.onProgress = progress.onProgress;
  plan.signal = signal;
  let report;
  try {
    report = await runSuite(plan, allScenarios);
  } finally {
    progress.stop();
  }
  // Aborted: every server is gone and the temp dir removed (runSuite's end); no report.
  signal?.throwIfAborted();
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
  return emitReport(
    report,
    args,
    {
      target: targetText,
      version,
      checks: allChecks,
      ...(codexEntry
        ? {
            codexConfig: { file: codexEntry.file, server: codexEntry.name, command: command.length ? command : undefined, url: codexEntry.http?.url },
            secrets: codexEntry.secrets,
          }
        : {}),
    },
    terminal,
  );
}

/** What the caller of a run brings: its progress line, where the terminal output goes, a signal that aborts it. */
export interface ServerRunHooks {
  progress: Progress;
  terminal?: Terminal;
  signal?: AbortSignal;
}

/** The server mode once its flags are parsed: the plan, the run, and every report. Throws `signal.reason` once aborted. */
export async function runServerMode(args: ServerArgs, hooks: ServerRunHooks): Promise<ReportData> {
  const target = serverTarget(args);
  const { plan, ...given } = planOf(args, target);
  return runAndReport(plan, args, target, given, hooks);
}
