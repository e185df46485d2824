import { grade, strictOf } from './grade.js';
import { withHints } from './hints.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { ChalkInstance } from 'chalk';
import type { Argv } from 'yargs';
import { scenarioKey, type CheckDef } from '../suites/engine/model.js';
import type { RunReport } from '../suites/engine/runner.js';
import {
  applyBaseline,
  entryForFailure,
  formatEntries,
  loadBaseline,
  PLACEHOLDER_REASON,
  unexpectedFailures,
  serializeBaseline,
  updatedEntries,
  type BaselineEntry,
  type ReportedResult,
} from './baseline.js';
import { assertOutputDirectory, assertWritableFile, globMatcher, loadConfig, UsageError } from './config.js';
import { listOf } from './parser.js';
import { RESULT_FLAGS, type Terminal, type TextOut } from './flags.js';
import { EXIT, exitCodeFor } from './exit-codes.js';
import type * as HumanReporter from './reporters/human.js';
import { parseReporters, scenarioOf, transcriptFileOf, type ReportData, type ReporterName, type TargetDescription } from './reporters/index.js';
import { envSecrets, inGithubActions, neutralize, sanitizeRun, urlSecrets } from './sanitize.js';
import { formatTranscript, redactArgv, redactText, writeTranscripts } from './transcripts.js';

/**
 * What happens after the run: the baseline turns known failures into xfail (and known failures
 * that went away into xpass), every reporter writes its format, transcripts go to disk, and the
 * exit code is decided. Data flows one way (README, Layout): the runner's report in, files and an exit
 * code out; nothing here touches a target.
 */

/** The results flags, validated while parsing: exit 2 before anything starts. */
export function resultOptions<T>(y: Argv<T>) {
  return y.options(RESULT_FLAGS).check((argv) => {
    checkResultArgs(argv as ResultArgs);
    return true;
  });
}

export interface ResultArgs {
  reporter?: string | string[];
  transcripts?: string | string[];
  trace?: boolean;
  verbose?: boolean;
  baseline?: string | string[];
  'update-baseline'?: boolean;
  color?: boolean;
  strict?: boolean;
  'fail-on'?: string;
  url?: string;
  'http-command'?: string;
  env?: string | string[];
  config?: string;
  skip?: string | string[];
  _: (string | number)[];
  '--'?: (string | number)[];
}

export interface ResultContext {
  /** The target as one line (redacted here before any report shows it). */
  target: string;
  version: string;
  checks: CheckDef[];
  /** 'host' when the run checked a host (`host` subcommand), not a server: the reports say so. */
  mode?: 'host';
  /** The Codex config entry the target came from (--codex-config --server): its command or URL, not the command line's. */
  codexConfig?: { file: string; server: string; command?: string[]; url?: string };
  /** Lines for the human report's header, under the target (host mode: its exploration budget). */
  header?: string[];
  /** More exact strings no report may repeat (a Codex config's bearer token and header values). */
  secrets?: string[];
}

function single(args: ResultArgs, flag: 'baseline' | 'transcripts'): string | undefined {
  const values = listOf(args[flag]);
  if (values.length > 1) throw new UsageError(`--${flag} given more than once`);
  if (values[0] === '') throw new UsageError(`--${flag} needs a path`);
  return values[0];
}

/** Everything about the results flags that can be wrong before the run starts. */
export function checkResultArgs(args: ResultArgs): void {
  parseReporters(listOf(args.reporter));
  single(args, 'transcripts');
  const baseline = single(args, 'baseline');
  if (args['update-baseline'] && !baseline) throw new UsageError('--update-baseline needs --baseline FILE (the file to write)');
  if (baseline) loadBaseline(baseline, { mayBeMissing: Boolean(args['update-baseline']) });
}

/** Every file and directory the run will write must be writable: checked before anything starts. */
export function checkOutputPaths(reporters: string[], transcripts: string | string[] | undefined): void {
  const files = new Map<string, string>();
  for (const spec of parseReporters(reporters)) {
    if (spec.path === undefined) continue;
    const label = `--reporter ${spec.name}=${spec.path}`;
    assertWritableFile(label, spec.path);
    const earlier = files.get(resolve(spec.path));
    if (earlier) throw new UsageError(`${label}: ${earlier} writes that file too`);
    files.set(resolve(spec.path), `--reporter ${spec.name}`);
  }
  if (typeof transcripts === 'string') assertOutputDirectory(`--transcripts ${transcripts}`, transcripts);
}

function colorFor(stream: TextOut, flag: boolean | undefined): boolean {
  if (flag !== undefined) return flag;
  if ('NO_COLOR' in process.env && process.env.NO_COLOR !== '') return false;
  return Boolean(stream.isTTY);
}

