import type { Counterexample } from '../../suites/engine/model.js';

/** An exploration's minimal failing sequence as plain lines (every reporter shows the same story). */
export function counterexampleLines(ce: Counterexample): string[] {
  const lines = [
    `minimal sequence: ${ce.steps.length} step${ce.steps.length === 1 ? '' : 's'} (found after ${ce.sequencesRun} sequence${ce.sequencesRun === 1 ? '' : 's'}, then ${ce.shrinks} shrink run${ce.shrinks === 1 ? '' : 's'}); rerun exactly it: --replay ${ce.replay}`,
  ];
  for (const step of ce.steps) {
    lines.push(`  ${step.n}. ${step.atMs !== undefined ? `[${(step.atMs / 1000).toFixed(1)} s] ` : ''}${step.action}`);
    for (const authority of step.authority) lines.push(`       sent:   ${authority}`);
    for (const ran of step.ran) lines.push(`       ran:    ${ran}`);
    for (const response of step.response) lines.push(`       answer: ${response}`);
  }
  for (const broken of ce.broken) lines.push(`broke ${broken.rule} (${broken.check}): ${broken.message}`);
  return lines;
}
