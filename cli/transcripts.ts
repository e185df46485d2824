import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Transport } from '../harness/codex-wire.js';
import type { TranscriptEntry } from '../harness/transcript.js';
import type { CheckResult } from '../suites/model.js';

/**
 * Transcripts on disk (--transcripts DIR) and in the human report (--trace), and the redaction of
 * secrets that applies to everything a report repeats from the command line or the wire.
 */

export const REDACTED = '[redacted]';

/** Header names whose value never leaves the process: credentials and session cookies. */
const SECRET_HEADER = /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|api-key)$/i;
/** Flag, variable and parameter names that usually carry a credential. */
const SECRET_NAME = '[\\w.-]*(?:token|secret|passw(?:or)?d|api[-_]?key|apikey|auth|credential|private[-_]?key|access[-_]?key)[\\w.-]*';

/**
 * Redacts credentials in free text (a command line, a stderr line): `--token=x`, `--token x`,
 * `API_KEY=x`, `Authorization: Bearer x`, and the password or secret parameters of a URL.
 */
export function redactText(text: string): string {
  return text
    .replace(/\b((?:proxy-)?authorization|cookie|set-cookie)(\s*[:=]\s*)[^\r\n]*/gi, `$1$2${REDACTED}`)
    .replace(/\b(Bearer|Basic)\s+[\w.~+/=-]+/g, `$1 ${REDACTED}`)
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, `$1${REDACTED}@`)
    .replace(new RegExp(`([?&]${SECRET_NAME}=)[^&#\\s]*`, 'gi'), `$1${REDACTED}`)
    .replace(new RegExp(`((?:^|\\s)--?${SECRET_NAME})(=|\\s+)(?!-)("[^"]*"|'[^']*'|\\S+)`, 'gi'), `$1$2${REDACTED}`)
    .replace(new RegExp(`((?:^|\\s)${SECRET_NAME})=("[^"]*"|'[^']*'|\\S+)`, 'gi'), (match, name: string) =>
      name.trimStart().startsWith('-') ? match : `${name}=${REDACTED}`,
    );
}

/** Redacts an argv: each word as text, and the word after a flag that names a secret. */
export function redactArgv(argv: string[]): string[] {
  const flag = new RegExp(`^--?${SECRET_NAME}$`, 'i');
  return argv.map((word, i) => (i > 0 && flag.test(argv[i - 1]!) && !word.startsWith('-') ? REDACTED : redactText(word)));
}

/** Redacts secret headers (at any depth) in a recorded message; the message itself is not changed. */
export function redactValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactValue);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [key, SECRET_HEADER.test(key) ? REDACTED : redactValue(inner)]),
  );
}

/** One line of a transcript file: the entry with its secrets redacted. */
export function transcriptRecord(entry: TranscriptEntry): Record<string, unknown> {
  switch (entry.dir) {
    case 'host->server':
    case 'server->host':
      return { t: entry.t, dir: entry.dir, message: redactValue(entry.message) };
    case 'server-stdout-garbage':
      return { t: entry.t, dir: entry.dir, line: redactText(entry.line) };
    case 'server-stderr':
    case 'note':
      return { t: entry.t, dir: entry.dir, text: redactText(entry.text) };
    default: {
      // An entry kind added to the harness later (HTTP status and headers, say): keep it, redacted.
      const other = entry as { t: number; dir: string };
      return redactValue(other) as Record<string, unknown>;
    }
  }
}

/** Every result of one scenario on one transport shares one transcript. */
export const transcriptKey = (result: Pick<CheckResult, 'scenario' | 'transport'>): string => `${result.scenario}|${result.transport}`;

export const transcriptFileName = (scenario: string, transport: Transport): string =>
  `${scenario.replace(/[^a-z0-9._-]+/gi, '_')}.${transport}.jsonl`;

/**
 * Writes one JSONL file per scenario and transport that recorded anything (a scenario that never
 * started a server has nothing to show) and returns the path of each, by transcriptKey.
 */
export function writeTranscripts(dir: string, results: CheckResult[]): Map<string, string> {
  mkdirSync(dir, { recursive: true });
  const written = new Map<string, string>();
  for (const result of results) {
    const key = transcriptKey(result);
    if (written.has(key) || result.transcript.length === 0) continue;
    const file = join(dir, transcriptFileName(result.scenario, result.transport));
    const checks = results.filter((r) => transcriptKey(r) === key).map((r) => r.id);
    const header = { dir: 'meta', scenario: result.scenario, transport: result.transport, checks, entries: result.transcript.length };
    const lines = [header, ...result.transcript.map(transcriptRecord)].map((record) => JSON.stringify(record));
    writeFileSync(file, lines.join('\n') + '\n');
    written.set(key, file);
  }
  return written;
}

const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text);

/** A transcript as text lines for a terminal or a <pre>: time, direction, payload (redacted). */
export function formatTranscript(entries: TranscriptEntry[], maxLineLength = 400): string[] {
  return entries.map((entry) => {
    const record = transcriptRecord(entry);
    const payload =
      'message' in record ? JSON.stringify(record.message) : 'line' in record ? String(record.line) : 'text' in record ? String(record.text).replace(/\n$/, '') : JSON.stringify(record);
    const head = `${`+${entry.t}ms`.padStart(8)}  ${entry.dir.padEnd(13)}  `;
    return head + clip(payload, maxLineLength).replace(/\n/g, '\n' + ' '.repeat(head.length));
  });
}
