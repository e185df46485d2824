import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { mutants, type Findings } from '../fixtures/servers/mutants.mjs';
import type { GradedResult, GradedStatus } from '../cli/grade.js';
import type { RunPlan } from '../suites/engine/runner.js';
import { EXPLORE_DEFAULTS } from '../suites/server/explore.js';
import { idsWith, mutantsServer, runAgainst, type PlanVariant } from './helpers.js';
import { WHOLE_PROOF } from './tier.js';

/**
 * The self-test: the reference passes every check, and each mutant (the reference with one
 * defect) fails exactly the checks aimed at that defect, no more, among the areas it is aimed at. What a mutant must fail, and
 * warn on (SHOULD findings), per transport, is declared with its defect in
 * fixtures/servers/mutants.mjs (`fails`, `warns`): the case table here is derived from those
 * declarations, and this file adds only how some cases run.
 */
interface Case {
  /** The checks it must fail, each as "<transport> <check id>". */
  fail: string[];
  /** The checks it must warn on (SHOULD findings), the same way. */
  warn: string[];
  /** The checks that rest on a control whose command never ran: each could not run, or failed; none passed (Mutant.unshown). */
  unshown?: string[];
  /** The checks it may also fail, and warn on, depending on how fast the run goes (Mutant.onTimer). */
  mayFail?: string[];
  mayWarn?: string[];
  /** Also run it over Streamable HTTP: its declaration has an `http` key. */
  http: boolean;
  /** The mutant to run, when the case name is not the mutant's name. */
  mutant?: string;
  options?: Partial<RunPlan['options']>;
  variant?: PlanVariant;
  /** Only these checks run (id prefix): for a defect that can only show in one area, and is slow. */
  only?: string;
}

/** How some mutants run, by name (what they must find stays in their declarations). */
const RUN: Record<string, Pick<Case, 'options' | 'variant' | 'only'>> = {
  // Ready 2.5 s after its first call: the resident server's idle gaps put its later calls well past that, on any machine.
  'warm-worker-by-launcher': { variant: { env: { LIFETIME_WARM_MS: '2500' } } },
  // It runs `bash -lc` outside the launcher, so with the machine's HOME: a login profile there (pyenv's rehash on some
  // machines) can take a minute. Inside a launch the fake launcher gives commands an empty HOME; here the server gets none.
  'long-commands-direct': { variant: { env: { HOME: '/nonexistent-home' } } },
  'sandboxes-only-when-tested': { variant: { env: { HOME: '/nonexistent-home' } } },
  // A correct server that refuses commands over 64 KB: exploration (which draws them too) must pass it as well.
  'refuses-over-64k': { options: { explore: { ...EXPLORE_DEFAULTS, runs: 4 } } },
  // Slow only when 4+ instances run at once (the catalog burst): stdio only, one job, and only the
  // startup checks (an inventory connection opened while the burst starts would crowd it as well).
  'slow-when-crowded': {
    only: 'catalog/startup',
    options: { startupTimeoutMs: 10_000 },
    variant: { http: false, jobs: 1, env: { SLOW_WHEN_CROWDED_MS: '12000', CROWD_KEY: 'over-budget' } },
  },
};

/** Second cases of a mutant, run with other settings and so finding other things; each comes right after its mutant's case. */
const SECOND_RUNS: Record<string, Case & { mutant: string }> = {
  // Naming how to call the main tool (--exec-tool exec --exec-args ...) must not stop the suite from driving the others.
  'late-unsandboxed-tool-with-named-exec': {
    mutant: 'late-unsandboxed-tool',
    fail: ['stdio execution/every-exec-tool', 'stdio execution/inside-launch', 'http transport/http-fails-closed'],
    warn: [],
    http: true,
    variant: { exec: [{ tool: 'exec', arguments: { command: '{{argv}}' }, source: 'flag' }] },
  },
  'slow-but-in-budget': {
    mutant: 'slow-when-crowded',
    only: 'catalog/startup',
    fail: [],
    warn: ['stdio catalog/startup-headroom'],
    http: false,
    // Wide margins both ways: 12 s of a 20 s budget stays inside it even on a loaded machine.
    options: { startupTimeoutMs: 20_000 },
    variant: { http: false, jobs: 1, env: { SLOW_WHEN_CROWDED_MS: '12000', CROWD_KEY: 'in-budget' } },
  },
};

