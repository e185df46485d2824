import { neutralize, neutralizeMultiline } from '../sanitize.js';
import { displayName, hasBothTransports, type ReportData } from './index.js';

/**
 * GitHub Actions workflow commands: `::error` for each check that fails the run (fail, xpass,
 * error), `::warning` for each SHOULD finding that only warns, `::error` for baseline entries that
 * name no check and for a target that never started. The runner reads these from stdout.
 *
 * Escaping follows the runner's rules: in the message `%`, CR and LF become %25, %0D, %0A; in a
 * property value also `:` and `,` (%3A, %2C), since they delimit properties.
 */

/** Messages longer than this are cut; the runner shows only the start of long annotations anyway. */
const MAX_MESSAGE = 4_000;

export const escapeData = (text: string): string => text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
export const escapeProperty = (text: string): string => escapeData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');

/**
 * A message as the runner's data: escape sequences and controls gone (a lone CR shown as "\r"),
 * then %, CR and LF encoded, so nothing in it can end the command or start another one.
 */
const messageData = (text: string): string => escapeData(neutralizeMultiline(text));
/** A title as a property value: one line, then also ":" and "," encoded. */
const titleProperty = (text: string): string => escapeProperty(neutralize(text));

const command = (kind: 'error' | 'warning' | 'notice', title: string, message: string): string => {
  const body = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}… (cut; the JSON report has everything)` : message;
  return `::${kind} title=${titleProperty(title)}::${messageData(body)}`;
};

export function renderGithub(data: ReportData): string {
  const { report } = data;
  const both = hasBothTransports(report);
  const lines: string[] = [];
  if (report.startFailure) {
    lines.push(command('error', 'target failed to start', `${report.startFailure.message}\n${report.startFailure.stderrTail}`.trimEnd()));
  }
  for (const result of report.results) {
    const title = displayName(result, both);
    const text = [`${result.rule} (${result.level}): ${result.message ?? ''}`, ...(result.diff ?? []).map((line) => `  ${line}`)].join('\n');
    if (result.status === 'fail' || result.status === 'xpass') lines.push(command('error', title, text));
    else if (result.status === 'error') lines.push(command('error', title, `could not be judged: ${result.message ?? ''}`));
    else if (result.status === 'warn') lines.push(command('warning', title, text));
  }
  for (const entry of data.baseline?.unknown ?? []) {
    lines.push(command('error', `baseline ${data.baseline!.file}`, `the entry "${entry.id}" names no check (reason given: ${entry.reason}); fix or remove it`));
  }
  return lines.length ? lines.join('\n') + '\n' : '';
}
