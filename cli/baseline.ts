import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { Transport } from '../harness/codex-wire.js';
import { isObject } from '../harness/json.js';
import type { CheckDef } from '../suites/engine/model.js';
import { globMatcher, UsageError } from './config.js';
import type { GradedResult, GradedStatus } from './grade.js';

/**
 * A baseline: the failures a project knows about and accepts for now, each with the reason why.
 * Listed failures are reported as `xfail` and do not fail the run; a listed check that passes is
 * `xpass` (the entry is stale and fails the run, so baselines only ever shrink); an entry that
 * names no check at all fails the run too (a typo, or a check that was renamed).
 */

export interface BaselineEntry {
  /** A check id, or a glob over ids (`*` matches anything, `?` one character), as for --only. */
  id: string;
  reason: string;
  /** Only the results on this transport; without it, both. */
  transport?: Transport;
}

export interface Baseline {
  file: string;
  format: 'yaml' | 'json';
  entries: BaselineEntry[];
}

/** What a baseline did to a result: the entry that listed it and the status the check had. */
export interface BaselineMark {
  entry: BaselineEntry;
  was: GradedStatus;
}

/** A result after the baseline: a graded result with the mark of the entry that listed it, if any. */
export type ReportedResult = GradedResult & { baseline?: BaselineMark };

export interface BaselineOutcome {
  results: ReportedResult[];
  /** Entries that listed a check which passes now. */
  stale: BaselineEntry[];
  /** Entries whose id names no known check. */
  unknown: BaselineEntry[];
}

export const PLACEHOLDER_REASON = 'TODO: why this is expected';
/** The statuses a baseline entry can expect: a MUST failure, or a SHOULD failure reported as a warning. */
const FAILING: ReadonlySet<GradedStatus> = new Set<GradedStatus>(['fail', 'warn']);
const ENTRY_KEYS = new Set(['id', 'reason', 'transport']);

// yaml is loaded on first use (a YAML baseline, or paste-ready entries to print): it costs about
// 60 ms of CPU to load, which --help, a usage error or a run without failures need not pay.
let yamlModule: typeof Yaml | undefined;
const YAML = (): typeof Yaml => (yamlModule ??= createRequire(import.meta.url)('yaml') as typeof Yaml);

export const baselineFormat = (file: string): 'yaml' | 'json' => (/\.json$/i.test(file) ? 'json' : 'yaml');

/**
 * Reads and checks a baseline file. Anything wrong with it (unreadable, not YAML/JSON, an entry
 * without a reason) is a usage error: exit 2 before any server starts. A missing file is allowed
 * only when the run is about to write it (--update-baseline).
 */
export function loadBaseline(file: string, { mayBeMissing = false } = {}): Baseline {
  const format = baselineFormat(file);
  if (!existsSync(file)) {
    if (mayBeMissing) return { file, format, entries: [] };
    throw new UsageError(`baseline ${file} does not exist (--update-baseline creates it)`);
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read baseline ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = format === 'json' ? JSON.parse(text) : YAML().parse(text, { prettyErrors: false });
  } catch (error) {
    throw new UsageError(`baseline ${file} is not valid ${format === 'json' ? 'JSON' : 'YAML'}: ${(error as Error).message.split('\n')[0]}`);
  }
  return { file, format, entries: validateBaseline(raw ?? {}, file) };
}

export function validateBaseline(raw: unknown, file: string): BaselineEntry[] {
  if (!isObject(raw)) throw new UsageError(`baseline ${file} must hold a mapping with an "expectedFailures" list`);
  for (const key of Object.keys(raw)) {
    if (key !== 'expectedFailures' && key !== 'version') throw new UsageError(`baseline ${file}: unknown key "${key}" (expected "expectedFailures")`);
  }
  if (raw.version !== undefined && raw.version !== 1)
    throw new UsageError(`baseline ${file}: unsupported version ${JSON.stringify(raw.version)} (this tool reads version 1)`);
  const list = raw.expectedFailures ?? [];
  if (!Array.isArray(list)) throw new UsageError(`baseline ${file}: "expectedFailures" must be a list`);
  return list.map((item: unknown, index): BaselineEntry => {
    const where = `baseline ${file}: entry ${index + 1}`;
    if (!isObject(item)) throw new UsageError(`${where} must be a mapping with "id" and "reason"`);
    for (const key of Object.keys(item)) if (!ENTRY_KEYS.has(key)) throw new UsageError(`${where} has an unknown key "${key}" (known: id, reason, transport)`);
    if (typeof item.id !== 'string' || item.id.trim() === '') throw new UsageError(`${where} needs an "id" (a check id or a glob)`);
    if (typeof item.reason !== 'string' || item.reason.trim() === '')
      throw new UsageError(`${where} (${item.id}) needs a "reason": say why this failure is expected`);
    if (item.transport !== undefined && item.transport !== 'stdio' && item.transport !== 'http') {
      throw new UsageError(`${where} (${item.id}): "transport" must be stdio or http`);
    }
    return { id: item.id, reason: item.reason, ...(item.transport ? { transport: item.transport } : {}) };
  });
}

const matcherFor = (entry: BaselineEntry) => {
  const idMatches = globMatcher([entry.id]);
  return (result: Pick<GradedResult, 'id' | 'transport'>) => idMatches(result.id) && (!entry.transport || entry.transport === result.transport);
};

