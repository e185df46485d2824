import { describe, expect, test } from 'vitest';
import { EXPLORE_DEFAULTS, sequencesHoldContract } from '../suites/server/explore.js';
import type { GradedResult } from '../cli/grade.js';
import type { ExploreOptions } from '../suites/engine/model.js';
import { soakHoldsContract } from '../suites/server/lifetime.js';
import { mutantsServer, referenceServer, runAgainst } from './helpers.js';
import { ONLY_EXPLORATION_FINDS } from './matrix-cases.js';
import { EXPLORED_IN_GATE, WHOLE_PROOF } from './tier.js';

/**
 * Exploration finds what no fixed scenario does. These mutants break the contract only after two
 * or more earlier calls on the same process (test/matrix-cases.ts proves every fixed scenario
 * passes them); the default exploration budget, with the default seed, must catch each one and
 * shrink it to at most four steps. (The reference passes the default exploration in
 * test/matrix.test.ts, with every other check.)
 */
/** Defects the fixed scenarios also find: exploration must not miss them either. */
const FIXED_ALSO_FIND = ['every-third-call-direct'];

const exploreOnly = { http: false, select: (id: string) => id === sequencesHoldContract.id };
const explored = (results: GradedResult[]) => results.find((r) => r.id === sequencesHoldContract.id && r.transport === 'stdio')!;
/** One exploration per mutant, shared by the tests that look at it (each costs dozens of server starts). */
const explorations = new Map<string, Promise<GradedResult>>();
const exploration = (mutant: string) => {
  if (!explorations.has(mutant))
    explorations.set(
      mutant,
      runAgainst([mutantsServer, mutant], { explore: EXPLORE_DEFAULTS }, exploreOnly).then((r) => explored(r.results)),
    );
  return explorations.get(mutant)!;
};

/** Registered in the whole proof only (npm run test:all): the gate explores EXPLORED_IN_GATE alone. */
const proofOnly: typeof test = WHOLE_PROOF ? test : ((() => undefined) as unknown as typeof test);

