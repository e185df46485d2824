import * as fc from 'fast-check';
import type { Transport } from '../../harness/codex-wire.js';
import { isObject } from '../../harness/json.js';
import { GRAMMAR } from './commands.js';
import { brokenRules, controlledPass, violationsVerdict } from '../engine/judge.js';
import { ShrinkBudget } from '../engine/shrinking.js';
import {
  BAD,
  Burst,
  chargedTo,
  Exec,
  EXPLORE_DEFAULTS,
  idleStep,
  judgeTraffic,
  Other,
  Refused,
  Repeat,
  SessionOpen,
  SessionSend,
  Traffic,
  type Budget,
  type Change,
  type Model,
  type TrafficOutcome,
} from '../engine/traffic.js';
import {
  couldNotRun,
  notApplicable,
  pass,
  type CheckDef,
  type Counterexample,
  type CounterexampleStep,
  type ExploreOptions,
  type Scenario,
  type ScenarioContext,
  type Verdict,
} from '../engine/model.js';

/**
 * Model-based exploration (fast-check's `fc.commands`): random sequences of calls, each sequence
 * against one fresh server process, every call judged by the sandbox monitor. The model is the
 * contract: a step's authority is kept as Codex would keep it (the current workspace, policy,
 * launcher and key form, changed one dimension at a time), and what each call permits (run inside
 * a launch of exactly its codexExecutable under exactly its state, or nothing at all) follows from
 * what it sent (authorityOf). Defects that need several calls on one process to show (a cache, a
 * worker pool, a counter, a remembered launcher) are found this way and shrunk to the shortest
 * sequence that still breaks the contract.
 */
export const sequencesHoldContract: CheckDef = {
  id: 'explore/sequences-hold-contract',
  rule: 'EXEC-1',
  level: 'MUST',
  title: 'random call sequences on one server process keep to the contract at every step',
  summary:
    'Stateful, model-based exploration: sequences of calls on one server process, where the authority changes one dimension at a time (policy, workspace, an unknown field, launcher, which state key carries it), calls arrive with no launcher or a malformed one, a state that is absent or not an object, a launcher that cannot set up a sandbox, authority smuggled in the arguments, commands drawn from the whole command grammar (every form at every size, up to about 100 KB), bursts of concurrent calls whose authority differs in policy, workspace, launcher or key form (sent at once or a few milliseconds apart), resource reads and relists. Every call must run only inside a launch of its own codexExecutable under its own state, or run nothing when its authority is missing or bad, whatever came before it. A violation is shrunk to the shortest sequence that still shows it, with the seed and path that replay it. Source: CONTRACT.md §3 EXEC-1, LAUNCH-1..3, FWD-1, FWD-2, AUTH-1, AUTH-2, AUTH-3, HTTP-1.',
  observes:
    "Each sequence gets a fresh server with its own observers; after its last step the server is stopped and the monitor judges every call of the sequence against every execution, launch and trap invocation it recorded (the same judgement as the fixed scenarios). The sequence fails on any finding of a MUST rule, a call of a burst that ran under another call's authority included (AUTH-3; findings of SHOULD rules, such as key order, are left to their own checks), and on a call with valid authority that reported success while its command never ran (to the exec tool the fixed checks drive; one command shape in four goes to one of the server's other exec tools, if any, judged by what ran). fast-check then shrinks the sequence, rerunning each candidate on a fresh server, and the report lists the minimal one step by step: the authority each call carried, the command's form and text, what ran and in which launch under whose state. The sequence generator is seeded, so a default run is reproducible, and a failure report gives the seed and path that rerun exactly that sequence.",
  why: 'Servers keep state: caches, pools, remembered launchers, counters. Their defects show on the third call, after a failure, or after a change of workspace, where a fixed script of a few calls never looks.',
  typicalMistake:
    'A worker or cache keyed on part of the authority, a launcher remembered "until it changes", or a fast path that kicks in after a few identical calls.',
  fix: "Read the authority from each call, every time; key anything you keep by the exact state JSON and launcher path, and never let one call fall back on another's.",
  needs: ['exec', 'opt-in'],
};

