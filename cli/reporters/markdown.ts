import type { GradedStatus } from '../grade.js';
import type { ReportedResult } from '../baseline.js';
import { formatEntries } from '../baseline.js';
import { neutralize, neutralizeMultiline } from '../sanitize.js';
import { summaryLine, tally } from './human.js';
import {
  asText,
  displayName,
  elicitationNote,
  hasBothTransports,
  isProblem,
  NO_EXEC,
  reportedExec,
  detectionNotes,
  sessionsSummary,
  toolsSummary,
  scenarioOf,
  transcriptFileOf,
  truncate,
  type ReportData,
} from './index.js';

/**
 * Markdown for `$GITHUB_STEP_SUMMARY` (and pull-request comments): the tally, a table of every
 * check, then a section per finding with the diff and the expected and actual values. GitHub
 * accepts at most 1 MiB per step summary, so each value is cut to a few KB and, past a total budget,
 * further sections are only counted.
 */

const ICON: Record<GradedStatus, string> = { pass: '✅', fail: '❌', warn: '⚠️', skip: '⏭️', error: '💥', xfail: '🟡', xpass: '🔴' };
const MAX_VALUE = 4_000;
const MAX_DIFF_LINES = 60;
/** Stop adding detail sections past this size; the table and tally are always complete. */
export const MARKDOWN_BUDGET = 900_000;

/**
 * One line of text, whatever it holds: escape sequences and controls gone, and CR (a line ending
 * for CommonMark, so a lone CR could start a heading) and LF shown as a space.
 */
const oneLine = (text: string): string => neutralize(text.replace(/\r\n|\r|\n|\u2028|\u2029/g, ' '));

/**
 * Text for a table cell or a paragraph: one line, pipes escaped, no HTML outside `code spans`
 * (inside them it shows as typed), and a leading block marker (`#`, `>`, `-`, `1.`, `=`, …)
 * escaped so that the text cannot become a heading, a quote or a list.
 */
