import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { RunPlan } from '../suites/runner.js';
import { idsWith, mutantsServer, runAgainst, type PlanVariant } from './helpers.js';

/**
 * The self-test: the reference passes every check, and each mutant (the reference with one
 * defect) fails exactly the checks aimed at that defect, no more. `warn` lists SHOULD findings.
 */
interface Case {
  fail: string[];
  warn?: string[];
  /** Also run it over Streamable HTTP (only where the defect shows there: it doubles the cost). */
  http?: boolean;
  /** The mutant to run, when the case name is not the mutant's name. */
  mutant?: string;
  options?: Partial<RunPlan['options']>;
  variant?: PlanVariant;
  /** Only these checks run (id prefix): for a defect that can only show in one area, and is slow. */
  only?: string;
}
const both = (id: string) => [id, id]; // once over stdio, once over HTTP

const AFTER_SUCCESS = 'launcher/fails-closed-after-success';
const LAUNCHER_FAIL_CLOSED = [
  'launcher/absent-fails-closed',
  'launcher/missing-file',
  'launcher/not-an-object',
  'launcher/not-executable',
  'launcher/relative-path',
];

export const matrix: Record<string, Case> = {
  'path-search': { fail: ['launcher/runs-given-executable'] },
  'drops-unknown-fields': { fail: ['forwarding/state-unchanged'] },
  'adds-field': { fail: ['forwarding/state-unchanged'] },
  'extra-flag': { fail: ['forwarding/argv-shape'] },
  'split-state': { fail: ['forwarding/argv-shape', 'forwarding/state-unchanged'] },
  'shell-wraps-command': { fail: ['forwarding/argv-shape'] },
  'runs-without-launcher': { http: true, fail: [...LAUNCHER_FAIL_CLOSED, AFTER_SUCCESS, 'transport/http-fails-closed'] },
  'accepts-malformed-launcher': { fail: ['launcher/not-an-object', 'launcher/relative-path', AFTER_SUCCESS] },
  'runs-without-state': { fail: ['launcher/state-missing', 'launcher/state-not-object', AFTER_SUCCESS] },
  // Refusing Codex's own call (both keys) is found once, as the control's failure; the rest could not run.
  'rejects-both-keys': { fail: ['launcher/runs-given-executable'] },
  'runs-once-per-key': { fail: ['aliases/both-keys'], warn: ['aliases/conflict-prefers-current'] },
  'ignores-deprecated-key': { fail: ['aliases/deprecated-key-only'] },
  // Reading only the deprecated key also means preferring it when the two disagree.
  'ignores-current-key': { fail: ['aliases/current-key-only'], warn: ['aliases/conflict-prefers-current'] },
  // Defects that show only on some calls, to some observers (found by the monitor or the sequences).
  'first-state-per-workspace': { fail: ['authority/state-follows-call'], warn: ['authority/concurrent-same-workspace'] },
  'state-cache-known-fields': { fail: ['authority/state-follows-call'], warn: ['authority/concurrent-same-workspace'] },
  'first-launcher-wins': { fail: ['authority/state-follows-call'] },
  'deprecated-only-adds-note': { fail: ['forwarding/state-unchanged'] },
  'runs-unsandboxed-first': { fail: ['execution/inside-launch', 'launcher/broken-sandbox-not-bypassed'] },
  'reuses-last-launcher': { fail: [AFTER_SUCCESS] },
  'reuses-last-state': { fail: [AFTER_SUCCESS] },
  'fails-closed-until-success': { fail: [AFTER_SUCCESS] },
  'reruns-when-launcher-fails': { fail: ['launcher/broken-sandbox-not-bypassed'] },
  'harmless-commands-direct': { fail: ['execution/inside-launch'] },
  'every-third-call-direct': { fail: ['execution/inside-launch'] },
  // Defects that need three or more calls on one process in a pattern no fixed scenario has:
  // every fixed check passes them; exploration catches each (test/explore.test.ts).
  'direct-after-two-successes': { fail: [] },
  'round-robin-workers': { fail: [] },
  'pins-workspace-after-repeat': { fail: [] },
  'launcher-cache-by-state': { fail: [] },
  'relative-launcher-in-workspace': { fail: ['launcher/relative-path', AFTER_SUCCESS] },
  'launcher-from-arguments-over-http': { http: true, fail: ['authority/arguments-are-not-authority'] },
  'latest-state-per-workspace': { fail: [], warn: ['authority/concurrent-same-workspace'] },
  // Over both transports: each capability finding shows once for stdio and once for HTTP.
  'slow-but-in-budget': {
    mutant: 'slow-when-crowded',
    only: 'catalog/',
    fail: [],
    warn: ['catalog/startup-headroom'],
    // Wide margins both ways: 12 s of a 20 s budget stays inside it even on a loaded machine.
    options: { startupTimeoutMs: 20_000 },
    variant: { http: false, jobs: 1, env: { SLOW_WHEN_CROWDED_MS: '12000', CROWD_KEY: 'in-budget' } },
  },
  'no-capability': { http: true, fail: ['capability/advertised', 'capability/advertised'] },
  'capability-deprecated-name': { http: true, fail: [], warn: ['capability/current-name', 'capability/current-name'] },
  'capability-top-level': { http: true, fail: ['capability/advertised', 'capability/advertised'] },
  'capability-not-object': { http: true, fail: ['capability/advertised', 'capability/advertised'] },
  'http-runs-directly': { http: true, fail: ['transport/http-fails-closed'] },
  'launcher-over-http': { http: true, fail: [], warn: ['transport/http-ignores-launcher'] },
  'sorts-keys': { fail: [], warn: ['forwarding/state-fidelity'] },
  'prefers-deprecated-key': { fail: [], warn: ['aliases/conflict-prefers-current'] },
  'merges-keys': { fail: [], warn: ['aliases/conflict-prefers-current'] },
  'launcher-from-arguments': { fail: ['authority/arguments-are-not-authority'] },
  'state-from-arguments': { fail: ['authority/arguments-are-not-authority'] },
  'caches-results': { fail: ['authority/no-result-reuse-across-state'] },
  'session-ignores-state': { fail: ['authority/session-state-change'] },
  // Says no, then runs the command in the old session a moment later: the monitor sees it after the scenario.
  'session-refuses-but-runs': { fail: ['authority/session-state-change', 'authority/session-launcher-change'] },
  'session-ignores-launcher': { fail: ['authority/session-launcher-change'] },
  'global-state': { fail: [], warn: ['authority/concurrent-calls-isolated', 'authority/concurrent-same-workspace'] },
  'resource-requires-sandbox-keys': { http: true, fail: [...both('resources/read-with-caller-meta'), ...both('resources/read-without-sandbox-keys')] },
  'resource-rejects-caller-meta': { http: true, fail: both('resources/read-with-caller-meta') },
  'catalog-varies': { http: true, fail: both('catalog/same-across-startups') },
  'catalog-varies-opted-out': { http: true, fail: [], warn: both('catalog/no-cache-opt-out') },
  'catalog-changes-silently': { http: true, fail: both('catalog/stable-on-relist') },
  'catalog-refuses-inventory': { fail: [], warn: ['catalog/inventory-connection'] },
  // Slow only when 4+ instances run at once (the catalog burst); stdio only, one job, so only that burst crowds.
  'slow-when-crowded': {
    only: 'catalog/',
    fail: ['catalog/startup-within-timeout'],
    warn: ['catalog/startup-headroom'],
    options: { startupTimeoutMs: 10_000 },
    variant: { http: false, jobs: 1, env: { SLOW_WHEN_CROWDED_MS: '12000', CROWD_KEY: 'over-budget' } },
  },
};

