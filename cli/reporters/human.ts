import { Chalk, type ChalkInstance } from 'chalk';
import type { RunReport } from '../../suites/runner.js';
import type { CheckDef, CheckResult, Status } from '../../suites/model.js';
import { blockedByExpectedFailure } from '../exit-codes.js';
import { execSummary } from './index.js';

export interface Tally {
  passed: number;
  failed: number;
  skipped: number;
  warnings: number;
  errors: number;
  xfail: number;
  xpass: number;
}

export function tally(results: CheckResult[]): Tally {
  const count = (...statuses: Status[]) => results.filter((r) => statuses.includes(r.status)).length;
  return {
    passed: count('pass'),
    failed: count('fail'),
    skipped: count('skip'),
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

const LABEL: Record<Status, string> = { pass: 'PASS', fail: 'FAIL', warn: 'WARN', skip: 'SKIP', error: 'ERR ', xfail: 'XFAIL', xpass: 'XPASS' };

function paint(c: ChalkInstance, status: Status, text: string): string {
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

function block(label: string, value: unknown, indent: string, maxLines = 40): string[] {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  const lines = (text ?? 'undefined').split('\n');
  const shown = lines.length > maxLines ? [...lines.slice(0, maxLines), `… ${lines.length - maxLines} more lines (--reporter json has everything)`] : lines;
  return [`${indent}${label}`, ...shown.map((line) => `${indent}  ${line}`)];
}

/**
 * " (blocked by <id>)" for a could-not-run that another check's failure kept from running, noting
 * when that failure is one the baseline expects (the run is then not incomplete on its account).
 */
export function blockedNote(result: CheckResult, results: CheckResult[]): string {
  if (!result.blockedBy) return '';
  const expected = blockedByExpectedFailure(result, results);
  const direct = results.some((r) => r.id === result.blockedBy && r.status === 'xfail');
  return ` (blocked by ${result.blockedBy}${!expected ? '' : direct ? ', an expected failure' : ', itself blocked by an expected failure'})`;
}

export interface HumanOptions {
  color: boolean;
  target: string;
  version: string;
  checks: CheckDef[];
  /** Extra lines under a check (cli/results.ts: the baseline entry, --trace transcripts). */
  details?: (result: CheckResult, indent: string, c: ChalkInstance) => string[];
  /** Lines just before the tally (cli/results.ts: baseline notes and paste-ready entries). */
  footer?: (c: ChalkInstance) => string[];
}

/** The terminal report: one line per check, details under each failure, the tally last. */
export function renderHuman(report: RunReport, options: HumanOptions): string {
  const c = new Chalk({ level: options.color ? 1 : 0 });
  const out: string[] = [];
  const info = report.serverInfo as { name?: unknown; version?: unknown } | undefined;
  out.push(c.bold(`mcp-sandbox-conformance ${options.version}`) + c.dim(` · fake Codex 0.171.0 · target: ${options.target}`));
  if (info) out.push(c.dim(`server: ${String(info.name ?? '?')} ${String(info.version ?? '')}`.trimEnd()));
  const exec = execSummary(report);
  if (exec) out.push(c.dim(exec));
  if (report.startFailure) {
    out.push('', c.red.bold(`The target failed to start: ${report.startFailure.message}`));
    if (report.startFailure.stderrTail) out.push(c.dim('last lines of its stderr:'), ...report.startFailure.stderrTail.split('\n').map((l) => c.dim(`  ${l}`)));
  }
  out.push('');
  if (report.startFailure) {
    out.push(`${report.results.length} checks could not run.`, '', summaryLine(tally(report.results)));
    return out.join('\n') + '\n';
  }
  const idWidth = Math.max(...report.results.map((r) => r.id.length), 10);
  // With both transports in the run, each line says which one it is about.
  const bothTransports = new Set(report.results.map((r) => r.transport)).size > 1;
  const defs = new Map(options.checks.map((d) => [d.id, d]));
  for (const result of report.results) {
    const where = bothTransports ? `${result.transport.padEnd(5)}  ` : '';
    const line = `${paint(c, result.status, LABEL[result.status].padEnd(5))}  ${result.id.padEnd(idWidth)}  ${where}${result.level.padEnd(6)}  ${result.title}`;
    out.push(line);
    const indent = '       ';
    if (result.status === 'skip' || result.status === 'error') {
      const why = result.status === 'skip' ? (result.reason === 'not-applicable' ? 'not applicable' : `could not run${blockedNote(result, report.results)}`) : 'error';
      out.push(c.dim(`${indent}${why}: ${result.message ?? ''}`));
    }
    if (result.status === 'fail' || result.status === 'warn' || result.status === 'xpass') {
      const def = defs.get(result.id);
      if (def) out.push(c.dim(`${indent}${result.rule}: ${def.summary}`));
      out.push(`${indent}${c.bold(result.message ?? '')}`);
      if (result.diff?.length) out.push(...block('diff (expected -> actual):', result.diff.join('\n'), indent));
      if (result.expected !== undefined) out.push(...block('expected:', result.expected, indent));
      if (result.actual !== undefined) out.push(...block('actual:', result.actual, indent));
      if (def && result.status !== 'xpass') out.push(c.dim(`${indent}fix: ${def.fix}  (more: mcp-sandbox-conformance explain ${result.id})`));
    }
    if (options.details) out.push(...options.details(result, indent, c));
  }
  if (options.footer) out.push(...options.footer(c));
  out.push('', summaryLine(tally(report.results)));
  return out.join('\n') + '\n';
}
