import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import yargs from 'yargs';
import type { Transport } from '../harness/codex-wire.js';
import { hostProgram, HostNotFound } from '../harness/host-mode/host-program.js';
import { cleanupHostMode } from '../harness/host-mode/live.js';
import { packageRoot } from '../harness/paths.js';
import { POLICY_CHANGES } from '../harness/host-mode/drive.js';
import { hostCheckDefs, hostChecks, runHostMode as runHostChecks, type HostRunReport } from '../suites/host.js';
import { globMatcher, parseEnvPairs, UsageError } from './config.js';
import { EXIT, EXIT_SIGNAL, exitCodeFor } from './exit-codes.js';
import { renderTable } from './reporters/catalog.js';
import { renderHuman } from './reporters/human.js';

/**
 * `mcp-sandbox-conformance host`: the mirror image of the suite. Instead of playing Codex
 * against a server, it points a host (real Codex by default) at a recording MCP server and
 * checks what the host sends against CONTRACT.md §2 and §4 (HOST-1..HOST-4).
 */

const version = (): string => (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;

const useColor = (flag: boolean | undefined): boolean => {
  if (flag !== undefined) return flag;
  if ('NO_COLOR' in process.env && process.env.NO_COLOR !== '') return false;
  return Boolean(process.stdout.isTTY);
};

const USAGE = [
  'Checks a Codex host (not a server) against the sandbox-metadata contract, CONTRACT.md §2 and §4 (HOST-1..HOST-4).',
  'A recording MCP server watches what the host sends. The host runs offline: a scripted model on 127.0.0.1',
  'makes it call the recording tool, a private CODEX_HOME holds its config, and nothing goes to the internet.',
  '',
  'Usage:',
  '  $0 host [options]                      the real Codex of the @openai/codex devDependency',
  '  $0 host --codex PATH [options]         your own Codex build (or any program with the same CLI subset)',
  '',
  'Per transport (stdio, Streamable HTTP on a free loopback port) the host runs two scenarios:',
  '  exec        `<codex> exec --skip-git-repo-check <prompt>`: the model calls the recording tool twice in a row,',
  '              then the tool of a second recording server that did not opt in',
  '  app-server  `<codex> app-server` over JSON-RPC: initialize, thread/start, mcpServer/tool/call with caller _meta',
  '              (unrelated keys, a caller threadId and progressToken, stale sandbox entries, non-objects; stale entries',
  '              also to a server that did not opt in), mcpServer/resource/read with reserved keys, non-objects, null and',
  '              ordinary _meta, then one turn per policy change (--policy-changes), alternating readOnly/workspaceWrite',
  '',
  'The host must read $CODEX_HOME/config.toml (model_providers, mcp_servers with command/args or url) and offer',
  'MCP tools to a Responses-API model as namespace mcp__<server>. A .js/.mjs/.cjs PATH runs with this node; the',
  'deliberately broken fixture fixtures/hosts/broken-host.mjs (defects chosen with --env BROKEN_HOST_DEFECTS=...)',
  'shows how each check fails.',
].join('\n');

export async function runHostMode(argv: string[]): Promise<number> {
  const parser = yargs(argv)
    .scriptName('mcp-sandbox-conformance')
    .usage(USAGE)
    .option('codex', { type: 'string', describe: 'The host to check: a Codex executable (default: the @openai/codex devDependency\'s native binary)', group: 'Host:' })
    .option('transport', { choices: ['stdio', 'http', 'both'] as const, default: 'both' as const, describe: 'How the host reaches the recording server', group: 'Host:' })
    .option('env', { type: 'string', describe: 'Extra environment for the host, NAME=VALUE (repeatable)', group: 'Host:' })
    .option('timeout', { type: 'number', default: 120, describe: 'Seconds one host run (an exec, or the app-server session) may take', group: 'Run:' })
    .option('policy-changes', { type: 'number', default: POLICY_CHANGES, describe: 'Times the app-server session changes the sandbox policy between turns (Codex 0.171.0 misses some changes, at random)', group: 'Run:' })
    .option('think-ms', { type: 'number', default: 0, describe: 'Milliseconds the scripted model waits before each tool call (a real model takes seconds)', group: 'Run:' })
    .option('jobs', { alias: 'j', type: 'number', default: 2, describe: 'Host runs at once (two per transport)', group: 'Run:' })
    .option('only', { type: 'string', describe: 'Run only checks whose id matches a glob (repeatable), e.g. "host/resource-*"', group: 'Run:' })
    .option('skip', { type: 'string', describe: 'Leave out checks whose id matches a glob (repeatable)', group: 'Run:' })
    .option('strict', { type: 'boolean', default: false, describe: 'SHOULD findings fail the run (same as --fail-on should)', group: 'Results:' })
    .option('fail-on', { choices: ['must', 'should'] as const, default: 'must' as const, describe: 'Lowest level whose failure fails the run', group: 'Results:' })
    .option('verbose', { type: 'boolean', default: false, describe: 'Also print what went wrong while driving the host, and its stderr tail', group: 'Results:' })
    .option('color', { type: 'boolean', describe: 'Force colors on or off (default: on for a terminal, off with NO_COLOR)', group: 'Results:' })
    .epilog(
      [
        'Checks: mcp-sandbox-conformance host --list; each one: mcp-sandbox-conformance host --explain <id>.',
        'Exit codes: 0 conformant, 1 violations, 2 usage error, 3 incomplete (a check could not run), 4 the host could not be started.',
      ].join('\n'),
    )
    .option('list', { type: 'boolean', describe: 'List the host checks and exit', group: 'Results:' })
    .option('explain', { type: 'string', describe: 'Explain one host check and exit', group: 'Results:' })
    .strict()
    .help()
    .alias('h', 'help')
    .version(false)
    .wrap(Math.min(120, process.stdout.columns || 120))
    .exitProcess(false)
    .fail((message, error) => {
      throw new UsageError(message ?? error?.message ?? 'invalid arguments');
    });
  const args = await parser.parseAsync();
  if (args.help) return EXIT.ok;
  if ((args._ as unknown[]).length) throw new UsageError(`host takes no positional arguments (got ${(args._ as unknown[]).join(' ')}); see host --help`);
  const many = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

  if (args.list) {
    process.stdout.write(renderHostList());
    return EXIT.ok;
  }
  if (args.explain !== undefined) {
    const check = hostChecks.find((c) => c.id === args.explain);
    if (!check) throw new UsageError(`unknown host check "${args.explain}"; see mcp-sandbox-conformance host --list`);
    process.stdout.write(renderHostExplain(check));
    return EXIT.ok;
  }
  for (const [flag, value] of [['timeout', args.timeout], ['jobs', args.jobs]] as const) {
    if (!(Number(value) > 0)) throw new UsageError(`--${flag} must be a positive number`);
  }
  if (!(args['think-ms'] >= 0)) throw new UsageError('--think-ms must be 0 or more');
  if (!(Number.isInteger(args['policy-changes']) && args['policy-changes'] >= 1)) throw new UsageError('--policy-changes must be a whole number, 1 or more');
  const only = many(args.only).length ? globMatcher(many(args.only)) : () => true;
  const skip = many(args.skip).length ? globMatcher(many(args.skip)) : () => false;
  const select = (id: string) => only(id) && !skip(id);
  if (!hostCheckDefs.some((c) => select(c.id))) throw new UsageError('--only/--skip leave no host check to run; see host --list');

  let host;
  try {
    host = hostProgram(args.codex);
  } catch (error) {
    if (!(error instanceof HostNotFound)) throw error;
    process.stderr.write(`mcp-sandbox-conformance: ${error.message}\n`);
    return EXIT.targetFailed;
  }
  const transports: Transport[] = args.transport === 'both' ? ['stdio', 'http'] : [args.transport];
  const strict = args.strict || args['fail-on'] === 'should';

  for (const [signal, code] of Object.entries(EXIT_SIGNAL) as [keyof typeof EXIT_SIGNAL, number][]) {
    process.once(signal, () => {
      cleanupHostMode();
      process.stderr.write(`\nmcp-sandbox-conformance: interrupted (${signal}); host processes stopped, temp files removed\n`);
      process.exit(code);
    });
  }
  const report = await runHost(host, transports, args, select, strict, many(args.env));
  process.stdout.write(renderHostReport(report, useColor(args.color), host.display, args.verbose));
  return exitCodeFor(report);
}

async function runHost(
  host: ReturnType<typeof hostProgram>,
  transports: Transport[],
  args: { timeout: number; jobs: number; 'think-ms': number; 'policy-changes': number },
  select: (id: string) => boolean,
  strict: boolean,
  env: string[],
): Promise<HostRunReport> {
  const report = await runHostChecks({
    host,
    transports,
    timeoutMs: args.timeout * 1000,
    jobs: Math.floor(args.jobs),
    thinkMs: args['think-ms'],
    policyChanges: args['policy-changes'],
    env: parseEnvPairs(env),
    select,
  });
  if (strict) for (const result of report.results) if (result.status === 'warn') result.status = 'fail';
  return report;
}

type HostCheck = (typeof hostChecks)[number];

/** `host --list`: one line per check: id, rule, level, transports, scenario, title. */
export function renderHostList(): string {
  const rows = hostChecks.map((c) => [c.id, c.rule, c.level, c.transports.join('+'), c.scenario, c.title]);
  return `${renderTable(['check', 'rule', 'level', 'transports', 'scenario', 'title'], rows)}${hostChecks.length} host checks\n`;
}

/** `host --explain <id>`: the rule in our words, what the suite observes, why, the usual host mistake, the fix. */
export function renderHostExplain(check: HostCheck): string {
  return [
    `${check.id}  (${check.rule}, ${check.level})`,
    check.title,
    '',
    `Rule: ${check.summary}`,
    `What the suite observes: ${check.observes}`,
    `Why it matters: ${check.why}`,
    `How hosts get it wrong: ${check.typicalMistake}`,
    `How to fix it: ${check.fix}`,
    `Observed in: the ${check.scenario} scenario, over ${check.transports.join(' and ')}`,
    '',
  ].join('\n');
}

/** The suite's human report, with a header that says which side is real. */
export function renderHostReport(report: HostRunReport, color: boolean, hostDisplay: string, verbose = false): string {
  const body = renderHuman({ ...report, serverInfo: undefined }, { color, target: hostDisplay, version: version(), checks: hostCheckDefs });
  const lines = body.split('\n');
  const info = report.hostInfo as { name?: unknown; title?: unknown; version?: unknown } | undefined;
  const header = [
    `mcp-sandbox-conformance ${version()} host mode · recording server watches: ${hostDisplay}`,
    ...(info ? [`host clientInfo: ${String(info.name ?? '?')} ${String(info.version ?? '')}`.trimEnd()] : []),
  ];
  // renderHuman's first line names the fake host; in host mode the host is the one under test.
  const rest = lines[0]?.includes('mcp-sandbox-conformance') ? lines.slice(1) : lines;
  const problems = report.observations.flatMap((o) =>
    [
      ...o.exec.problems.map((p) => `${o.transport} exec: ${p}`),
      ...o.app.problems.map((p) => `${o.transport} app-server: ${p}`),
    ],
  );
  const notes: string[] = [];
  const incomplete = report.results.some((r) => r.status === 'skip' && r.reason === 'could-not-run');
  if (problems.length && (verbose || incomplete)) notes.push('While driving the host:', ...[...new Set(problems)].map((p) => `  ${p}`));
  if (verbose) {
    const ran = (ms: number) => (ms ? `${ms} ms` : 'not run');
    for (const o of report.observations) {
      notes.push(`${o.transport}: exec ${ran(o.exec.durationMs)}, app-server ${ran(o.app.durationMs)}`);
      if (o.exec.stderr.trim()) notes.push(`  exec stderr (tail): ${o.exec.stderr.trim().split('\n').slice(-5).join(' | ')}`);
    }
  }
  // Keep the tally alone on the last line (renderHuman ends with a blank line, the tally, '').
  const tallyIndex = rest.length - 2;
  return [...header, ...rest.slice(0, tallyIndex), ...notes, ...(notes.length ? [''] : []), ...rest.slice(tallyIndex)].join('\n');
}