export { EXPLORE_DEFAULTS };
/** Sequences run at once: fixed (not the run's parallelism), so a seed means the same sequences on every machine. */
const WORKERS = 2;
/**
 * A sequence's steps at most. Each sequence starts a fresh server (what makes a sequence replay the
 * same), so the run's cost follows the sequences: a few long ones give a server a long history (the
 * stateful defects' subject) for a start each, where many short ones paid a start per ten steps.
 */
const MAX_STEPS = 60;
/** What each sequence adds to its worker's budget (Budget): idle time and the extra calls of repeated steps. */
const IDLE_PER_SEQUENCE_MS = 1_800;
const REPEATS_PER_SEQUENCE = 24;
/** Shrinking reruns each candidate on a fresh server: at most this many, and no more once 8 in a row shortened nothing (ShrinkBudget). */
const MAX_SHRINK_RUNS = 40;
const SHRINK_PATIENCE = 12;
/** What a time budget allows shrinking on top of it (--explore-time): about as long as 40 reruns take under load. */
const SHRINK_ALLOWANCE_MS = 60_000;

/** A repeated call, 2 to 30 times (shrinking lowers the count). */
const repeatStep = (): fc.Arbitrary<Repeat> =>
  fc
    .tuple(fc.constantFrom<Change>('none', 'policy', 'workspace', 'variant', 'launcher'), fc.nat({ max: 2 }), fc.integer({ min: 2, max: 30 }))
    .map(([change, pick, count]) => new Repeat(change, pick, count));

/** The commands of a sequence, weighted toward the valid calls whose history matters. */
function commandArbitrary(ctx: ScenarioContext, replayPath?: string): fc.Arbitrary<Iterable<fc.AsyncCommand<Model, Traffic>>> {
  const change = fc.constantFrom<Change>('none', 'none', 'none', 'policy', 'workspace', 'variant', 'launcher', 'keys');
  const pick = fc.nat({ max: 2 });
  const sometimes = fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });
  const exec = fc
    .tuple(
      change,
      pick,
      // The plain probe, or a command of the grammar (a form at a size).
      fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 3, arbitrary: fc.integer({ min: 1, max: GRAMMAR.length }) }),
      sometimes,
      fc.boolean(),
    )
    .map(([c, k, shape, s, h]) => new Exec(c, k, shape, s, h));
  const refused = fc.constantFrom(...BAD).map((bad) => new Refused(bad));
  const burst = fc
    .tuple(
      fc.array(fc.constantFrom<Change>('policy', 'workspace', 'variant', 'launcher', 'keys'), { minLength: 1, maxLength: 2 }),
      fc.constantFrom(0, 0, 5, 20),
    )
    .map(([changes, delayMs]) => new Burst(changes, delayMs));
  // Sessions on every session pair (one pair: the draws stay those of a server with one, so its seeded sequences do too).
  const pairs = ctx.sessionAdapters.length;
  const open = pairs > 1 ? fc.nat({ max: pairs - 1 }).map((p) => new SessionOpen(p)) : fc.constant(new SessionOpen());
  const sessions = pairs > 0 ? [open, fc.nat({ max: 1 }).map((k) => new SessionSend(k)), fc.nat({ max: 1 }).map((k) => new SessionSend(k))] : [];
  const capabilities = ctx.handshake.initializeResult.capabilities;
  const others: ('relist' | 'read-resource')[] = isObject(capabilities) && isObject(capabilities.resources) ? ['relist', 'read-resource'] : ['relist'];
  const other = fc.constantFrom(...others).map((what) => new Other(what));
  return fc.commands(
    [exec, exec, exec, exec, exec, refused, refused, burst, other, idleStep(), repeatStep(), ...sessions],
    // fc.commands shrinks by what actually ran, so replaying a shrunk sequence needs that record too.
    // 'max': lengths drawn up to MAX_STEPS (fast-check's default size would keep them under 10).
    { maxCommands: MAX_STEPS, size: 'max', ...(replayPath !== undefined ? { replayPath } : {}) },
  );
}