describe.concurrent('exploration', () => {
  for (const mutant of WHOLE_PROOF ? [...ONLY_EXPLORATION_FINDS, ...FIXED_ALSO_FIND] : [EXPLORED_IN_GATE]) {
    test(`${mutant}: caught, and shrunk to at most four steps`, async () => {
      const result = await exploration(mutant);
      expect(result.status, result.message).toBe('fail');
      const counterexample = result.counterexample!;
      expect(counterexample.steps.length).toBeGreaterThan(0);
      expect(counterexample.steps.length).toBeLessThanOrEqual(4);
      expect(counterexample.broken.length).toBeGreaterThan(0);
      expect(counterexample.replay).toMatch(/^-?\d+:\d+(:\d+)*(@\S*)?$/);
    }, 300_000);
  }

  // Defects that wait for time or a count of calls, with small thresholds: an idle step or a repeated call shows them.
  const LIFETIME: Record<string, Record<string, string>> = {
    // warm-worker-by-launcher is not here: the resident server catches it in every default run
    // (test/matrix), but exploration's budget seldom draws a 5 s idle step where it matters.
    'sandbox-off-after-calls': { LIFETIME_OFF_AFTER_CALLS: '8' },
    'recycles-under-first-state': { LIFETIME_RECYCLE_AFTER: '4' },
  };
  for (const [mutant, env] of Object.entries(LIFETIME)) {
    proofOnly(
      `${mutant}: caught by an idle step or a repeated call, shrunk to at most five steps, and replayed`,
      async () => {
        const budget = { ...EXPLORE_DEFAULTS, runs: 40 };
        const result = explored((await runAgainst([mutantsServer, mutant], { explore: budget }, { ...exploreOnly, env })).results);
        expect(result.status, result.message).toBe('fail');
        const found = result.counterexample!;
        expect(found.steps.length).toBeLessThanOrEqual(5);
        expect(found.steps.every((s) => typeof s.atMs === 'number')).toBe(true);
        const [seed, ...path] = found.replay.split(':');
        const replay = { seed: Number(seed), path: path.join(':') };
        const again = explored((await runAgainst([mutantsServer, mutant], { explore: { ...budget, replay } }, { ...exploreOnly, env })).results);
        expect(again.status, again.message).toBe('fail');
        expect(again.counterexample!.steps.length).toBeLessThanOrEqual(5);
      },
      300_000,
    );
  }

  proofOnly(
    'a server that runs pipelines directly: the EXEC-1 finding and the one-step story show the pipeline',
    async () => {
      const select = (id: string) => id === sequencesHoldContract.id || id === 'execution/inside-launch';
      const { results } = await runAgainst([mutantsServer, 'pipelines-direct'], { explore: { ...EXPLORE_DEFAULTS, seed: 2 } }, { http: false, select });
      const pipeline = /\(command, [^:]+: "[^"]*\| [^"]*"\)/;
      const exec = results.find((r) => r.id === 'execution/inside-launch')!;
      expect(exec.status, exec.message).toBe('fail');
      expect(exec.message).toMatch(pipeline);
      expect(explored(results).status, explored(results).message).toBe('fail');
      const story = explored(results).counterexample!;
      // A broken sequence stops at the step that broke it, so shrinking can drop every other step.
      expect(story.steps.map((s) => s.action)).toEqual([expect.stringMatching(pipeline)]);
      expect(JSON.stringify(explored(results).expected)).not.toContain('permissionProfile');
    },
    300_000,
  );

  proofOnly(
    'a shrunk counterexample replays by its seed and path: the same steps fail again, and the reference passes them',
    async () => {
      // On the exec tool alone: session_open starts its command after it answers, so whether a step
      // sent there shows by judging time varies with the load, and with it what shrinking keeps (a
      // full run once replayed other steps). The replay must meet the same outcomes.
      const execAlone = async (server: string[], explore: ExploreOptions) =>
        explored((await runAgainst(server, { explore }, { ...exploreOnly, session: false, skipTools: ['session_open', 'session_send'] })).results);
      const found = (await execAlone([mutantsServer, 'round-robin-workers'], EXPLORE_DEFAULTS)).counterexample!;
      const [seed, ...path] = found.replay.split(':');
      const replay = { seed: Number(seed), path: path.join(':') };
      const again = await execAlone([mutantsServer, 'round-robin-workers'], { ...EXPLORE_DEFAULTS, replay });
      expect(again.status).toBe('fail');
      expect(again.counterexample!.shrinks).toBe(0);
      expect(again.counterexample!.steps.map((s) => s.action)).toEqual(found.steps.map((s) => s.action));
      expect(again.counterexample!.steps.map((s) => s.authority)).toEqual(found.steps.map((s) => s.authority));
      const reference = await execAlone([referenceServer], { ...EXPLORE_DEFAULTS, replay });
      expect(reference.status, reference.message).toBe('pass');
    },
    300_000,
  );

  test('turned off, the check is not applicable, never a pass', async () => {
    const report = await runAgainst([referenceServer], {}, exploreOnly);
    expect(explored(report.results)).toMatchObject({ status: 'skip', reason: 'not-applicable' });
  }, 120_000);
});

// Not beside the explorations above: their dozens of server starts at once once left the soak
// 3 calls in its 4 s (CI, 2 cores), too few to reach the mutant's threshold.
describe('the soak', () => {
  test('the soak fails a server whose sandboxing goes off after some calls, naming the call and its time', async () => {
    const soakOnly = { http: false, select: (id: string) => id === soakHoldsContract.id, env: { LIFETIME_OFF_AFTER_CALLS: '2' } };
    const report = await runAgainst([mutantsServer, 'sandbox-off-after-calls'], { soak: { seconds: 5 } }, soakOnly);
    const soak = report.results.find((r) => r.id === soakHoldsContract.id)!;
    expect(soak.status, soak.message).toBe('fail');
    expect(soak.message).toMatch(/call #\d+ \(sent \d+\.\d s after its server started\)/);
    const off = await runAgainst([referenceServer], {}, soakOnly);
    expect(off.results.find((r) => r.id === soakHoldsContract.id)).toMatchObject({ status: 'skip', reason: 'not-applicable' });
  }, 300_000);
});