/**
 * Mutants whose defect needs three or more calls on one process, in a pattern no fixed scenario
 * has: the matrix above proves every fixed check passes them; test/explore.test.ts proves that
 * exploration (explore/sequences-hold-contract) catches each one.
 */
export const ONLY_EXPLORATION_FINDS = ['direct-after-two-successes', 'round-robin-workers', 'pins-workspace-after-repeat', 'launcher-cache-by-state'];

/** Runs every case whose index has the given parity: the table is split over two test files so
 * that both vitest workers share it. */
export function mutantCases(part: 0 | 1): void {
  describe.concurrent('mutants fail exactly the checks aimed at their defect', () => {
    Object.entries(matrix).forEach(([mutant, expected], index) => {
      if (index % 2 !== part) return;
      test(
        mutant,
        async () => {
          // The catalog scenario starts four servers at once and the resource scenario reads no
          // command: they run for the mutants whose defect can show there (and for the reference),
          // and are left out of the others to keep this fast.
          const catalog = mutant.includes('catalog') || mutant.includes('slow') || mutant.includes('crowded');
          const resources = mutant.includes('resource') || mutant.includes('capability');
          const only = expected.only;
          const select = only
            ? (id: string) => id.startsWith(only)
            : (id: string) => (catalog || !id.startsWith('catalog/')) && (resources || !id.startsWith('resources/'));
          const report = await runAgainst([mutantsServer, expected.mutant ?? mutant], expected.options, {
            http: expected.http ?? false,
            select,
            ...expected.variant,
          });
          expect(idsWith(report.results, 'fail')).toEqual([...expected.fail].sort());
          expect(idsWith(report.results, 'warn')).toEqual([...(expected.warn ?? [])].sort());
          // The crowded mutant counts its siblings through pid files in a directory of its own.
          const crowd = expected.variant?.env?.CROWD_KEY;
          if (crowd) rmSync(join(tmpdir(), `msc-crowd-${crowd}`), { recursive: true, force: true });
          expect(idsWith(report.results, 'error')).toEqual([]);
        },
        300_000,
      ); // generous: CI runs two matrix files and everything else on two cores
    });
  });
}