/**
 * Runs one sequence on a fresh server. It stops at the step that broke a MUST rule (so shrinking
 * drops the steps after it), except when replaying: whether a break shows at once depends on when
 * the records are written, and a replay must run exactly the steps it was given.
 */
async function runSequence(
  ctx: ScenarioContext,
  commands: Iterable<fc.AsyncCommand<Model, Traffic>>,
  budget?: Budget,
  stopWhenBroken = true,
): Promise<TrafficOutcome> {
  const run = await ctx.isolated(async (sub) => {
    const traffic = await Traffic.on(sub, {
      checks: chargedTo(sequencesHoldContract.id),
      idle: (ms) => ctx.idle(ms),
      stopWhenBroken,
      extraTools: sub.execTools,
      sessionAdapters: ctx.sessionAdapters,
    });
    await fc.asyncModelRun(() => ({ model: { steps: 0, budget }, real: traffic }), commands);
    await traffic.settle();
    return traffic;
  });
  return judgeTraffic(run, sequencesHoldContract);
}

// ---- the exploration ----

interface WorkerResult {
  seed: number;
  sequences: number;
  shrinks: number;
  shrinking: ShrinkBudget;
  executed: number;
  failure?: TrafficOutcome;
  path?: string;
  infrastructure?: string;
}

interface Exploration {
  deadline?: number;
  /** Set once any worker found a failure or hit a wall: the others stop starting sequences. */
  stopped: boolean;
  /** Set when no sequence has executed anything and the control shows none will (ControlFacts.blocker): the verdict. */
  blocked?: Verdict;
  /** How many sequences have executed anything, over every worker. */
  executed(): number;
  tick(): void;
}

/**
 * After a sequence, over stdio: when no sequence so far executed anything and the control's call
 * shows that nothing will (it was rejected, or executed nothing at all), further sequences would
 * start servers for nothing.
 */
async function stopWhenBlocked(ctx: ScenarioContext, shared: Exploration): Promise<void> {
  if (ctx.transport !== 'stdio' || shared.executed() > 0 || shared.blocked) return;
  const { blocker } = await ctx.control();
  if (!blocker || shared.executed() > 0) return;
  shared.blocked = blocker;
  shared.stopped = true;
}

/** One fast-check run of `runs` sequences from `result.seed`, filling in `result` as it goes. */
async function exploreWorker(
  ctx: ScenarioContext,
  result: WorkerResult,
  runs: number,
  shared: Exploration,
  replay?: { path: string; commands?: string },
): Promise<void> {
  const seed = result.seed;
  const budget: Budget = { idleMs: IDLE_PER_SEQUENCE_MS * runs, calls: REPEATS_PER_SEQUENCE * runs };
  const property = fc.asyncProperty(commandArbitrary(ctx, replay?.commands), async (commands) => {
    if (result.infrastructure || (shared.stopped && !result.failure)) return true;
    if (result.failure && result.shrinking.spent) return true;
    let outcome: TrafficOutcome;
    try {
      // Shrinking and replaying are not held to the budget: the failure's own idle steps and repeats must run.
      outcome = await runSequence(ctx, commands, result.failure || replay ? undefined : budget, !replay);
    } catch (error) {
      result.infrastructure = (error as Error).message;
      shared.stopped = true;
      return true;
    }
    if (outcome.run.error && outcome.violations.length === 0) {
      // A step that threw (a connection that died, a timeout) without any violation: not the server's fault we can name.
      result.infrastructure ??= `a sequence could not finish: ${(outcome.run.error as Error).message ?? String(outcome.run.error)}`;
      shared.stopped = true;
      return true;
    }
    if (result.failure) {
      result.shrinks++;
      result.shrinking.rerun(outcome.violations.length > 0 ? storySize(outcome, commands) : undefined);
    } else {
      result.sequences++;
      result.executed += outcome.executed;
    }
    shared.tick();
    if (outcome.violations.length === 0) {
      await stopWhenBlocked(ctx, shared);
      return true;
    }
    shared.stopped = true;
    if (!result.failure) result.shrinking.start(storySize(outcome, commands));
    result.failure = outcome;
    return false;
  });
  const remaining = shared.deadline === undefined ? undefined : Math.max(1, shared.deadline - Date.now());
  const details = await fc.check(property, {
    seed,
    numRuns: runs,
    ...(replay ? { path: replay.path, endOnFailure: true } : {}),
    ...(remaining !== undefined ? { interruptAfterTimeLimit: remaining } : {}),
  });
  if (details.failed) {
    // fast-check prints the commands' own replay record with the counterexample: /*replayPath="…"*/.
    const commands = /replayPath="([^"]*)"/.exec(String(details.counterexample?.[0] ?? ''))?.[1];
    result.path = `${details.counterexamplePath ?? ''}${commands ? `@${commands}` : ''}`;
  }
}

