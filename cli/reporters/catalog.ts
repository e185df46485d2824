import type { CheckDef } from '../../suites/model.js';

/** `list`: one line per check. */
export function renderList(checks: CheckDef[]): string {
  const width = Math.max(...checks.map((c) => c.id.length));
  const lines = checks.map((c) => `${c.id.padEnd(width)}  ${c.rule.padEnd(8)}  ${c.level.padEnd(6)}  needs: ${c.needs.join(', ') || '-'}  ${c.title}`);
  return `${'check'.padEnd(width)}  rule      level   needs / title\n${lines.join('\n')}\n${checks.length} checks\n`;
}

/** `explain <id>`: the rule in our words, why, the usual mistake, the fix. */
export function renderExplain(check: CheckDef): string {
  return [
    `${check.id}  (${check.rule}, ${check.level})`,
    check.title,
    '',
    `Rule: ${check.summary}`,
    `Why it matters: ${check.why}`,
    `How servers get it wrong: ${check.typicalMistake}`,
    `How to fix it: ${check.fix}`,
    `Needs: ${check.needs.join(', ') || 'nothing beyond a server that starts'}`,
    '',
  ].join('\n');
}