const cell = (text: string): string =>
  oneLine(text)
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 ? part : part.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/!\[/g, '!\\[')))
    .join('')
    .replace(/\|/g, '\\|')
    .replace(/^(\s*)([#>+\-*=_~]|\d+[.)])/, '$1\\$2');
/** Inline code on one line that survives backticks and pipes (GitHub splits table cells on "|" even in code). */
const code = (text: string): string => {
  const flat = oneLine(text).replace(/\|/g, '\\|');
  const longest = Math.max(0, ...(flat.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  const pad = flat.startsWith('`') || flat.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${flat}${pad}${fence}`;
};
/** A fenced block long enough that no run of backticks inside can close it. */
function fenced(raw: string, lang = ''): string {
  // A lone CR would end a line inside the block as LF does; neutralizeMultiline shows it as "\r".
  const text = neutralizeMultiline(raw, { lines: true });
  const longest = Math.max(2, ...(text.match(/`{3,}/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${lang}\n${text}\n${fence}`;
}
const collapsible = (summary: string, body: string): string => `<details><summary>${summary}</summary>\n\n${body}\n\n</details>`;

function section(result: ReportedResult, data: ReportData, both: boolean): string {
  const def = data.checks.find((c) => c.id === result.id);
  const lines = [`#### ${ICON[result.status]} ${result.status.toUpperCase()} ${code(displayName(result, both))} — ${result.rule}, ${result.level}`, ''];
  if (def) lines.push(`> ${cell(def.summary)}`, '');
  if (result.baseline) lines.push(`Baseline entry ${code(result.baseline.entry.id)}: ${cell(result.baseline.entry.reason)}`, '');
  lines.push(cell(truncate(result.message ?? '', MAX_VALUE)), '');
  if (result.diff?.length) {
    const shown = result.diff.slice(0, MAX_DIFF_LINES).map((line) => truncate(line, 500));
    if (result.diff.length > MAX_DIFF_LINES) shown.push(`… ${result.diff.length - MAX_DIFF_LINES} more lines`);
    lines.push('Diff (expected → actual):', '', fenced(shown.join('\n'), 'diff'), '');
  }
  if (result.expected !== undefined) lines.push(collapsible('expected', fenced(truncate(asText(result.expected), MAX_VALUE), 'json')), '');
  if (result.actual !== undefined) lines.push(collapsible('actual', fenced(truncate(asText(result.actual), MAX_VALUE), 'json')), '');
  const scenario = scenarioOf(data, result);
  const file = transcriptFileOf(data, scenario);
  lines.push(file ? `Transcript: ${code(file)}` : `Transcript: ${scenario.transcript.length} entries (keep them with \`--transcripts DIR\`)`, '');
  if (def && isProblem(result.status) && result.status !== 'xpass')
    lines.push(`**Fix:** ${cell(def.fix)} (more: ${code(`mcp-sandbox-conformance explain ${result.id}`)})`, '');
  return lines.join('\n');
}

/** The exec adapter the run used, as one line of the header (none when the target never started). */
function execLine(report: ReportData['report'], mode: ReportData['mode']): string | undefined {
  if (report.startFailure || mode === 'host') return undefined;
  if (!report.exec) return `Exec tool: ${cell(NO_EXEC)}`;
  const exec = reportedExec(report.exec);
  const origin = { detected: 'detected from its input schema', flag: 'given by `--exec-tool`', config: 'from the config file' }[exec.source];
  return `Exec tool ${code(exec.tool)} with arguments ${code(JSON.stringify(exec.arguments))} (${origin}${cell(detectionNotes(exec))})`;
}

export function renderMarkdown(data: ReportData): string {
  const { report } = data;
  const t = tally(report.results);
  const both = hasBothTransports(report);
  const ok = data.exitCode === 0;
  const out: string[] = [];
  out.push(`## ${ok ? '✅' : '❌'} MCP sandbox conformance: ${summaryLine(t)}`, '');
  const info = report.serverInfo as { name?: unknown; version?: unknown } | undefined;
  out.push(
    `Target ${code(data.target.display)}` +
      (info ? ` · server ${code(`${String(info.name ?? '?')} ${String(info.version ?? '')}`.trim())}` : '') +
      ` · ${data.tool.name} ${data.tool.version} · exit code ${data.exitCode}`,
    '',
  );
  const exec = execLine(report, data.mode);
  if (exec) out.push(exec, '');
  const tools = toolsSummary(report, data.mode);
  if (tools) out.push(cell(tools), '');
  const sessions = sessionsSummary(report, data.mode);
  if (sessions) out.push(cell(sessions), '');
  const elicited = elicitationNote(report);
  if (elicited) out.push(cell(elicited), '');
  if (report.startFailure) {
    out.push(`**The target failed to start:** ${cell(report.startFailure.message)}`, '');
    if (report.startFailure.stderrTail) out.push(fenced(truncate(report.startFailure.stderrTail, MAX_VALUE)), '');
  }
  if (data.baseline) {
    const { stale, unknown, file, updated } = data.baseline;
    if (updated) out.push(`Baseline ${code(file)} rewritten with ${updated.entries} entries.`, '');
    if (stale.length)
      out.push(
        `**Stale baseline entries** in ${code(file)} (their checks pass now; remove them):`,
        '',
        ...stale.map((e) => `- ${code(e.id)}${e.transport ? ` (${e.transport})` : ''}: ${cell(e.reason)}`),
        '',
      );
    if (unknown.length)
      out.push(`**Baseline entries that name no check** in ${code(file)}:`, '', ...unknown.map((e) => `- ${code(e.id)}: ${cell(e.reason)}`), '');
  }
  out.push(`| | check | ${both ? 'transport | ' : ''}rule | level | title |`, `|---|---|${both ? '---|' : ''}---|---|---|`);
  for (const r of report.results) {
    out.push(`| ${ICON[r.status]} ${r.status} | ${code(r.id)} | ${both ? `${r.transport} | ` : ''}${r.rule} | ${r.level} | ${cell(r.title)} |`);
  }
  out.push('');
  const findings = report.results.filter((r) => isProblem(r.status) || r.status === 'xfail');
  if (findings.length) out.push('### Findings', '');
  let size = out.join('\n').length;
  let left = 0;
  for (const result of findings) {
    const text = left ? '' : section(result, data, both);
    if (left || size + text.length > MARKDOWN_BUDGET) {
      left++;
      continue;
    }
    out.push(text);
    size += text.length + 1;
  }
  if (left) out.push(`… ${left} more findings left out to keep this summary under GitHub's 1 MiB limit; the JSON report has them all.`, '');
  if (data.suggestions.length) {
    const format = data.baseline?.format ?? 'yaml';
    const snippet = truncate(formatEntries(data.suggestions, format), MAX_VALUE * 4);
    out.push(collapsible(`Baseline entries for these failures (paste under <code>expectedFailures</code>, give each a reason)`, fenced(snippet, format)), '');
  }
  return out.join('\n') + '\n';
}
