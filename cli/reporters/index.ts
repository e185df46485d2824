import { CODEX_VERSION, PROTOCOL_VERSION } from '../../harness/codex-wire.js';
import type { ExecAdapter, SessionAdapter, ToolAccount } from '../../harness/exec-adapter.js';
import { scenarioFinder, scenarioKey, type CheckDef, type CheckResult, type ScenarioRecord } from '../../suites/engine/model.js';
import type { RunReport } from '../../suites/engine/runner.js';
import type { BaselineEntry, ReportedResult } from '../baseline.js';
import { UsageError } from '../config.js';
import type { GradedStatus } from '../grade.js';
import { redactValue } from '../transcripts.js';

/**
 * What every reporter receives, and the few helpers they share. The reporters themselves live one
 * per file (human, json, junit, markdown, github, html); cli/results.ts picks and runs them.
 */

export const REPORTER_NAMES = ['human', 'json', 'junit', 'markdown', 'github', 'html'] as const;
export type ReporterName = (typeof REPORTER_NAMES)[number];

/** One --reporter: a format, and a file or (without one) the terminal. */
export interface ReporterSpec {
  name: ReporterName;
  path?: string;
}

/**
 * The contract the checks implement: the rules of CONTRACT.md as Codex CLI 0.171.0 applies them.
 * The revision changes whenever a rule is added or its meaning changes; a report names it so that
 * two reports can be compared knowingly.
 */
export const CONTRACT = { revision: `codex-${CODEX_VERSION}`, codexVersion: CODEX_VERSION, protocolVersion: PROTOCOL_VERSION } as const;

/** The target as the user gave it, with credentials redacted. */
export interface TargetDescription {
  /** The Codex config entry the target came from (--codex-config FILE --server NAME). */
  codexConfig?: { file: string; server: string };
  /** The stdio server command, as argv. */
  command?: string[];
  url?: string;
  httpCommand?: string;
  /** One line for people. */
  display: string;
}

/** A run after its baseline: what all reporters render. */
export interface ReportData {
  report: Omit<RunReport, 'results'> & { results: ReportedResult[]; skipped?: string[] };
  tool: { name: string; version: string };
  target: TargetDescription;
  checks: CheckDef[];
  /** 'host' for a run of the `host` subcommand: the target is a host, and there is no exec adapter. */
  mode?: 'host';
  failOn: 'must' | 'should';
  exitCode: number;
  /** Transcript files written by --transcripts, by transcriptKey. */
  transcriptFiles: Map<string, string>;
  baseline?: {
    file: string;
    format: 'yaml' | 'json';
    /** Entries whose checks pass now. */
    stale: BaselineEntry[];
    /** Entries that name no check. */
    unknown: BaselineEntry[];
    /** Set when --update-baseline rewrote the file. */
    updated?: { entries: number; added: number };
  };
  /** Paste-ready entries for the failures no baseline entry lists. */
  suggestions: BaselineEntry[];
  startedAt: Date;
}

export function parseReporterSpec(text: string): ReporterSpec {
  const eq = text.indexOf('=');
  const name = (eq < 0 ? text : text.slice(0, eq)).trim();
  const path = eq < 0 ? undefined : text.slice(eq + 1);
  if (!(REPORTER_NAMES as readonly string[]).includes(name)) {
    throw new UsageError(`unknown reporter "${name}" (known: ${REPORTER_NAMES.join(', ')}; a file with NAME=PATH)`);
  }
  if (path !== undefined && path === '') throw new UsageError(`--reporter ${name}= needs a file after the "="`);
  if (name === 'github' && path !== undefined) throw new UsageError('--reporter github takes no file: workflow annotations only work on stdout');
  return { name: name as ReporterName, path };
}

/**
 * Parses every --reporter. The human report always runs: on stdout, or on stderr when another
 * format takes stdout. At most one other format may go to stdout.
 */
export function parseReporters(values: string[]): ReporterSpec[] {
  const specs = values.map(parseReporterSpec);
  const toStdout = specs.filter((s) => s.name !== 'human' && s.path === undefined);
  if (toStdout.length > 1) {
    throw new UsageError(
      `only one format can write to stdout (${toStdout.map((s) => s.name).join(', ')}); give the others a file, e.g. --reporter ${toStdout[1]!.name}=report`,
    );
  }
  if (!specs.some((s) => s.name === 'human' && s.path === undefined)) specs.unshift({ name: 'human' });
  return specs;
}

const finders = new WeakMap<ReportData['report'], ReturnType<typeof scenarioFinder>>();