/** A declaration's findings as "<transport> <check id>", stdio first. */
const overTransports = (findings: Findings | undefined): string[] => [
  ...(findings?.stdio ?? []).map((id) => `stdio ${id}`),
  ...(findings?.http ?? []).map((id) => `http ${id}`),
];
/** The results with a status, as "<transport> <check id>": which transport found it counts too. */
const findings = (results: GradedResult[], status: GradedStatus) =>
  results
    .filter((r) => r.status === status)
    .map((r) => `${r.transport} ${r.id}`)
    .sort();

/** What `found` must be: every one of `must`, and of `may` those it holds (a defect on a timer). */
const within = (found: string[], must: string[], may: string[] = []) => [...must, ...may.filter((id) => found.includes(id))].sort();

/** The case table, in the declarations' order: every mutant that declares findings (then its second runs). */
export const matrix: Record<string, Case> = Object.fromEntries(
  Object.entries(mutants).flatMap(([name, mutant]): [string, Case][] => {
    if (!mutant.fails && !mutant.warns) return [];
    const http = mutant.fails?.http !== undefined || mutant.warns?.http !== undefined;
    const timer = mutant.onTimer ? { mayFail: overTransports(mutant.onTimer.fails), mayWarn: overTransports(mutant.onTimer.warns) } : {};
    const unshown = mutant.unshown ? { unshown: overTransports(mutant.unshown) } : {};
    const own: Case = { fail: overTransports(mutant.fails), warn: overTransports(mutant.warns), http, ...timer, ...unshown, ...RUN[name] };
    return [[name, own], ...Object.entries(SECOND_RUNS).filter(([, second]) => second.mutant === name)];
  }),
);

/**
 * Mutants whose defect needs three or more calls on one process, in a pattern no fixed scenario's
 * own calls make (declared `foundBy: 'exploration'`): in the matrix above only the servers with a
 * history find them (the resident; the shared server the scenarios take turns on);
 * test/explore.test.ts proves that exploration (explore/sequences-hold-contract) catches each one.
 */
export const ONLY_EXPLORATION_FINDS = Object.entries(mutants)
  .filter(([, mutant]) => mutant.foundBy === 'exploration')
  .map(([name]) => name);

const areaOf = (checkId: string) => checkId.split('/')[0]!;

/** How a case runs: the server's arguments, the run options and the plan variant (with the checks selected). */
export function casePlan(name: string, expected: Case): { args: string[]; options: Case['options']; variant: PlanVariant } {
  // Only the areas its declared findings are in (and those it declares it also runs, `alsoRuns`)
  // run: each check's mutant still shows the check failing, and a run costs what its area costs
  // rather than a whole suite (74 whole runs were most of npm test). That the reference passes
  // every check of every area is test/cli.test.ts's default run; correct servers unlike it,
  // test/unusual.test.ts's.
  const declared = mutants[expected.mutant ?? name]!;
  const areas = new Set<string>(declared.alsoRuns ?? []);
  for (const finding of [...expected.fail, ...expected.warn, ...(expected.mayFail ?? []), ...(expected.mayWarn ?? []), ...(expected.unshown ?? [])])
    areas.add(areaOf(finding.split(' ')[1]!));
  const only = expected.only;
  const select = only ? (id: string) => id.startsWith(only) : (id: string) => areas.has(areaOf(id));
  return {
    args: [mutantsServer, expected.mutant ?? name],
    // The resident server (its calls over the whole run, with idle gaps) only for the mutants whose
    // defect waits for a count of calls or for time (`resident: true`); its long commands as long as declared (`slowCommand`).
    options: {
      resident: declared.resident === true,
      ...(declared.slowCommand !== undefined ? { slowCommandMs: declared.slowCommand * 1000 } : {}),
      ...expected.options,
    },
    variant: { http: expected.http, select, ...(declared.noSessionAdapter ? { session: false as const } : {}), ...expected.variant },
  };
}

/** What a case costs, roughly, from its declaration: its areas, the resident's life (idle gaps) when it runs one, its long commands' seconds. */
function caseCost(name: string, expected: Case): number {
  const declared = mutants[expected.mutant ?? name]!;
  const areas = new Set([...expected.fail, ...expected.warn, ...(expected.unshown ?? [])].map((f) => areaOf(f.split(' ')[1]!)));
  const areaCost = expected.only ? 0 : 0.25 * (areas.size + (declared.alsoRuns?.length ?? 0));
  return 1 + (declared.resident ? 2 : 0) + areaCost + (expected.options ? 1 : 0) + (declared.slowCommand ?? 0) / 5;
}

