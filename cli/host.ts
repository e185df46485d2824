import type { Transport } from '../harness/codex-wire.js';
import { hostProgram, HostNotFound } from '../harness/host-mode/host-program.js';
import { POLICY_CHANGES, type HostExploreOptions } from '../harness/host-mode/drive.js';
import { runHostChecks } from '../suites/host/index.js';
import { checksOf, transportsOf } from '../suites/index.js';
import { exploreSeed, exploreSequences, parseEnvPairs, parseReplay, UsageError } from './config.js';
import { HOST_EXPLORE_DEFAULTS, STEP_KINDS } from '../suites/host/explore.js';
import { EXIT } from './exit-codes.js';
import { createProgress } from './progress.js';
import { renderExplain, renderList } from './reporters/catalog.js';
import { cliParser, listOf, selectionOf, selectionOptions } from './parser.js';
import { checkOutputPaths, emitResults, resultOptions } from './results.js';

/**
 * `mcp-sandbox-conformance host`: the mirror image of the suite. Instead of playing Codex
 * against a server, it points a host (real Codex by default) at a recording MCP server and
 * checks what the host sends against CONTRACT.md §2 and §4 (HOST-1..HOST-4). Only driving the
 * host is its own: the results go through the same reporters, baseline and transcripts as the
 * server mode's (cli/results.ts).
 */

const USAGE = [
  'Checks a Codex host (not a server) against the sandbox-metadata contract, CONTRACT.md §2 and §4 (HOST-1..HOST-4).',
  'A recording MCP server watches what the host sends. The host runs offline: a scripted model on 127.0.0.1',
  'makes it call the recording tool, a private CODEX_HOME holds its config, and nothing goes to the internet.',
  '',
  'Usage:',
  '  $0 host [options]                      the real Codex of the @openai/codex devDependency',
  '  $0 host --codex PATH [options]         your own Codex build (or any program with the same CLI subset)',
  '',
  'Per transport (stdio, Streamable HTTP on a free loopback port) one scenario runs the host twice, side by side:',
  '  exec        `<codex> exec --skip-git-repo-check <prompt>`: the model calls the recording tool twice in a row,',
  '              then the tool of a second recording server that did not opt in',
  '  app-server  `<codex> app-server` over JSON-RPC: initialize, thread/start, mcpServer/tool/call with caller _meta',
  '              (unrelated keys, a caller threadId and progressToken, stale sandbox entries, non-objects; stale entries',
  '              also to a server that did not opt in), mcpServer/resource/read with reserved keys, non-objects, null and',
  '              ordinary _meta, then one turn per policy change (--policy-changes), alternating readOnly/workspaceWrite',
  'and host exploration: random sequences (--explore per transport, --explore-seed), each on a fresh host, of app-server',
  '  steps (threads with their own policy and cwd; turns that change either or neither, whose model makes 1-4 calls in one',
  '  response or several, to both servers; direct calls and resource reads with caller _meta in any shape and order) and',
  '  exec runs (several and parallel calls). A violation fails the check of the rule broken, with the sequence shrunk to',
  '  the shortest that still shows it, told step by step; --replay <token> reruns exactly it.',
  '',
  'The host must read $CODEX_HOME/config.toml (model_providers, mcp_servers with command/args or url) and offer',
  'MCP tools to a Responses-API model as namespace mcp__<server>. A .js/.mjs/.cjs PATH runs with this node; the',
  'deliberately broken fixture fixtures/hosts/broken-host.mjs (defects chosen with --env BROKEN_HOST_DEFECTS=...)',
  'shows how each check fails.',
].join('\n');

const VALUE_OPTIONS = [
  'codex',
  'env',
  'timeout',
  'policy-changes',
  'think-ms',
  'jobs',
  'explore',
  'explore-seed',
  'replay',
  'only',
  'skip',
  'explain',
  'reporter',
  'transcripts',
  'baseline',
];

