import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Transport } from '../harness/codex-wire.js';
import type { TranscriptEntry } from '../harness/transcript.js';
import { scenarioKey, type ScenarioRecord } from '../suites/engine/model.js';
import { defuseWorkflowCommands, jsonSafe, neutralize, neutralizeMultiline, redact, REDACTED, SECRET_NAME } from './sanitize.js';

/**
 * Transcripts on disk (--transcripts DIR) and in the human report (--trace), and the redaction of
 * secrets that applies to everything a report repeats from the command line or the wire.
 */

export { REDACTED };

/** Header names whose value never leaves the process: credentials and session cookies. */
const SECRET_HEADER = /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|api-key)$/i;

/**
 * Redacts credentials in free text (a command line, a stderr line): `--token=x`, `--token x`,
 * `API_KEY=x`, `Authorization: Bearer x`, the password or secret parameters of a URL, common token
 * shapes, and any of `extraSecrets` (see cli/sanitize.ts).
 */
export function redactText(text: string, extraSecrets: readonly string[] = []): string {
  return redact(text, extraSecrets);
}

/** Redacts an argv: each word as text, and the word after a flag that names a secret. */
export function redactArgv(argv: string[]): string[] {
  const flag = new RegExp(`^--?${SECRET_NAME}$`, 'i');
  return argv.map((word, i) => (i > 0 && flag.test(argv[i - 1]!) && !word.startsWith('-') ? REDACTED : redactText(word)));
}

/** Redacts secret headers (at any depth) and secrets in strings of a recorded message; the message itself is not changed. */
export function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, SECRET_HEADER.test(key) ? REDACTED : redactValue(inner)]));
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

export const transcriptFileName = (scenario: string, transport: Transport): string => `${scenario.replace(/[^a-z0-9._-]+/gi, '_')}.${transport}.jsonl`;

/**
 * Writes one JSONL file per scenario and transport that recorded anything (a scenario that never
 * started a server has nothing to show) and returns the path of each, by scenarioKey.
 */
export function writeTranscripts(dir: string, scenarios: readonly ScenarioRecord[]): Map<string, string> {
  mkdirSync(dir, { recursive: true });
  const written = new Map<string, string>();
  for (const scenario of scenarios) {
    if (scenario.transcript.length === 0) continue;
    const file = join(dir, transcriptFileName(scenario.id, scenario.transport));
    const header = { dir: 'meta', scenario: scenario.id, transport: scenario.transport, checks: scenario.checks, entries: scenario.transcript.length };
    // JSON escapes C0 controls; jsonSafe escapes C1 ones and line separators too: no raw control byte on disk.
    const lines = [header, ...scenario.transcript.map(transcriptRecord)].map((record) => jsonSafe(JSON.stringify(record)));
    writeFileSync(file, lines.join('\n') + '\n');
    written.set(scenarioKey(scenario.id, scenario.transport), file);
  }
  return written;
}

const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text);

/** A transcript as text lines for a terminal or a <pre>: time, direction, payload (redacted, neutralized). */
export function formatTranscript(entries: TranscriptEntry[], maxLineLength = 400): string[] {
  return entries.map((entry) => {
    const record = transcriptRecord(entry);
    const payload =
      'message' in record
        ? neutralize(JSON.stringify(record.message))
        : 'line' in record
          ? neutralize(String(record.line))
          : 'text' in record
            ? neutralizeMultiline(String(record.text).replace(/\r?\n$/, ''), { lines: true })
            : neutralize(JSON.stringify(record));
    const head = `${`+${Number(entry.t)}ms`.padStart(8)}  ${neutralize(String(entry.dir)).padEnd(13)}  `;
    return defuseWorkflowCommands(head + clip(payload, maxLineLength).replace(/\n/g, '\n' + ' '.repeat(head.length)));
  });
}