/** A case restricted to stdio: what it declares over HTTP is left out, and no HTTP target runs. */
function overStdioOnly(expected: Case): Case {
  const stdio = (findings: string[] | undefined) => findings?.filter((f) => f.startsWith('stdio '));
  return {
    ...expected,
    fail: stdio(expected.fail)!,
    warn: stdio(expected.warn)!,
    ...(expected.unshown ? { unshown: stdio(expected.unshown) } : {}),
    ...(expected.mayFail ? { mayFail: stdio(expected.mayFail) } : {}),
    ...(expected.mayWarn ? { mayWarn: stdio(expected.mayWarn) } : {}),
    http: false,
    variant: { ...expected.variant, http: false },
  };
}

/**
 * The gate's cases (npm test; test/tier.ts): the fewest, cheapest cases in which every check that
 * some case fails (or warns on) is failed once, chosen greedily from the declarations (the most
 * checks not yet shown per cost). A case runs over stdio alone unless a check it is chosen for
 * shows only over HTTP. Every case still runs in the whole proof (npm run test:all).
 */
export function gateCases(): Record<string, Case> {
  const shown = (findings: string[]) => new Set(findings.map((f) => f.split(' ')[1]!));
  const options = Object.entries(matrix).flatMap(([name, expected]) => {
    const stdio = overStdioOnly(expected);
    const cost = caseCost(name, expected);
    return [
      { name, expected: stdio, checks: shown([...stdio.fail, ...stdio.warn]), cost },
      ...(expected.http ? [{ name, expected, checks: shown([...expected.fail, ...expected.warn]), cost: cost + 1 }] : []),
    ];
  });
  const left = new Set(options.flatMap((o) => [...o.checks]));
  const chosen = new Map<string, Case>();
  while (left.size > 0) {
    const gain = (o: (typeof options)[number]) => [...o.checks].filter((id) => left.has(id)).length / o.cost;
    const best = options.reduce((a, b) => (gain(b) > gain(a) ? b : a));
    // Its HTTP option replaces its stdio one when both are chosen.
    chosen.set(best.name, best.expected.http || !chosen.get(best.name)?.http ? best.expected : chosen.get(best.name)!);
    for (const id of best.checks) left.delete(id);
  }
  return Object.fromEntries([...chosen].sort(([a], [b]) => Object.keys(matrix).indexOf(a) - Object.keys(matrix).indexOf(b)));
}

/** The cases this tier runs: the whole table in the whole proof, the gate's otherwise. */
export const casesOfTier = (): Record<string, Case> => (WHOLE_PROOF ? matrix : gateCases());

/** Runs every case of this tier whose index has the given parity: the table is split over two test
 * files so that both vitest workers share it. */
export function mutantCases(part: 0 | 1): void {
  describe.concurrent('mutants fail exactly the checks aimed at their defect', () => {
    Object.entries(casesOfTier()).forEach(([mutant, expected], index) => {
      if (index % 2 !== part) return;
      test(
        mutant,
        async () => {
          const { args, options, variant } = casePlan(mutant, expected);
          const report = await runAgainst(args, options, variant);
          // On a mismatch, what each finding said (an unexpected one is otherwise only a check id).
          const said = report.results
            .filter((r) => r.status === 'fail' || r.status === 'warn')
            .map((r) => `${r.transport} ${r.id} ${r.status}: ${r.message ?? ''}`)
            .join('\n');
          expect(findings(report.results, 'fail'), said).toEqual(within(findings(report.results, 'fail'), expected.fail, expected.mayFail));
          expect(findings(report.results, 'warn'), said).toEqual(within(findings(report.results, 'warn'), expected.warn, expected.mayWarn));
          // The crowded mutant counts its siblings through pid files in a directory of its own.
          const crowd = expected.variant?.env?.CROWD_KEY;
          if (crowd) rmSync(join(tmpdir(), `msc-crowd-${crowd}`), { recursive: true, force: true });
          expect(idsWith(report.results, 'error')).toEqual([]);
          // A check that rested on a control whose command never ran showed nothing: could not run, or failed; never a pass.
          const shownNothing = (r: GradedResult) => r.status === 'fail' || (r.status === 'skip' && r.reason === 'could-not-run');
          const unshown = new Set(expected.unshown ?? []);
          const passedOnNothing = report.results.filter((r) => unshown.has(`${r.transport} ${r.id}`) && !shownNothing(r));
          expect(passedOnNothing.map((r) => `${r.transport} ${r.id} ${r.status}: ${r.message ?? ''}`)).toEqual([]);
          expect(report.results.filter((r) => unshown.has(`${r.transport} ${r.id}`)).length).toBe(unshown.size);
        },
        300_000,
      ); // generous: CI runs two matrix files and everything else on two cores
    });
  });
}
