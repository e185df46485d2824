import type { Connection } from '../../harness/target.js';
import type { TranscriptEntry } from '../../harness/transcript.js';

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
    : (entries as TranscriptEntry[]); // the live list: what comes while the server lingers shows too
  if (!main || extras.length + isolated.length === 0) return own;
  const onMainClock = (connection: Connection, note: string): TranscriptEntry[] => {
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