/** How many sequences a run of `options` makes on `transport`: over HTTP nothing may ever run, so every step is judged the same way: a third of the budget. */
const sequencesOn = (transport: Transport, options: ExploreOptions): number => (transport === 'http' ? Math.max(1, Math.ceil(options.runs / 3)) : options.runs);

/** Explores with `options` and decides the check. */
export async function explore(ctx: ScenarioContext, options: ExploreOptions): Promise<Verdict> {
  options = { ...options, runs: sequencesOn(ctx.transport, options) };
  const deadline = options.timeMs !== undefined ? Date.now() + options.timeMs : undefined;
  const replay = options.replay;
  const plans = replay
    ? [{ seed: replay.seed, runs: 1, path: replay.path }]
    : Array.from({ length: Math.min(WORKERS, options.runs) }, (_, k) => ({
        seed: (options.seed + k) | 0,
        runs: Math.floor(options.runs / WORKERS) + (k < options.runs % WORKERS ? 1 : 0),
        path: undefined,
      }));
  const results: WorkerResult[] = [];
  const shared: Exploration = {
    deadline,
    stopped: false,
    executed: () => results.reduce((n, r) => n + r.executed, 0),
    tick: () => {
      const run = results.reduce((n, r) => n + r.sequences, 0);
      const shrinking = results.reduce((n, r) => n + r.shrinks, 0);
      ctx.progress(shrinking ? `shrinking a failure: ${shrinking} reruns` : `${run}/${options.runs} sequences`);
    },
  };
  results.push(...plans.map((p) => ({ seed: p.seed, sequences: 0, shrinks: 0, shrinking: new ShrinkBudget(MAX_SHRINK_RUNS, SHRINK_PATIENCE), executed: 0 })));
  const replayOf = (path: string | undefined) => {
    if (path === undefined) return undefined;
    const at = path.indexOf('@');
    return at < 0 ? { path } : { path: path.slice(0, at), commands: path.slice(at + 1) };
  };
  await Promise.all(plans.map((p, k) => exploreWorker(ctx, results[k]!, p.runs, shared, replayOf(p.path))));
  const sequences = results.reduce((n, r) => n + r.sequences, 0);
  const executed = results.reduce((n, r) => n + r.executed, 0);
  const failed = results.find((r) => r.failure);
  if (failed?.failure) return failure(failed, failed.failure);
  if (shared.blocked && !replay) {
    ctx.startsSaved(options.runs - sequences);
    return shared.blocked;
  }
  const broken = results.find((r) => r.infrastructure);
  if (broken) return { status: 'error', message: `exploration stopped after ${sequences} sequence${sequences === 1 ? '' : 's'}: ${broken.infrastructure}` };
  if (sequences === 0) return couldNotRun('the exploration budget ran out before any sequence ran');
  // Over stdio the valid calls must have run something for the sequences to say anything; over HTTP nothing may run.
  if (executed === 0 && ctx.transport === 'stdio')
    return couldNotRun(`${sequences} sequence${sequences === 1 ? '' : 's'} ran, but no call with valid authority executed anything, so nothing was judged`);
  const seeds = results.map((r) => r.seed).join(', ');
  const note = replay
    ? `the replayed sequence (${replay.seed}:${replay.path}) held the contract`
    : `${sequences} sequence${sequences === 1 ? '' : 's'} of up to ${MAX_STEPS} steps (seed${results.length === 1 ? '' : 's'} ${seeds}) held the contract; ${executed} executions judged`;
  // Over HTTP every call must be refused: that says something only when the tool runs commands where it may (the stdio control).
  return ctx.transport === 'http' ? controlledPass(ctx, 'nothing ran over HTTP', note) : pass(note);
}

