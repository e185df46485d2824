import { Chalk, type ChalkInstance } from 'chalk';
import type { CheckDef } from '../../suites/engine/model.js';
import { blockedByExpectedFailure } from '../exit-codes.js';
import type { GradedReport, GradedResult, GradedStatus } from '../grade.js';
import { defuseWorkflowCommands, neutralize, neutralizeMultiline, stopToken } from '../sanitize.js';
import { counterexampleLines } from './counterexample.js';
import { elicitationNote, execSummary, sessionsSummary, toolsSummary } from './index.js';

/** The terminal gets no CR at all: CRLF becomes LF, a lone CR shows as "\\r". */
const LINES = { lines: true };

export interface Tally {
  passed: number;
  failed: number;
  skipped: number;
  /** The skipped, split by reason: not applicable to this target or run, and could not run. */
  notApplicable: number;
  couldNotRun: number;
  warnings: number;
  errors: number;
  xfail: number;
  xpass: number;
}

export function tally(results: GradedResult[]): Tally {
  const count = (...statuses: GradedStatus[]) => results.filter((r) => statuses.includes(r.status)).length;
  return {
    passed: count('pass'),
    failed: count('fail'),
    skipped: count('skip'),
    notApplicable: results.filter((r) => r.status === 'skip' && r.reason === 'not-applicable').length,
    couldNotRun: results.filter((r) => r.status === 'skip' && r.reason !== 'not-applicable').length,
    warnings: count('warn'),
    errors: count('error'),
    xfail: count('xfail'),
    xpass: count('xpass'),
  };
}

/** The closing line, alone: `N passed, N failed, N skipped`, then what else happened. */
export function summaryLine(t: Tally): string {
  const extra = [
    t.warnings ? `${t.warnings} warning${t.warnings === 1 ? '' : 's'}` : '',
    t.errors ? `${t.errors} error${t.errors === 1 ? '' : 's'}` : '',
    t.xfail ? `${t.xfail} expected failure${t.xfail === 1 ? '' : 's'}` : '',
    t.xpass ? `${t.xpass} unexpectedly passed` : '',
  ].filter(Boolean);
  return [`${t.passed} passed`, `${t.failed} failed`, `${t.skipped} skipped`, ...extra].join(', ');
}

const LABEL: Record<GradedStatus, string> = { pass: 'PASS', fail: 'FAIL', warn: 'WARN', skip: 'SKIP', error: 'ERR ', xfail: 'XFAIL', xpass: 'XPASS' };

function paint(c: ChalkInstance, status: GradedStatus, text: string): string {
  switch (status) {
    case 'pass':
      return c.green(text);
    case 'fail':
    case 'xpass':
      return c.red.bold(text);
    case 'warn':
      return c.yellow(text);
    case 'error':
      return c.magenta(text);
    default:
      return c.dim(text);
  }
}

/**
 * Lines that carry server-derived text, as the report prints them. In GitHub Actions (where the
 * runner reads workflow commands from stderr as from stdout) they are wrapped in the runner's own
 * `::stop-commands::<token>` … `::<token>::`, so nothing inside is taken for a command; everywhere,
 * each line is neutralized and defused (no line starts with `::`, no `##[`).
 */
export function githubBlock(lines: string[], githubActions: boolean, paint: (line: string) => string = (line) => line): string[] {
  return stopCommands(
    lines.map((line) => paint(defuseWorkflowCommands(neutralizeMultiline(line, LINES)))),
    githubActions,
  );
}

/** Lines (already neutralized) wrapped in `::stop-commands::<token>` … `::<token>::` when `on`. */
export function stopCommands(lines: string[], on: boolean): string[] {
  if (!on || lines.length === 0) return lines;
  const token = stopToken(lines.join('\n'));
  return [`::stop-commands::${token}`, ...lines, `::${token}::`];
}

function block(label: string, value: unknown, indent: string, maxLines = 40): string[] {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  const lines = neutralizeMultiline(text ?? 'undefined', LINES).split('\n');
  const shown = lines.length > maxLines ? [...lines.slice(0, maxLines), `… ${lines.length - maxLines} more lines (--reporter json has everything)`] : lines;
  return [`${indent}${label}`, ...shown.map((line) => `${indent}  ${line}`)];
}

/** A message under a check: its first line after `head`, further lines indented under it. */
function messageLines(head: string, message: string, indent: string): string[] {
  const [first = '', ...rest] = defuseWorkflowCommands(neutralizeMultiline(message, LINES)).split('\n');
  return [`${head}${first}`, ...rest.map((line) => `${indent}  ${line}`)];
}

/**
 * " (blocked by <id>)" for a could-not-run that another check's failure kept from running, noting
 * when that failure is one the baseline expects, or a check --skip left out (the run is then not
 * incomplete on its account).
 */
