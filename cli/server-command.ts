import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../harness/paths.js';
import { codexServerEnvironment, userServerEnvironment } from '../harness/codex-environment.js';
import { containment } from '../harness/containment.js';
import { allChecks, allScenarios } from '../suites/index.js';
import { EXPLORE_DEFAULTS } from '../suites/server/explore.js';
import type { ExploreOptions } from '../suites/engine/model.js';
import type { StdioTarget } from '../harness/target.js';
import { defaultScenarioTimeoutMs, runSuite, type RunPlan } from '../suites/engine/runner.js';
import {
  assertDirectory,
  envVarNames,
  loadConfig,
  exploreSeed,
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
import type { Progress } from './progress.js';
import { checkGivenOnce, SELECTION_EXAMPLE, SERVER_COMMAND_FLAGS, SERVER_FLAGS, valueFlags, type Terminal } from './flags.js';
import { cliParser, listOf, selectionOf, selectionOptions } from './parser.js';
import { checkOutputPaths, emitReport, resultOptions } from './results.js';
import type { ReportData } from './reporters/index.js';
import { assertLoopbackUrl, realCodexPath, stdioTarget, unlistedExecTool, type CliStdioTarget } from './target.js';

/**
 * The server mode (`mcp-sandbox-conformance [options] <server>`): its flags, the plan they ask for,
 * the run and its reports. The CLI (main.ts) and the API (cli/api.ts) both run it: one engine.
 */

export const version = (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;

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
  const slowCommandMs = args['slow-command'] !== undefined ? Math.round(timeoutSeconds(args['slow-command'], '--slow-command') * 1000) : undefined;
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
      ...(slowCommandMs !== undefined ? { slowCommandMs } : {}),
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