/** The scenario run a result points at: its transcript and timing. */
export function scenarioOf(data: ReportData, result: Pick<CheckResult, 'scenario' | 'transport'>): ScenarioRecord {
  let find = finders.get(data.report);
  if (!find) finders.set(data.report, (find = scenarioFinder(data.report.scenarios)));
  const scenario = find(result);
  // The runner records every scenario job whose checks it reports: a result without one is a bug.
  if (!scenario) throw new Error(`no record of scenario ${result.scenario} over ${result.transport}`);
  return scenario;
}

/** The JSONL file --transcripts wrote for a scenario, if it wrote one. */
export const transcriptFileOf = (data: ReportData, scenario: ScenarioRecord): string | undefined =>
  data.transcriptFiles.get(scenarioKey(scenario.id, scenario.transport));

/** The area of a check: the part of its id before the "/". */
export const areaOf = (id: string): string => (id.includes('/') ? id.slice(0, id.indexOf('/')) : id);

/**
 * True when the run had both transports (its plan's targets, so the names do not change with
 * --only; from the results for a report that does not say): names then say which transport.
 */
export const hasBothTransports = (report: { results: { transport: string }[]; transports?: string[] }): boolean =>
  (report.transports ?? [...new Set(report.results.map((r) => r.transport))]).length > 1;

/** A check's display name: the id, and the transport when the run has both. */
export const displayName = (result: { id: string; transport: string }, both: boolean): string => (both ? `${result.id} (${result.transport})` : result.id);

export const STATUS_ORDER: GradedStatus[] = ['fail', 'xpass', 'error', 'warn', 'xfail', 'skip', 'pass'];

/** Statuses that make the run fail or that a reader must look at. */
export const isProblem = (status: GradedStatus): boolean => status === 'fail' || status === 'xpass' || status === 'error' || status === 'warn';

/** A value as text: strings as they are, everything else as indented JSON. */
export const asText = (value: unknown): string => (typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? String(value)));

/** Cuts a text to at most `max` characters, saying how much was left out. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n… ${text.length - max} more characters (the JSON report has everything)`;
}

/** The exec adapter as a report shows it: its arguments template with secret-looking headers redacted. */
export const reportedExec = (exec: ExecAdapter): ExecAdapter => ({
  tool: exec.tool,
  arguments: redactValue(exec.arguments),
  source: exec.source,
  ...(exec.chosen ? { chosen: exec.chosen } : {}),
  ...(exec.unfilled ? { unfilled: exec.unfilled } : {}),
});

/** Said when the run resolved no exec adapter (the checks that need one are then not applicable). */
export const NO_EXEC =
  'none resolved (no listed tool takes a command in a command, cmd, argv, script, code, shell, program or commandLine property or says it runs one, or the --exec-tool or config entry named first is not usable), so the checks that need one are not applicable';

const ORIGIN = { detected: 'detected from its input schema', flag: 'given by --exec-tool', config: 'from the config file' } as const;

/** What detection chose for required properties, and what it could not fill, in words ('' when neither). */
export function detectionNotes(adapter: Pick<ExecAdapter, 'chosen' | 'unfilled'>): string {
  const chosen = adapter.chosen?.length ? `; chose ${adapter.chosen.join(', ')}` : '';
  const unfilled = adapter.unfilled?.length
    ? `; WARNING: could not fill the required ${adapter.unfilled.map((p) => JSON.stringify(p)).join(', ')} from the schema, so the server will likely reject its calls: name its arguments with --exec-args`
    : '';
  return chosen + unfilled;
}

/** The exec adapter in words, for reports. */
export function adapterDescription(adapter: ExecAdapter): string {
  return `exec tool ${JSON.stringify(adapter.tool)} with arguments ${JSON.stringify(adapter.arguments)} (${ORIGIN[adapter.source]}${detectionNotes(adapter)})`;
}

/**
 * The exec line of a report header: which tool and arguments template the run used, and whether
 * they were detected from the server's tool list or given (--exec-tool, or "exec" in the config).
 * Undefined when the target never started (nothing was resolved either way), and in host mode (nothing to resolve).
 */
export function execSummary(report: Pick<RunReport, 'exec' | 'startFailure'>, mode?: 'host'): string | undefined {
  if (report.startFailure || mode === 'host') return undefined;
  return report.exec ? adapterDescription(reportedExec(report.exec)) : `exec tool: ${NO_EXEC}`;
}

