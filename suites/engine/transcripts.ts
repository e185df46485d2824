import { oversizedMessages } from '../../harness/stdio-transport.js';
import type { Connection } from '../../harness/target.js';
import type { TranscriptEntry } from '../../harness/transcript.js';

/** Messages over 1 MB are summarized once the checks are judged: a run's memory stays bounded. */
export function compactTranscript(connection: Connection | undefined): void {
  for (const entry of connection?.transcript.entries ?? []) {
    if (!('message' in entry) || typeof entry.message !== 'object' || entry.message === null) continue;
    const bytes = oversizedMessages.get(entry.message);
    if (bytes === undefined) continue;
    const original = entry.message as Record<string, unknown>;
    entry.message = { jsonrpc: original.jsonrpc, id: original.id, conformanceNote: `a message of ${bytes} bytes, not kept in the transcript (over 1 MB)` };
  }
}

/** What a scenario's transcript shows of a shared server: its first `handshake` entries, then entries `from` to `to` (its turn). */
export interface SharedPart {
  handshake: number;
  from: number;
  to: number;
  note: string;
}

/**
 * A server scenario's transcript (its ScenarioRecord's): its connection's, then each further
 * connection's (the catalog's overlapping startups, a session's second server), then each isolated
 * run's (one fresh server per exploration sequence, shrinking's reruns too), each under a note
 * naming it, on the same clock. Of a shared server (Scenario.shares), its greeting, then a note,
 * then the scenario's part.
 */
export function scenarioTranscript(main: Connection | undefined, extras: Connection[], isolated: Connection[] = [], part?: SharedPart): TranscriptEntry[] {
  const entries = main?.transcript.entries ?? [];
  const turn = part ? entries.slice(part.from, part.to) : [];
  const own = part
    ? [...entries.slice(0, part.handshake), { t: turn[0]?.t ?? entries[part.handshake - 1]?.t ?? 0, dir: 'note' as const, text: part.note }, ...turn]
    : entries;
  if (!main || extras.length + isolated.length === 0) return own;
  const onMainClock = (connection: Connection, note: string): TranscriptEntry[] => {
    // Copies: compacted now (the originals are again when their server is closed).
    compactTranscript(connection);
    const shift = connection.transcript.started - main.transcript.started;
    return [{ t: shift, dir: 'note', text: note }, ...connection.transcript.entries.map((entry) => ({ ...entry, t: entry.t + shift }))];
  };
  return [
    ...own,
    ...extras.flatMap((connection, index) => onMainClock(connection, `connection ${index + 2} of this scenario`)),
    ...isolated.flatMap((connection, index) =>
      onMainClock(connection, `isolated run ${index + 1} (a fresh server: an exploration sequence, or a rerun while shrinking)`),
    ),
  ];
}