export function blockedNote(result: GradedResult, { results, skipped }: Pick<GradedReport, 'results' | 'skipped'>): string {
  if (!result.blockedBy) return '';
  const expected = blockedByExpectedFailure(result, results, skipped);
  const left = !results.some((r) => r.id === result.blockedBy) && skipped?.includes(result.blockedBy);
  const direct = results.some((r) => r.id === result.blockedBy && r.status === 'xfail');
  const why = !expected ? '' : left ? ', which --skip left out' : direct ? ', an expected failure' : ', itself blocked by an expected failure';
  return ` (blocked by ${result.blockedBy}${why})`;
}

export interface HumanOptions {
  color: boolean;
  target: string;
  /** Lines of the run's own under the target line (host mode: its exploration budget). */
  header?: string[];
  version: string;
  checks: CheckDef[];
  /** Extra lines under a check (cli/results.ts: the baseline entry, --trace transcripts). */
  details?: (result: GradedResult, indent: string, c: ChalkInstance) => string[];
  /** Lines just before the tally (cli/results.ts: baseline notes and paste-ready entries). */
  footer?: (c: ChalkInstance) => string[];
  /** Running in GitHub Actions: server-derived blocks are wrapped in `::stop-commands::` (see githubBlock). */
  githubActions?: boolean;
  /** Full expected/actual under each finding even when there is a diff (--verbose). */
  verbose?: boolean;
  /** 'host': the target is a host watched by recording servers, not a server. */
  mode?: 'host';
}

/** How long the run took and what it started: the run's cost follows its checks, not its processes. */
function timingLine(report: GradedReport, mode: HumanOptions['mode']): string | undefined {
  if (!report.stats) return undefined;
  const { serverStarts, scenariosRun, startsSaved, startsShared } = report.stats;
  const reasons = [
    ...(startsShared ? [`${startsShared} saved by sharing: scenarios took turns on a server of their transport`] : []),
    ...(startsSaved ? [`${startsSaved} saved: their checks were decided by a known blocker`] : []),
  ];
  const saved = reasons.length ? ` (${reasons.join('; ')})` : '';
  const starts = mode === 'host' ? '' : `, ${serverStarts} server start${serverStarts === 1 ? '' : 's'}${saved}`;
  return `run: ${(report.durationMs / 1000).toFixed(1)} s, ${scenariosRun} scenario${scenariosRun === 1 ? '' : 's'} run${starts}`;
}

/** Why each server was started: a fresh one only where freshness is what a check tests. */
function startsLine(report: GradedReport): string | undefined {
  const by = report.stats?.startsBy;
  if (!by || Object.keys(by).length === 0) return undefined;
  return `server starts: ${Object.entries(by)
    .map(([why, count]) => `${count} ${why}`)
    .join('; ')}`;
}