function describeTarget(args: ResultArgs, context: ResultContext, secrets: string[]): TargetDescription {
  const entry = context.codexConfig;
  const command = entry ? (entry.command ?? []) : [...args._, ...(args['--'] ?? [])].map(String);
  const url = args.url ?? entry?.url;
  const text = (value: string) => neutralize(redactText(value, secrets));
  const display = context.target;
  return {
    ...(entry ? { codexConfig: { file: text(entry.file), server: text(entry.server) } } : {}),
    ...(command.length ? { command: redactArgv(command).map(text) } : {}),
    ...(url ? { url: text(url) } : {}),
    ...(args['http-command'] ? { httpCommand: text(args['http-command']) } : {}),
    display: text(display),
  };
}

/**
 * The exact strings no report may repeat: the values of secret-looking --env variables (and config
 * env), and the password of --url. Everything else is found by its shape (cli/sanitize.ts).
 */
export function userSecrets(args: ResultArgs): string[] {
  const env: Record<string, string> = {};
  try {
    Object.assign(env, loadConfig(args.config).config.env ?? {});
  } catch {
    // The run already loaded it; a config that cannot be read now has no secrets for us.
  }
  for (const pair of listOf(args.env)) {
    const eq = pair.indexOf('=');
    if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return [...envSecrets(env), ...urlSecrets(args.url)];
}

function writeOut(path: string, text: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  } catch (error) {
    throw new UsageError(`cannot write ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/**
 * Each format's renderer, loaded when a --reporter asks for it: the reporters (junit-report-builder,
 * the HTML page, chalk for the human report) cost CPU to load that --help or a usage error need not pay.
 */
const RENDER: Record<Exclude<ReporterName, 'human'>, () => Promise<(data: ReportData) => string>> = {
  json: async () => (await import('./reporters/json.js')).renderJson,
  junit: async () => (await import('./reporters/junit.js')).renderJunit,
  markdown: async () => (await import('./reporters/markdown.js')).renderMarkdown,
  github: async () => (await import('./reporters/github.js')).renderGithub,
  html: async () => (await import('./reporters/html.js')).renderHtml,
};

/** The checks --skip left out: a could-not-run they block is a cause the user set aside (cli/exit-codes.ts). */
function skippedBy(args: ResultArgs, checks: CheckDef[]): { skipped?: string[] } {
  const globs = listOf(args.skip);
  if (globs.length === 0) return {};
  const matches = globMatcher(globs);
  return { skipped: checks.filter((check) => matches(check.id)).map((check) => check.id) };
}

/** Applies the baseline, writes every report and transcript, and returns the exit code. */
export async function emitResults(rawReport: RunReport, args: ResultArgs, context: ResultContext, terminal?: Terminal): Promise<number> {
  return (await emitReport(rawReport, args, context, terminal)).exitCode;
}

/** emitResults, returning what every reporter rendered from (the JSON reporter's toDocument makes the JSON report of it). */
export async function emitReport(
  rawReport: RunReport,
  args: ResultArgs,
  context: ResultContext,
  { stdout, stderr }: Terminal = { stdout: process.stdout, stderr: process.stderr },
): Promise<ReportData> {
  // Server-derived text is hostile: neutralized, redacted and defused once, before anything renders it.
  const secrets = [...userSecrets(args), ...(context.secrets ?? [])];
  const graded = { ...rawReport, results: grade(rawReport.results, strictOf(args)), ...skippedBy(args, context.checks) };
  const report = sanitizeRun(withHints(graded, context.mode), secrets);
  const specs = parseReporters(listOf(args.reporter));
  const baselineFile = single(args, 'baseline');
  const transcriptsDir = single(args, 'transcripts');

  let results: ReportedResult[] = report.results;
  let baseline: ReportData['baseline'];
  if (baselineFile) {
    const loaded = loadBaseline(baselineFile, { mayBeMissing: Boolean(args['update-baseline']) });
    let entries = loaded.entries;
    let updated: { entries: number; added: number } | undefined;
    // A target that never started says nothing about any check: the file stays as it is.
    if (args['update-baseline'] && !report.startFailure) {
      entries = updatedEntries(report.results, loaded.entries, context.checks);
      writeOut(baselineFile, serializeBaseline(entries, loaded.format));
      updated = { entries: entries.length, added: entries.filter((e) => e.reason === PLACEHOLDER_REASON).length };
    }
    const outcome = applyBaseline(report.results, entries, context.checks, baselineFile);
    results = outcome.results;
    baseline = { file: baselineFile, format: loaded.format, stale: outcome.stale, unknown: outcome.unknown, ...(updated ? { updated } : {}) };
  }

  const suggestions: BaselineEntry[] = [];
  // Only for what fails the run: a warning needs no baseline entry to pass.
  for (const result of unexpectedFailures(results).filter((r) => r.status === 'fail')) {
    const entry = entryForFailure(result, report.results);
    if (!suggestions.some((s) => s.id === entry.id && s.transport === entry.transport)) suggestions.push(entry);
  }

  const applied = { ...report, results };
  let exitCode = exitCodeFor(applied);
  if (baseline?.unknown.length && exitCode !== EXIT.targetFailed) exitCode = EXIT.violations;

  const transcriptFiles = transcriptsDir ? writeTranscripts(transcriptsDir, report.scenarios) : new Map<string, string>();
  const data: ReportData = {
    report: applied,
    tool: { name: 'mcp-sandbox-conformance', version: context.version },
    target: describeTarget(args, context, secrets),
    checks: context.checks,
    ...(context.mode ? { mode: context.mode } : {}),
    failOn: strictOf(args) ? 'should' : 'must',
    exitCode,
    transcriptFiles,
    baseline,
    suggestions,
    startedAt: new Date(Date.now() - report.durationMs),
  };

  let stdoutTaken = false;
  for (const spec of specs) {
    if (spec.name === 'human') continue;
    const text = (await RENDER[spec.name]())(data);
    if (spec.path) writeOut(spec.path, text);
    else {
      stdout.write(text);
      stdoutTaken = true;
    }
  }
  // The human report comes last, so that on stdout its tally is the last line of the run.
  const human = await import('./reporters/human.js');
  for (const spec of specs.filter((s) => s.name === 'human' && s.path)) writeOut(spec.path!, humanReport(human, data, args, false, context.header));
  const terminal = stdoutTaken ? stderr : stdout;
  terminal.write(humanReport(human, data, args, colorFor(terminal, args.color), context.header));
  return data;
}

function humanReport({ renderHuman, stopCommands }: typeof HumanReporter, data: ReportData, args: ResultArgs, color: boolean, header?: string[]): string {
  // Trace lines come neutralized and defused from formatTranscript; in Actions they are wrapped too.
  const untrusted = (lines: string[]) => stopCommands(lines, inGithubActions());
  const traced = new Map<string, string>();
  return renderHuman(data.report, {
    color,
    verbose: Boolean(args.verbose),
    githubActions: inGithubActions(),
    target: data.target.display,
    version: data.tool.version,
    checks: data.checks,
    mode: data.mode,
    header,
    details: (result, indent, c) => {
      const r = result as ReportedResult;
      const lines: string[] = [];
      if (r.baseline && r.status === 'xfail') {
        lines.push(c.dim(`${indent}expected failure, baseline entry "${r.baseline.entry.id}": ${neutralize(r.baseline.entry.reason)}`));
        if (r.message) lines.push(c.dim(`${indent}${neutralize(r.message.split('\n')[0]!)}`));
      }
      if (args.trace && (r.status === 'fail' || r.status === 'warn' || r.status === 'error')) lines.push(...untrusted(traceLines(r, indent, c, traced, data)));
      return lines;
    },
    footer: (c) => footerLines(data, c),
  });
}

/** The scenario's transcript under a failure, once per scenario and transport (later failures point up). */
function traceLines(result: ReportedResult, indent: string, c: ChalkInstance, traced: Map<string, string>, data: ReportData): string[] {
  const scenario = scenarioOf(data, result);
  const key = scenarioKey(scenario.id, scenario.transport);
  const file = transcriptFileOf(data, scenario);
  const earlier = traced.get(key);
  if (earlier) return [c.dim(`${indent}transcript: shown above, under ${earlier}`)];
  traced.set(key, result.id);
  if (scenario.transcript.length === 0) return [c.dim(`${indent}transcript: empty (the scenario started no server)`)];
  return [
    c.dim(
      `${indent}transcript of scenario ${result.scenario} over ${result.transport} (${scenario.transcript.length} entries${file ? `, also in ${file}` : ''}):`,
    ),
    ...formatTranscript(scenario.transcript).map((line) => c.dim(`${indent}  ${line}`)),
  ];
}

function footerLines(data: ReportData, c: ChalkInstance): string[] {
  const out: string[] = [];
  const b = data.baseline;
  const list = (entries: BaselineEntry[]) => entries.map((e) => `  - ${e.id}${e.transport ? ` (${e.transport})` : ''}: ${e.reason}`);
  if (b?.updated) {
    const { added } = b.updated;
    out.push(
      '',
      c.bold(
        `Baseline ${b.file} rewritten: ${b.updated.entries} entr${b.updated.entries === 1 ? 'y' : 'ies'}${added ? `, ${added} with the placeholder reason "${PLACEHOLDER_REASON}": replace it with the real one` : ''}.`,
      ),
    );
  }
  if (b?.stale.length)
    out.push('', c.red.bold(`Stale baseline entries in ${b.file}: their checks pass now, remove them (or run with --update-baseline):`), ...list(b.stale));
  if (b?.unknown.length) out.push('', c.red.bold(`Baseline entries in ${b.file} that name no check (see mcp-sandbox-conformance list):`), ...list(b.unknown));
  if (data.suggestions.length) {
    const format = b?.format ?? 'yaml';
    const where = b ? `under "expectedFailures" in ${b.file}` : 'to a baseline file (--baseline FILE), under "expectedFailures"';
    const n = data.suggestions.length;
    out.push(
      '',
      `${n} failure${n === 1 ? '' : 's'} not in a baseline. To accept ${n === 1 ? 'it' : 'them'} for now, add ${where}, with the real reason:`,
      ...formatEntries(data.suggestions, format)
        .split('\n')
        .map((line) => `  ${line}`),
    );
  }
  return out;
}
