import type { ExecAdapter, SessionAdapter, ToolAccount } from '../../harness/exec-adapter.js';
import type { ControlCall, Counterexample, Level, ScenarioRecord, ScenarioTiming, SkipReason } from '../../suites/engine/model.js';
import type { BaselineEntry } from '../baseline.js';
import type { GradedStatus } from '../grade.js';
import { blockedByExpectedFailure } from '../exit-codes.js';
import { jsonSafe } from '../sanitize.js';
import { redactValue } from '../transcripts.js';
import { tally, type Tally } from './human.js';
import {
  areaOf,
  CONTRACT,
  execSummary,
  reportedExec,
  scenarioOf,
  sessionText,
  toolAccountText,
  transcriptFileOf,
  type ReportData,
  type TargetDescription,
} from './index.js';

/**
 * The JSON report: one document per run, described by schema/report.schema.json (shipped in the
 * package). `schemaVersion` changes only when a field changes meaning or goes away; new optional
 * fields keep it. Transcripts are not inlined: a scenario (and each of its checks) names the file
 * --transcripts wrote, and always says how many entries its transcript had.
 */
export const SCHEMA_VERSION = 1;

export interface CheckRecord {
  id: string;
  area: string;
  title: string;
  rule: string;
  level: Level;
  transport: 'stdio' | 'http';
  scenario: string;
  status: GradedStatus;
  skipReason?: SkipReason;
  /** For could-not-run: the check whose failure kept this one from running. */
  blockedBy?: string;
  /** With blockedBy: true when that failure is one the baseline expects (or a check --skip left out), so this check does not make the run incomplete. */
  blockedByExpectedFailure?: boolean;
  message?: string;
  expected?: unknown;
  actual?: unknown;
  diff?: string[];
  /** For an exploration failure: the minimal call sequence, step by step, and how to replay it. */
  counterexample?: Counterexample;
  /** For a pass that rests on a control: that control's call (tool, command, what ran, the answer). */
  control?: ControlCall;
  /** For xfail and xpass: the baseline entry that listed the check, and what the check did. */
  baseline?: { id: string; reason: string; transport?: 'stdio' | 'http'; was: GradedStatus };
  /** Its scenario's transcript (see `scenarios`). */
  transcript: { entries: number; file?: string };
  /** Its scenario's duration. */
  durationMs: number;
}

/** One scenario as it ran on one transport: the checks that name it (scenario, transport) share its transcript and timing. */
export interface ScenarioDocument {
  id: string;
  title: string;
  transport: 'stdio' | 'http';
  checks: string[];
  /** False when its checks were decided without running it (not applicable, a dead target, the run's timeout). */
  ran: boolean;
  startMs: number;
  durationMs: number;
  timing?: ScenarioTiming;
  transcript: { entries: number; file?: string };
}

/** One listed tool as the JSON report has it. */
export interface ReportedTool {
  name: string;
  tested: boolean;
  /** primary: every check drives it; extra: the fixed EXEC-1/LAUNCH calls (execution/every-exec-tool). */
  role?: 'primary' | 'extra';
  exec?: ExecAdapter;
  why?: string;
  /** Left out by the operator by name (--skip-tool, "skipTools"). */
  skipped?: boolean;
  /** What its calls send beyond the template: optional properties and their values, a code tool's languages. */
  sent?: string[];
  late?: string;
  description: string;
}

const reportedTool = (account: ToolAccount): ReportedTool => ({
  name: account.name,
  tested: account.adapter !== undefined,
  ...(account.role ? { role: account.role } : {}),
  ...(account.adapter ? { exec: reportedExec(account.adapter) } : {}),
  ...(account.why ? { why: account.why } : {}),
  ...(account.skipped ? { skipped: true } : {}),
  ...(account.sent ? { sent: account.sent } : {}),
  ...(account.late ? { late: account.late } : {}),
  description: toolAccountText(account),
});

export interface ReportDocument {
  schemaVersion: number;
  tool: { name: string; version: string };
  contract: typeof CONTRACT;
  startedAt: string;
  durationMs: number;
  target: TargetDescription;
  server: { serverInfo?: unknown; capabilities?: unknown };
  /** The exec tool and arguments template the run used, and where they came from; null when none resolved. Absent when the target never started. */
  exec?: (ExecAdapter & { description: string }) | null;
  /** Every tool the server listed, and what the suite did with it. Absent when the target never started, and in host mode. */
  tools?: ReportedTool[];
  /** The session pairs the AUTH-2 session checks drive: the operator's adapter, or those detected in the tool list. Absent when none. */
  sessions?: (SessionAdapter & { description: string })[];
  startFailure?: { message: string; stderrTail: string };
  /** How the fake Codex answered the server's elicitation/create, and every request, in scenario order (server mode). */
  elicitation?: NonNullable<ReportData['report']['elicitation']>;
  /** How the run contained the processes it started (a cgroup per server, or the sweep only). */
  containment?: { mechanism: 'cgroup' | 'sweep'; detail: string };
  failOn: 'must' | 'should';
  exitCode: number;
  summary: Tally & { total: number };
  baseline?: { file: string; staleEntries: BaselineEntry[]; unknownEntries: BaselineEntry[]; updated: boolean };
  /** Paste-ready baseline entries for the failures no entry lists. */
  unexpectedFailures: BaselineEntry[];
  scenarios: ScenarioDocument[];
  checks: CheckRecord[];
}

