import { availableParallelism } from 'node:os';
import { ELICITATION_ANSWERS } from '../harness/elicitation.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../harness/stdio-transport.js';
import { DEFAULT_RUN_TIMEOUT_MS } from '../suites/engine/runner.js';
import { EXPLORE_DEFAULTS } from '../suites/server/explore.js';
import { DEFAULT_SLOW_COMMAND_MS } from '../suites/server/lifetime.js';
import { UsageError } from './config.js';

/**
 * The flags as declared, in tables yargs reads (cli/parser.ts, cli/server-command.ts) and the API's
 * options are typed from (cli/api.ts), and what follows from the declarations alone. Nothing here
 * imports yargs: the API's types reach this file and not the parser's.
 */

/**
 * A flag as declared: yargs's options, and what yargs cannot say about it: that it may be given
 * several times (its values then come as a list, listOf), or without its value (`--codex-config`
 * alone: the default file).
 */
export interface FlagDeclaration {
  type?: 'string' | 'number' | 'boolean';
  choices?: readonly string[];
  default?: unknown;
  alias?: string;
  describe: string;
  group: string;
  repeatable?: true;
  valueOptional?: true;
  /** Kept for old command lines, left out of --help. */
  hidden?: true;
}

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

/** The results flags, in the 'Results:' group of --help. */
export const RESULT_FLAGS = {
  reporter: {
    type: 'string',
    repeatable: true,
    describe:
      'Add a report: human, json[=FILE], junit[=FILE], markdown[=FILE], github, html[=FILE] (repeatable). Without a file a format writes to stdout, and the human report (always on) moves to stderr',
    group: 'Results:',
  },
  transcripts: {
    type: 'string',
    describe: "Write each scenario's wire transcript (JSONL, secrets redacted) into DIR, one file per scenario and transport",
    group: 'Results:',
  },
  trace: { type: 'boolean', describe: 'Print the transcript of the scenario under each failed check in the human report', group: 'Results:' },
  verbose: {
    type: 'boolean',
    describe: 'Under each finding in the human report, print the full expected and actual values too (by default only the diff, or them when there is no diff)',
    group: 'Results:',
  },
  baseline: {
    type: 'string',
    describe:
      'YAML or JSON file of expected failures, each with a reason: listed failures are xfail (exit 0); a listed check that passes, or an entry naming no check, fails the run',
    group: 'Results:',
  },
  'update-baseline': {
    type: 'boolean',
    describe: 'Rewrite the --baseline file from this run, keeping the reasons of entries that still apply',
    group: 'Results:',
  },
  strict: { type: 'boolean', default: false, describe: 'SHOULD findings fail the run (same as --fail-on should)', group: 'Results:' },
  'fail-on': {
    choices: ['must', 'should'],
    default: 'must',
    describe: 'Lowest level whose failure fails the run',
    group: 'Results:',
  },
  color: { type: 'boolean', describe: 'Force colors on or off (default: on for a terminal, off with NO_COLOR)', group: 'Results:' },
} as const satisfies Record<string, FlagDeclaration>;

/** Where a run's terminal output goes: the process's stdout and stderr for the CLI; the caller's, or nowhere, for the API. */
export interface Terminal {
  stdout: TextOut;
  stderr: TextOut;
}
export interface TextOut {
  write(text: string): unknown;
  isTTY?: boolean;
}

export const SELECTION_EXAMPLE = 'launcher/*';

/** The server mode's own flags, as --help shows them. */
export const SERVER_FLAGS = {
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
      'JSON arguments for --exec-tool (one per --exec-tool, in order, or none); "{{argv}}" becomes the command as an array, "{{command}}" as one shell-quoted string, "{{argv0}}" the program and "{{argvRest}}" the rest of the argv',
    group: 'Target:',
  },
  'skip-tool': {
    type: 'string',
    repeatable: true,
    describe:
      'Leave out a tool the suite would drive (repeatable); said in the report. Every other exec tool is driven, whatever its annotations and whichever tools --exec-tool names',
    group: 'Target:',
  },
  'exercise-all-tools': {
    type: 'boolean',
    describe: 'No effect (the default now: every exec tool is driven whatever its annotations); kept so that old command lines still run',
    group: 'Target:',
    hidden: true,
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
      'Session adapter JSON for the AUTH-2 session checks, instead of the session pairs detected in the tool list: {"open":{tool,arguments},"send":{tool,arguments with "{{sessionId}}" and "{{command}}"}}, optionally "sessionId":"<dotted path in the open result>" (default: structuredContent.sessionId and the like, else the only text block of the open result: its JSON sessionId, "session:<id>"-like text, or the whole text)',
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
  'slow-command': {
    type: 'number',
    describe: `Seconds the long commands run: two the resident server sends beside its idle gaps, and (with --soak) one after another through the soak; everything each causes is judged, also after its call returned, so a watchdog that reruns a command elsewhere after N seconds shows once this is over N [default: ${DEFAULT_SLOW_COMMAND_MS / 1000}, as long as a default run affords at no extra time]`,
    group: 'Run:',
  },
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
