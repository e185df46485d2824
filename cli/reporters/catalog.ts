import type { CheckDef, Need } from '../../suites/engine/model.js';

const NEED_TEXT: Record<Need, string> = {
  exec: 'exec tool',
  'opt-in': 'sandbox opt-in',
  http: 'HTTP target',
  session: 'session pair (detected, or --session)',
  resources: 'listed resources',
  codex: 'real Codex (--codex)',
  soak: 'a soak (--soak)',
};

/** `list`: one line per check: id, rule, level, transports, what it needs, title. */
export function renderList(checks: CheckDef[], transportsOf: (id: string) => string[]): string {
  const rows = checks.map((c) => [c.id, c.rule, c.level, transportsOf(c.id).join('+'), c.needs.map((n) => NEED_TEXT[n]).join(', ') || '-', c.title]);
  return `${renderTable(['check', 'rule', 'level', 'transports', 'needs', 'title'], rows)}${checks.length} checks\n`;
}

/** Columns padded to their widest cell; the last column is left unpadded. */
export function renderTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ');
  return `${[header, ...rows].map(line).join('\n')}\n`;
}

/** `explain <id>`: the rule in our words, what the suite observes, why, the usual mistake, the fix. */
export function renderExplain(check: CheckDef): string {
  // Host checks (HOST-*) judge a Codex host, not a server.
  const subject = check.rule.startsWith('HOST-') ? 'host' : 'server';
  return [
    `${check.id}  (${check.rule}, ${check.level})`,
    check.title,
    '',
    `Rule: ${check.summary}`,
    `What the suite observes: ${check.observes}`,
    `Why it matters: ${check.why}`,
    `How ${subject}s get it wrong: ${check.typicalMistake}`,
    `How to fix it: ${check.fix}`,
    `Needs: ${check.needs.join(', ') || `nothing beyond a ${subject} that starts`}`,
    '',
  ].join('\n');
}
