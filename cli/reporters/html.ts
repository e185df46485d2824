import type { GradedStatus } from '../grade.js';
import type { ReportedResult } from '../baseline.js';
import { jsonSafe, neutralizeMultiline } from '../sanitize.js';
import { scenarioKey } from '../../suites/engine/model.js';
import { formatTranscript } from '../transcripts.js';
import { counterexampleLines } from './counterexample.js';
import { blockedNote, summaryLine, tally } from './human.js';
import {
  asText,
  CONTRACT,
  elicitationNote,
  execSummary,
  sessionsSummary,
  toolsSummary,
  hasBothTransports,
  scenarioOf,
  STATUS_ORDER,
  transcriptFileOf,
  truncate,
  type ReportData,
} from './index.js';

/**
 * One self-contained HTML file: styles, script and data inline, and a Content-Security-Policy that
 * forbids every fetch, so opening it loads nothing from the network. A row per check, colored by
 * status; checkboxes filter the rows by status; the diff, expected/actual and the scenario's
 * transcript unfold under each row (<details>). Each transcript is stored once, as JSON, and put
 * into its row when unfolded, so that a scenario with many checks does not repeat it.
 */

const MAX_VALUE = 100_000;

/** HTML text: escape sequences and control characters removed first (a lone CR shown as "\r"), then escaped. */
const esc = (text: string): string =>
  neutralizeMultiline(text, { lines: true }).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** JSON that can sit inside <script>: nothing in it can close the element or break the line. */
const scriptJson = (value: unknown): string =>
  jsonSafe(JSON.stringify(value))
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

const LABEL: Record<GradedStatus, string> = { pass: 'PASS', fail: 'FAIL', warn: 'WARN', skip: 'SKIP', error: 'ERROR', xfail: 'XFAIL', xpass: 'XPASS' };

function diffHtml(lines: string[]): string {
  return lines
    .map((line) => {
      const kind = line.startsWith('-') ? 'del' : line.startsWith('+') ? 'ins' : line.startsWith('~') ? 'chg' : 'ctx';
      return `<span class="d-${kind}">${esc(line)}</span>`;
    })
    .join('\n');
}

function row(result: ReportedResult, data: ReportData, both: boolean): string {
  const def = data.checks.find((c) => c.id === result.id);
  const scenario = scenarioOf(data, result);
  const key = scenarioKey(scenario.id, scenario.transport);
  const file = transcriptFileOf(data, scenario);
  const parts: string[] = [`<div class="title">${esc(result.title)}</div>`];
  if (result.baseline) parts.push(`<div class="baseline">baseline <code>${esc(result.baseline.entry.id)}</code>: ${esc(result.baseline.entry.reason)}</div>`);
  if (result.blockedBy) parts.push(`<div class="blocked">could not run${esc(blockedNote(result, data.report))}</div>`);
  if (result.message) parts.push(`<div class="message">${esc(truncate(result.message, MAX_VALUE))}</div>`);
  if (result.diff?.length) {
    // A problem's diff is what the reader came for: unfolded from the start.
    const open = ['fail', 'warn', 'error', 'xpass'].includes(result.status) ? ' open' : '';
    parts.push(
      `<details class="diff"${open}><summary>diff, expected → actual (${result.diff.length} line${result.diff.length === 1 ? '' : 's'})</summary><pre>${diffHtml(result.diff)}</pre></details>`,
    );
  }
  if (result.counterexample) {
    parts.push(
      `<details class="sequence" open><summary>minimal failing sequence (${result.counterexample.steps.length} steps; replay <code>${esc(result.counterexample.replay)}</code>)</summary><pre>${esc(counterexampleLines(result.counterexample).join('\n'))}</pre></details>`,
    );
  }
  if (result.expected !== undefined || result.actual !== undefined) {
    const pane = (label: string, value: unknown) =>
      `<div><h4>${label}</h4><pre>${value === undefined ? '<em>(none)</em>' : esc(truncate(asText(value), MAX_VALUE))}</pre></div>`;
    parts.push(
      `<details class="values"><summary>expected and actual</summary><div class="columns">${pane('expected', result.expected)}${pane('actual', result.actual)}</div></details>`,
    );
  }
  if (scenario.transcript.length) {
    parts.push(
      `<details class="transcript" data-transcript="${esc(key)}"><summary>transcript of ${esc(result.scenario)} (${scenario.transcript.length} entries)${file ? ` · <code>${esc(file)}</code>` : ''}</summary><pre></pre></details>`,
    );
  }
  if (def && result.status !== 'pass' && result.status !== 'skip')
    parts.push(`<div class="fix"><b>Rule:</b> ${esc(def.summary)}<br><b>Fix:</b> ${esc(def.fix)}</div>`);
  return [
    `<tr class="check" data-status="${result.status}" data-id="${esc(result.id)}" data-transport="${result.transport}">`,
    `<td><span class="badge s-${result.status}">${LABEL[result.status]}</span></td>`,
    `<td><code>${esc(result.id)}</code></td>`,
    both ? `<td>${result.transport}</td>` : '',
    `<td>${esc(result.rule)}</td><td>${result.level}</td>`,
    `<td>${parts.join('')}</td>`,
    '</tr>',
  ].join('');
}