/** One listed tool and what the suite did with it, in words: "run_script: tested (…)" or "echo: not exercised (…)". */
export function toolAccountText(account: ToolAccount, names: readonly string[] = [account.name]): string {
  const name = names.map((n) => JSON.stringify(n)).join(', ');
  if (account.skipped) return `${name}: not exercised (left out by the operator: --skip-tool)`;
  if (!account.adapter) return `${name}: not exercised (${account.why ?? 'no reason recorded'})`;
  const adapter = reportedExec(account.adapter);
  const what = account.role === 'primary' ? 'every check' : 'the fixed EXEC-1/LAUNCH calls (execution/every-exec-tool)';
  const late = account.late ? `, listed later (${account.late})` : '';
  const shapes = account.sent ? `; its calls also send ${account.sent.join('; ')}` : '';
  return `${name}: tested by ${what}${late} with ${JSON.stringify(adapter.arguments)}${shapes} (${ORIGIN[adapter.source]}${detectionNotes(adapter)})`;
}

/** The tools line of a report header: every listed tool with what the suite did with it (none when the target never started). */
export function toolsSummary(report: Pick<RunReport, 'tools' | 'startFailure'>, mode?: 'host'): string | undefined {
  if (report.startFailure || mode === 'host' || !report.tools?.length) return undefined;
  // Tools left out for the same reason are named together: a server may list dozens that take no command.
  const grouped = new Map<string, string[]>();
  for (const account of report.tools) {
    const key = account.adapter ? `tested\0${account.name}` : (account.why ?? '');
    grouped.set(key, [...(grouped.get(key) ?? []), account.name]);
  }
  const byName = new Map(report.tools.map((t) => [t.name, t]));
  return `tools: ${[...grouped.values()].map((names) => toolAccountText(byName.get(names[0]!)!, names)).join('; ')}`;
}

/** One session adapter in words: its open and send tools, their arguments, where it came from and how its id is read. */
export function sessionText(adapter: SessionAdapter): string {
  const tools = `${JSON.stringify(adapter.open.tool)} ${JSON.stringify(adapter.open.arguments)} → ${JSON.stringify(adapter.send.tool)} ${JSON.stringify(adapter.send.arguments)}`;
  if (adapter.detected) return `${tools} (detected from the tool list; ${adapter.detected.reads})`;
  return `${tools} (the operator's session adapter; its id read from ${adapter.sessionId ?? 'structuredContent.sessionId, a JSON text, "session: <id>"-like text, or a bare id'})`;
}

/** The sessions line of a report header: the session pairs the AUTH-2 session checks drive (none found: no line). */
export function sessionsSummary(report: Pick<RunReport, 'sessions' | 'startFailure'>, mode?: 'host'): string | undefined {
  if (report.startFailure || mode === 'host' || !report.sessions?.length) return undefined;
  return `sessions: ${report.sessions.map(sessionText).join('; ')}`;
}

/**
 * What the run answered when the server asked for confirmation (elicitation/create), in words:
 * undefined when it never asked. A fact about the run, not a verdict on the server: asking is
 * allowed, and what matters is what Codex answers where the server runs (README, "Elicitation").
 */
export function elicitationNote(report: Pick<RunReport, 'elicitation'>): string | undefined {
  const asked = report.elicitation?.requests ?? [];
  if (asked.length === 0) return undefined;
  const answer = report.elicitation!.answer;
  const count = (pick: (r: (typeof asked)[number]) => boolean) => asked.filter(pick).length;
  const urls = count((r) => r.mode === 'url');
  const kinds = `${asked.length - urls} form${urls ? `, ${urls} URL` : ''}`;
  const first = asked[0]!;
  const question = `first: ${JSON.stringify(truncate(first.message, 100))} in ${first.scenario} (${first.transport})`;
  const head = `elicitation: the server asked for confirmation ${asked.length} time${asked.length === 1 ? '' : 's'} (elicitation/create: ${kinds}; ${question})`;
  if (answer === 'accept') {
    const cancelled = count((r) => r.action === 'cancel');
    return `${head}; the suite answered as a person at Codex would: the form filled from its schema and accepted${cancelled ? `, ${cancelled} URL request${cancelled === 1 ? '' : 's'} cancelled (no browser)` : ''}. Under codex exec with approval_policy = "never" Codex declines every such request: a server that then refuses runs nothing there (--elicitation decline shows it).`;
  }
  const who = answer === 'decline' ? 'as codex exec with approval_policy = "never" does' : 'as a person who dismisses the dialog';
  return `${head}; the suite answered ${answer} to each (${who}), and the checks fed by a call the server then refused could not run (--elicitation accept answers as a person at Codex would).`;
}