export async function hostCommand(argv: string[], version: string): Promise<number> {
  const parser = cliParser(argv, USAGE, 120)
    .option('codex', {
      type: 'string',
      describe: "The host to check: a Codex executable (default: the @openai/codex devDependency's native binary)",
      group: 'Host:',
    })
    .option('transport', {
      choices: ['stdio', 'http', 'both'] as const,
      default: 'both' as const,
      describe: 'How the host reaches the recording server',
      group: 'Host:',
    })
    .option('env', { type: 'string', describe: 'Extra environment for the host, NAME=VALUE (repeatable)', group: 'Host:' })
    .option('timeout', { type: 'number', default: 120, describe: 'Seconds one host run (an exec, or the app-server session) may take', group: 'Run:' })
    .option('policy-changes', {
      type: 'number',
      default: POLICY_CHANGES,
      describe: 'Times the app-server session changes the sandbox policy between turns (Codex 0.171.0 misses some changes, at random)',
      group: 'Run:',
    })
    .option('think-ms', {
      type: 'number',
      default: 0,
      describe: 'Milliseconds the scripted model waits before each tool call (a real model takes seconds)',
      group: 'Run:',
    })
    .option('jobs', {
      alias: 'j',
      type: 'number',
      default: 2,
      describe: 'Transports checked at once (each runs its exec and app-server hosts side by side)',
      group: 'Run:',
    })
    .option('explore', {
      type: 'number',
      default: HOST_EXPLORE_DEFAULTS.runs,
      describe: 'Random sequences to explore per transport, each on a fresh host; 0 or --no-explore turns exploration off',
      group: 'Exploration:',
    })
    .option('explore-seed', {
      type: 'number',
      default: HOST_EXPLORE_DEFAULTS.seed,
      describe: 'Seed of the sequence generator: the same seed gives the same sequences',
      group: 'Exploration:',
    })
    .option('replay', {
      type: 'string',
      describe: 'Rerun exactly one sequence, <seed:path> as a failure report prints it (on each transport of the run)',
      group: 'Exploration:',
    })
    .option('list', { type: 'boolean', describe: 'List the host checks and exit (mcp-sandbox-conformance list shows them too)', group: 'Results:' })
    .option('explain', { type: 'string', describe: 'Explain one host check and exit (same as mcp-sandbox-conformance explain <id>)', group: 'Results:' })
    .epilog(
      [
        'Checks: mcp-sandbox-conformance host --list; each one: mcp-sandbox-conformance host --explain <id>.',
        'Exit codes: 0 conformant, 1 violations, 2 usage error, 3 incomplete (a check could not run), 4 the host could not be started, 129/130/143 interrupted by SIGHUP/SIGINT/SIGTERM (hosts killed, temp files removed).',
      ].join('\n'),
    )
    .version(false);
  const args = await resultOptions(selectionOptions(parser, 'host/resource-*')).requiresArg(VALUE_OPTIONS).parseAsync();
  if (args.help) return EXIT.ok;
  if ((args._ as unknown[]).length) throw new UsageError(`host takes no positional arguments (got ${(args._ as unknown[]).join(' ')}); see host --help`);

  if (args.list) {
    process.stdout.write(renderList(checksOf('host'), transportsOf));
    return EXIT.ok;
  }
  if (args.explain !== undefined) {
    const check = checksOf('host').find((c) => c.id === args.explain);
    if (!check) throw new UsageError(`unknown host check "${args.explain}"; see mcp-sandbox-conformance host --list`);
    process.stdout.write(renderExplain(check));
    return EXIT.ok;
  }
  for (const [flag, value] of [
    ['timeout', args.timeout],
    ['jobs', args.jobs],
  ] as const) {
    if (!(Number(value) > 0)) throw new UsageError(`--${flag} must be a positive number`);
  }
  if (!(args['think-ms'] >= 0)) throw new UsageError('--think-ms must be 0 or more');
  if (!(Number.isInteger(args['policy-changes']) && args['policy-changes'] >= 1)) throw new UsageError('--policy-changes must be a whole number, 1 or more');
  const explore = exploreOptionsOf(args);
  const transports: Transport[] = args.transport === 'both' ? ['stdio', 'http'] : [args.transport];
  // Only the checks of the transports in the run: a selection of none of them would be a green run of nothing.
  const runnable = checksOf('host').filter((c) => transportsOf(c.id).some((t) => transports.includes(t)));
  const select = selectionOf(args, runnable, `host --list (over --transport ${args.transport})`);
  // A host run takes a minute: a report that cannot be written is said before it starts.
  checkOutputPaths(listOf(args.reporter), args.transcripts);

  let host;
  try {
    host = hostProgram(args.codex);
  } catch (error) {
    if (!(error instanceof HostNotFound)) throw error;
    const why = error.given === undefined ? `no Codex to check: give --codex PATH (${error.message})` : `--codex ${error.given}: ${error.message}`;
    process.stderr.write(`mcp-sandbox-conformance: ${why}\n`);
    return EXIT.targetFailed;
  }
  const progress = createProgress();
  // What each transport's exploration drew, for the header.
  const covered = new Map<Transport, string[]>();
  if (explore.runs > 0 && !explore.replay) explore.onCovered = (transport, kinds) => covered.set(transport, kinds);
  let report;
  try {
    report = await runHostChecks({
      host,
      transports,
      timeoutMs: args.timeout * 1000,
      jobs: Math.floor(args.jobs),
      thinkMs: args['think-ms'],
      policyChanges: args['policy-changes'],
      explore,
      env: parseEnvPairs(listOf(args.env)),
      select,
      onProgress: progress.onProgress,
    });
  } finally {
    progress.stop();
  }
  const header = [
    explore.runs === 0
      ? 'exploration: off'
      : explore.replay
        ? `exploration: replaying ${explore.replay.seed}:${explore.replay.path} on each transport`
        : `exploration: ${explore.runs} sequence${explore.runs === 1 ? '' : 's'} per transport, seed ${explore.seed} (--explore, --explore-seed)`,
    ...transports.flatMap((transport) => {
      const kinds = covered.get(transport);
      if (!kinds) return [];
      const missed = STEP_KINDS.filter((k) => !kinds.includes(k));
      return `exploration over ${transport} drew ${kinds.length} of ${STEP_KINDS.length} kinds of step${missed.length ? `; not: ${missed.join(', ')}` : ' (every kind)'}`;
    }),
  ];
  return emitResults(report, args, { target: host.display, version, checks: checksOf('host'), mode: 'host', header });
}

/** The exploration budget from --explore/--no-explore, --explore-seed and --replay. */
function exploreOptionsOf(args: { explore?: unknown; 'explore-seed'?: unknown; replay?: unknown }): HostExploreOptions {
  // yargs reads --no-explore as explore: false.
  const runs = args.explore === false ? 0 : exploreSequences(args.explore, '--explore');
  const seed = exploreSeed(args['explore-seed'], '--explore-seed');
  const replay = typeof args.replay === 'string' ? parseReplay(args.replay) : undefined;
  if (replay && runs === 0) throw new UsageError('--replay needs exploration on: drop --no-explore / --explore 0');
  return { runs: replay ? 1 : runs, seed, ...(replay ? { replay } : {}) };
}