const STYLE = `
:root { --pass:#1a7f37; --fail:#cf222e; --warn:#9a6700; --skip:#6e7781; --error:#8250df; --xfail:#0969da; --xpass:#bc4c00; --border:#d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; padding: 1.5rem; max-width: 1400px; color: #1f2328; }
h1 { font-size: 1.4rem; margin: 0 0 .3rem; }
.meta { color: #57606a; margin: 0 0 .6rem; }
.tally { font-size: 1.1rem; font-weight: 600; }
.tally.ok { color: var(--pass); } .tally.bad { color: var(--fail); }
.notes { border-left: 4px solid var(--fail); padding: .2rem .8rem; margin: .8rem 0; background: #fff8f8; }
#filters { display: flex; flex-wrap: wrap; gap: .5rem; margin: 1rem 0; align-items: center; }
#filters label { border: 1px solid var(--border); border-radius: 999px; padding: .15rem .7rem; cursor: pointer; user-select: none; }
#filters .count { font-weight: 600; }
#shown { color: #57606a; margin-left: auto; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
col.c-status { width: 6.5em; } col.c-id { width: 19em; } col.c-transport { width: 5.5em; } col.c-rule { width: 6.5em; } col.c-level { width: 5.5em; }
th, td { border-bottom: 1px solid var(--border); padding: .45rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; position: sticky; top: 0; }
tr.check[data-status="fail"], tr.check[data-status="xpass"] { background: #ffebe9; }
tr.check[data-status="warn"] { background: #fff8c5; }
tr.check[data-status="error"] { background: #fbefff; }
.badge { display: inline-block; min-width: 4.2em; text-align: center; border-radius: 4px; padding: 0 .35em; color: #fff; font-weight: 600; font-size: .8rem; }
${(['pass', 'fail', 'warn', 'skip', 'error', 'xfail', 'xpass'] as const).map((s) => `.s-${s} { background: var(--${s}); }`).join('\n')}
.message { margin-top: .3rem; white-space: pre-wrap; }
.baseline { color: var(--xfail); margin-top: .2rem; }
.blocked { color: var(--skip); margin-top: .2rem; }
.fix { color: #57606a; margin-top: .3rem; font-size: .9em; }
details { margin-top: .3rem; }
summary { cursor: pointer; color: #0969da; }
pre { background: #f6f8fa; border: 1px solid var(--border); border-radius: 6px; padding: .5rem; overflow: auto; max-height: 32rem; margin: .3rem 0; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
td code { overflow-wrap: anywhere; }
.columns { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: .5rem; }
.columns h4 { margin: .2rem 0; }
.d-del { color: var(--fail); } .d-ins { color: var(--pass); } .d-chg { color: var(--warn); }
code { font-size: .92em; }
`;

/** Filters rows by the checked statuses, and fills a transcript the first time it is unfolded. */
const SCRIPT = `
(() => {
  const transcripts = JSON.parse(document.getElementById('transcripts').textContent);
  const PROBLEMS = ['fail', 'xpass', 'error', 'warn'];
  const boxes = [...document.querySelectorAll('#filters input[name="status"]')];
  const rows = [...document.querySelectorAll('tr.check')];
  const shown = document.getElementById('shown');
  const apply = () => {
    const on = new Set(boxes.filter((b) => b.checked).map((b) => b.value));
    let n = 0;
    for (const row of rows) { row.hidden = !on.has(row.dataset.status); if (!row.hidden) n++; }
    shown.textContent = n + ' of ' + rows.length + ' checks shown';
  };
  for (const box of boxes) box.addEventListener('change', apply);
  document.getElementById('only-problems').addEventListener('click', () => {
    for (const box of boxes) box.checked = PROBLEMS.includes(box.value);
    apply();
  });
  document.getElementById('show-all').addEventListener('click', () => { for (const box of boxes) box.checked = true; apply(); });
  // The page opens on the problems when there are any; "all" shows every check.
  if (rows.some((row) => PROBLEMS.includes(row.dataset.status))) document.getElementById('only-problems').click();
  for (const details of document.querySelectorAll('details[data-transcript]')) {
    details.addEventListener('toggle', () => {
      const pre = details.querySelector('pre');
      if (details.open && !pre.textContent) pre.textContent = (transcripts[details.dataset.transcript] || []).join('\\n');
    });
  }
  apply();
})();
`;