/**
 * How long a failing sequence's story is: its steps up to the break, then its commands (those after
 * the break are not run, but a replay runs them), then its calls (a repeat of 3 beats a repeat of 30).
 */
const storySize = (outcome: TrafficOutcome, commands: Iterable<unknown>): number[] => [
  outcome.run.value?.story(outcome).length ?? 0,
  [...commands].length,
  outcome.run.calls.length,
];

/** A failing sequence as the reports show it (host exploration's too): its replay token, how it was found, its story, what it broke. */
export function counterexampleOf(
  worker: { seed: number; path?: string; sequences: number; shrinks: number },
  steps: CounterexampleStep[],
  broken: Counterexample['broken'],
): Counterexample {
  const path = worker.path ?? '';
  return { replay: `${worker.seed}:${path}`, seed: worker.seed, path, sequencesRun: worker.sequences, shrinks: worker.shrinks, steps, broken };
}

function failure(worker: WorkerResult, outcome: TrafficOutcome): Verdict {
  const steps = outcome.run.value?.story(outcome) ?? [];
  const broken = outcome.violations.map((v) => ({ rule: v.check.rule, check: v.check.id, message: v.message }));
  const lead = `a sequence of ${steps.length} step${steps.length === 1 ? '' : 's'} broke ${brokenRules(outcome.violations)}: `;
  return violationsVerdict(outcome.violations, lead, { counterexample: counterexampleOf(worker, steps, broken) });
}

export const exploreScenario: Scenario = {
  id: 'explore/sequences',
  title: 'random call sequences, each on a fresh server, shrunk to the smallest that breaks the contract',
  checks: [sequencesHoldContract],
  needs: ['exec', 'opt-in'],
  transports: ['stdio', 'http'],
  long: true,
  // Its sequences draw every form of authority: one the control's call did not use may launch.
  ownCallForms: true,
  // Its calls go to fresh servers of its own; it reads the tools and the opt-in from the shared one's greeting.
  shares: 'handshake',
  // A sequence's servers are fresh; a replay makes one run, plus its shrinking if it fails.
  isolatedRuns: (options, transport) =>
    !options.explore || options.explore.runs <= 0 ? 0 : options.explore.replay ? 1 : sequencesOn(transport, options.explore),
  // A budget in time is the exploration's own bound (shrinking included); a budget in sequences has only the run timeout.
  timeoutMs: (options, base) => (options.explore?.timeMs !== undefined ? base + options.explore.timeMs + SHRINK_ALLOWANCE_MS : Number.MAX_SAFE_INTEGER),
  run: async (ctx) => {
    const options = ctx.options.explore;
    const verdict = !options || options.runs <= 0 ? notApplicable('exploration is turned off', 'explore-off') : await explore(ctx, options);
    return new Map([[sequencesHoldContract.id, verdict]]);
  },
};

/** The scenarios of this area, in report order (suites/index.ts lists the areas). */
export const exploreScenarios: Scenario[] = [exploreScenario];