export function toDocument(data: ReportData): ReportDocument {
  const { report } = data;
  const t = tally(report.results);
  const transcriptOf = (scenario: ScenarioRecord) => {
    const file = transcriptFileOf(data, scenario);
    return { entries: scenario.transcript.length, ...(file ? { file } : {}) };
  };
  const scenarios = report.scenarios.map((s): ScenarioDocument => ({
    id: s.id,
    title: s.title,
    transport: s.transport,
    checks: s.checks,
    ran: s.ran,
    startMs: s.startMs,
    durationMs: s.durationMs,
    ...(s.timing ? { timing: s.timing } : {}),
    transcript: transcriptOf(s),
  }));
  const checks = report.results.map((r): CheckRecord => {
    const scenario = scenarioOf(data, r);
    return {
      id: r.id,
      area: areaOf(r.id),
      title: r.title,
      rule: r.rule,
      level: r.level,
      transport: r.transport,
      scenario: r.scenario,
      status: r.status,
      ...(r.status === 'skip' && r.reason ? { skipReason: r.reason } : {}),
      ...(r.blockedBy ? { blockedBy: r.blockedBy, blockedByExpectedFailure: blockedByExpectedFailure(r, report.results, report.skipped) } : {}),
      ...(r.message !== undefined ? { message: r.message } : {}),
      ...(r.expected !== undefined ? { expected: r.expected } : {}),
      ...(r.actual !== undefined ? { actual: r.actual } : {}),
      ...(r.diff !== undefined ? { diff: r.diff } : {}),
      ...(r.counterexample !== undefined ? { counterexample: r.counterexample } : {}),
      ...(r.control !== undefined ? { control: r.control } : {}),
      ...(r.baseline ? { baseline: { ...r.baseline.entry, was: r.baseline.was } } : {}),
      transcript: transcriptOf(scenario),
      durationMs: scenario.durationMs,
    };
  });
  return {
    schemaVersion: SCHEMA_VERSION,
    tool: data.tool,
    contract: CONTRACT,
    startedAt: data.startedAt.toISOString(),
    durationMs: report.durationMs,
    target: data.target,
    server: {
      ...(report.serverInfo !== undefined ? { serverInfo: redactValue(report.serverInfo) } : {}),
      ...(report.capabilities !== undefined ? { capabilities: redactValue(report.capabilities) } : {}),
    },
    ...(report.startFailure
      ? { startFailure: { message: report.startFailure.message, stderrTail: report.startFailure.stderrTail } }
      : data.mode === 'host'
        ? {}
        : {
            exec: report.exec ? { ...reportedExec(report.exec), description: execSummary(report)! } : null,
            ...(report.tools ? { tools: report.tools.map(reportedTool) } : {}),
            ...(report.sessions?.length ? { sessions: report.sessions.map((adapter) => ({ ...adapter, description: sessionText(adapter) })) } : {}),
          }),
    ...(report.elicitation ? { elicitation: report.elicitation } : {}),
    ...(report.containment ? { containment: report.containment } : {}),
    ...(report.stats ? { stats: report.stats } : {}),
    failOn: data.failOn,
    exitCode: data.exitCode,
    summary: {
      total: report.results.length,
      passed: t.passed,
      failed: t.failed,
      skipped: t.skipped,
      notApplicable: t.notApplicable,
      couldNotRun: t.couldNotRun,
      warnings: t.warnings,
      errors: t.errors,
      xfail: t.xfail,
      xpass: t.xpass,
    },
    ...(data.baseline
      ? {
          baseline: {
            file: data.baseline.file,
            staleEntries: data.baseline.stale,
            unknownEntries: data.baseline.unknown,
            updated: Boolean(data.baseline.updated),
          },
        }
      : {}),
    unexpectedFailures: data.suggestions,
    scenarios,
    checks,
  };
}

export function renderJson(data: ReportData): string {
  // Server text arrives neutralized and redacted (cli/results.ts); jsonSafe keeps any raw C1 control out anyway.
  return jsonSafe(JSON.stringify(toDocument(data), null, 2)) + '\n';
}