export function renderHtml(data: ReportData): string {
  const { report } = data;
  const t = tally(report.results);
  const both = hasBothTransports(report);
  const transcripts: Record<string, string[]> = {};
  for (const scenario of report.scenarios) {
    if (scenario.transcript.length) transcripts[scenarioKey(scenario.id, scenario.transport)] = formatTranscript(scenario.transcript, 4_000);
  }
  const info = report.serverInfo as { name?: unknown; version?: unknown } | undefined;
  const counts = new Map<GradedStatus, number>(STATUS_ORDER.map((s) => [s, report.results.filter((r) => r.status === s).length]));
  const filters = STATUS_ORDER.filter((s) => counts.get(s)! > 0)
    .map(
      (s) =>
        `<label class="f-${s}"><input type="checkbox" name="status" value="${s}" checked> <span class="badge s-${s}">${LABEL[s]}</span> <span class="count">${counts.get(s)}</span></label>`,
    )
    .join('');
  const notes: string[] = [];
  if (report.startFailure)
    notes.push(`<p><b>The target failed to start:</b> ${esc(report.startFailure.message)}</p><pre>${esc(report.startFailure.stderrTail)}</pre>`);
  if (data.baseline?.stale.length) {
    notes.push(
      `<p><b>Stale baseline entries</b> in <code>${esc(data.baseline.file)}</code> (their checks pass now; remove them): ${data.baseline.stale.map((e) => `<code>${esc(e.id)}</code>`).join(', ')}</p>`,
    );
  }
  if (data.baseline?.unknown.length) {
    notes.push(
      `<p><b>Baseline entries that name no check</b> in <code>${esc(data.baseline.file)}</code>: ${data.baseline.unknown.map((e) => `<code>${esc(e.id)}</code>`).join(', ')}</p>`,
    );
  }
  const exec = execSummary(report, data.mode);
  const tools = toolsSummary(report, data.mode);
  const sessions = sessionsSummary(report, data.mode);
  const elicited = elicitationNote(report);
  const headline = `MCP sandbox conformance: ${data.exitCode === 0 ? 'conformant' : 'not conformant'}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(headline)} · ${esc(summaryLine(t))}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${esc(headline)}</h1>
<p class="meta">target <code>${esc(data.target.display)}</code>${info ? ` · server <code>${esc(`${String(info.name ?? '?')} ${String(info.version ?? '')}`.trim())}</code>` : ''} · ${esc(data.tool.name)} ${esc(data.tool.version)} · contract ${esc(CONTRACT.revision)} · ${esc(data.startedAt.toISOString())} · exit code ${data.exitCode}</p>
${
  exec
    ? `<p class="meta" id="exec">${esc(exec)}</p>
`
    : ''
}${tools ? `<p class="meta" id="tools">${esc(tools)}</p>\n` : ''}${sessions ? `<p class="meta" id="sessions">${esc(sessions)}</p>\n` : ''}${elicited ? `<p class="meta" id="elicitation">${esc(elicited)}</p>\n` : ''}<p class="tally ${data.exitCode === 0 ? 'ok' : 'bad'}" id="tally">${esc(summaryLine(t))}</p>
</header>
${notes.length ? `<section class="notes">${notes.join('')}</section>` : ''}
<nav id="filters" aria-label="Filter by status">${filters}<button type="button" id="only-problems">problems only</button><button type="button" id="show-all">all</button><span id="shown"></span></nav>
<table id="checks">
<colgroup><col class="c-status"><col class="c-id">${both ? '<col class="c-transport">' : ''}<col class="c-rule"><col class="c-level"><col></colgroup>
<thead><tr><th>status</th><th>check</th>${both ? '<th>transport</th>' : ''}<th>rule</th><th>level</th><th>what it checks</th></tr></thead>
<tbody>
${report.results.map((r) => row(r, data, both)).join('\n')}
</tbody>
</table>
<script type="application/json" id="transcripts">${scriptJson(transcripts)}</script>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