/** The terminal report: one line per check, details under each failure, the tally last. */
export function renderHuman(report: GradedReport, options: HumanOptions): string {
  const c = new Chalk({ level: options.color ? 1 : 0 });
  const out: string[] = [];
  const untrusted = (lines: string[], paint?: (line: string) => string) => githubBlock(lines, Boolean(options.githubActions), paint);
  const info = report.serverInfo as { name?: unknown; version?: unknown } | undefined;
  const role = options.mode === 'host' ? 'host mode · recording servers watch' : 'fake Codex 0.171.0 · target';
  out.push(c.bold(`mcp-sandbox-conformance ${options.version}`) + c.dim(` · ${role}: ${neutralize(options.target)}`));
  // One line each, whatever the server put in them: no escape sequence, no CR or LF, no command.
  for (const line of options.header ?? []) out.push(c.dim(neutralize(line)));
  if (info) out.push(c.dim(defuseWorkflowCommands(`server: ${neutralize(String(info.name ?? '?'))} ${neutralize(String(info.version ?? ''))}`.trimEnd())));
  const exec = execSummary(report, options.mode);
  if (exec) out.push(c.dim(defuseWorkflowCommands(neutralize(exec))));
  const tools = toolsSummary(report, options.mode);
  if (tools) out.push(c.dim(defuseWorkflowCommands(neutralize(tools))));
  const sessions = sessionsSummary(report, options.mode);
  if (sessions) out.push(c.dim(defuseWorkflowCommands(neutralize(sessions))));
  if (report.containment) out.push(c.dim(`containment: ${report.containment.mechanism}: ${report.containment.detail}`));
  const timing = timingLine(report, options.mode);
  if (timing) out.push(c.dim(timing));
  const starts = options.mode === 'host' ? undefined : startsLine(report);
  if (starts) out.push(c.dim(neutralize(starts)));
  const longest = report.stats?.longestCommandMs;
  if (longest)
    out.push(c.dim(`longest command sent: ${longest / 1000} s (--slow-command SECONDS sets how long the resident's and the soak's long commands run)`));
  const elicited = elicitationNote(report);
  if (elicited) out.push(c.yellow(defuseWorkflowCommands(neutralize(elicited))));
  if (report.startFailure) {
    const [first, ...more] = messageLines('', report.startFailure.message, '');
    out.push('', c.red.bold(`The target failed to start: ${first}`), ...untrusted(more));
    if (report.startFailure.stderrTail)
      out.push(
        c.dim('last lines of its stderr:'),
        ...untrusted(
          report.startFailure.stderrTail.split('\n').map((l) => `  ${l}`),
          c.dim,
        ),
      );
  }
  out.push('');
  if (report.startFailure) {
    out.push(`${report.results.length} checks could not run.`, '', summaryLine(tally(report.results)));
    return out.join('\n') + '\n';
  }
  const idWidth = Math.max(...report.results.map((r) => r.id.length), 10);
  // With both transports in the run, each line says which one it is about.
  const bothTransports = (report.transports ?? [...new Set(report.results.map((r) => r.transport))]).length > 1;
  const defs = new Map(options.checks.map((d) => [d.id, d]));
  // A skip reason shared by three checks or more is said once, after the list, with the count.
  const whyOf = (result: GradedResult) => (result.reason === 'not-applicable' ? 'not applicable' : `could not run${blockedNote(result, report)}`);
  const skipKey = (result: GradedResult) => `${whyOf(result)}\0${result.message ?? ''}`;
  const shared = new Map<string, number>();
  for (const result of report.results) if (result.status === 'skip') shared.set(skipKey(result), (shared.get(skipKey(result)) ?? 0) + 1);
  const collapsed = new Set([...shared].filter(([, n]) => n >= 3).map(([key]) => key));
  for (const result of report.results) {
    const where = bothTransports ? `${result.transport.padEnd(5)}  ` : '';
    const line = `${paint(c, result.status, LABEL[result.status].padEnd(5))}  ${result.id.padEnd(idWidth)}  ${where}${result.level.padEnd(6)}  ${result.title}`;
    out.push(line);
    const indent = '       ';
    if ((result.status === 'skip' && !collapsed.has(skipKey(result))) || result.status === 'error') {
      const why = result.status === 'skip' ? whyOf(result) : 'error';
      out.push(...untrusted(messageLines(`${indent}${why}: `, result.message ?? '', indent), c.dim));
    }
    if (result.status === 'fail' || result.status === 'warn' || result.status === 'xpass') {
      const def = defs.get(result.id);
      if (def) out.push(c.dim(`${indent}${result.rule}: ${def.summary}`));
      const [first, ...more] = messageLines(indent, result.message ?? '', indent);
      out.push(c.bold(first!), ...untrusted(more));
      const details: string[] = [];
      // The diff says what is wrong; the whole values only when there is no diff, or with --verbose.
      const hasDiff = Boolean(result.diff?.length);
      if (hasDiff) details.push(...block('diff (expected -> actual):', result.diff!.join('\n'), indent));
      if (!hasDiff || options.verbose) {
        if (result.expected !== undefined) details.push(...block('expected:', result.expected, indent));
        if (result.actual !== undefined) details.push(...block('actual:', result.actual, indent));
      } else if (result.expected !== undefined || result.actual !== undefined) {
        details.push(c.dim(`${indent}(expected and actual in full: --verbose, or the JSON report)`));
      }
      if (result.counterexample) details.push(...counterexampleLines(result.counterexample).map((line) => `${indent}${line}`));
      out.push(...untrusted(details));
      if (def && result.status !== 'xpass') out.push(c.dim(`${indent}fix: ${def.fix}  (more: mcp-sandbox-conformance explain ${result.id})`));
    }
    // A pass says what was shown (what ran, on which control's call): with --verbose.
    if (result.status === 'pass' && options.verbose && (result.message || result.control)) {
      const shown = [...(result.message ? messageLines(`${indent}shown: `, result.message, indent) : [])];
      if (result.control) shown.push(...block('on the control call:', result.control, indent));
      out.push(...untrusted(shown, c.dim));
    }
    if (options.details) out.push(...options.details(result, indent, c));
  }
  for (const key of collapsed) {
    const [why, message] = key.split('\0') as [string, string];
    // One line each (a multi-line JSON error folded); the full text with --verbose.
    const shown = options.verbose ? message : message.replace(/\s*\n\s*/g, ' ');
    out.push('', ...untrusted(messageLines(`${shared.get(key)} checks ${why}: `, shown, '  '), c.dim));
  }
  if (options.footer) out.push(...options.footer(c));
  out.push('', summaryLine(tally(report.results)));
  return out.join('\n') + '\n';
}