/** The first entry that lists a result, in file order. */
function entryFor(entries: BaselineEntry[], result: GradedResult): BaselineEntry | undefined {
  return entries.find((entry) => matcherFor(entry)(result));
}

/**
 * The status transform. A listed failure (or warning) becomes `xfail`, a listed pass becomes
 * `xpass`; skips and errors stay as they are (the check said nothing either way).
 */
export function applyBaseline(results: GradedResult[], entries: BaselineEntry[], checks: CheckDef[], file: string): BaselineOutcome {
  const stale = new Set<BaselineEntry>();
  const applied = results.map((result): ReportedResult => {
    const entry = entryFor(entries, result);
    if (!entry) return result;
    if (FAILING.has(result.status)) {
      return { ...result, status: 'xfail', baseline: { entry, was: result.status } };
    }
    if (result.status === 'pass') {
      stale.add(entry);
      return {
        ...result,
        status: 'xpass',
        message: `passes now, but baseline ${file} expects it to fail ("${entry.reason}"): remove the entry "${entry.id}"`,
        baseline: { entry, was: 'pass' },
      };
    }
    return result;
  });
  const unknown = entries.filter((entry) => !checks.some((check) => globMatcher([entry.id])(check.id)));
  return { results: applied, stale: entries.filter((e) => stale.has(e)), unknown };
}

/**
 * The entry a failing result would need: the transport is named only when the same check has a
 * result on the other transport that does not fail (an entry for both would then be stale).
 */
export function entryForFailure(result: GradedResult, all: GradedResult[], reason = PLACEHOLDER_REASON): BaselineEntry {
  const elsewhere = all.filter((r) => r.id === result.id && r.transport !== result.transport);
  const narrow = elsewhere.some((r) => !FAILING.has(r.status));
  return { id: result.id, reason, ...(narrow ? { transport: result.transport } : {}) };
}

/** Results that fail (or warn) and no entry lists: each gets a paste-ready entry. */
export function unexpectedFailures(results: ReportedResult[]): ReportedResult[] {
  return results.filter((r) => FAILING.has(r.status));
}

/**
 * --update-baseline: the baseline this run would need, keeping every reason that still applies.
 * An existing entry stays as written while everything it lists still fails (or did not run). An
 * entry that lists a check that passes now is dropped, or, for a glob that also lists failures,
 * narrowed to exact entries for those failures with the same reason. Entries naming no check go.
 * Each failure no entry lists gets a new entry with a placeholder reason.
 */
export function updatedEntries(results: GradedResult[], entries: BaselineEntry[], checks: CheckDef[]): BaselineEntry[] {
  const out: BaselineEntry[] = [];
  const seen = new Set<string>();
  const push = (entry: BaselineEntry) => {
    const key = `${entry.id}|${entry.transport ?? ''}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(entry);
  };
  for (const entry of entries) {
    const matches = matcherFor(entry);
    const idMatches = globMatcher([entry.id]);
    if (!checks.some((check) => idMatches(check.id))) continue;
    // Only the results this entry would decide (an earlier entry takes a result first).
    const listed = results.filter((r) => matches(r) && entryFor(entries, r) === entry);
    if (!listed.some((r) => r.status === 'pass')) {
      push(entry);
      continue;
    }
    for (const result of listed) {
      if (result.status === 'pass') continue;
      push(
        FAILING.has(result.status)
          ? entryForFailure(result, results, entry.reason)
          : { id: result.id, reason: entry.reason, ...(entry.transport ? { transport: entry.transport } : {}) },
      );
    }
    // Checks the glob lists that did not run at all this time (--only, --skip) keep their entry.
    for (const check of checks) {
      if (idMatches(check.id) && !results.some((r) => r.id === check.id))
        push({ id: check.id, reason: entry.reason, ...(entry.transport ? { transport: entry.transport } : {}) });
    }
  }
  for (const result of results) {
    if (FAILING.has(result.status) && !entryFor(entries, result)) push(entryForFailure(result, results));
  }
  return out;
}

const HEADER = [
  'mcp-sandbox-conformance baseline: failures this project expects for now, each with its reason.',
  'A listed check that fails is reported as xfail (the run passes); one that passes now is xpass',
  'and fails the run until its entry is removed. "id" may be a glob ("launcher/*"); "transport"',
  '(stdio or http) narrows an entry to one transport. Written by --update-baseline, edited by hand.',
];

/** Baseline entries as the file's text, in the file's format (also the paste-ready snippet). */
export function formatEntries(entries: BaselineEntry[], format: 'yaml' | 'json'): string {
  if (format === 'json') return entries.map((e) => JSON.stringify(e)).join(',\n');
  return YAML().stringify(entries, { lineWidth: 0 }).trimEnd();
}

export function serializeBaseline(entries: BaselineEntry[], format: 'yaml' | 'json'): string {
  if (format === 'json') return JSON.stringify({ version: 1, expectedFailures: entries }, null, 2) + '\n';
  const doc = new (YAML().Document)({ version: 1, expectedFailures: entries });
  doc.commentBefore = HEADER.map((line) => ` ${line}`).join('\n');
  return doc.toString({ lineWidth: 0 });
}
