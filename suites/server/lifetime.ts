import * as fc from 'fast-check';
import {
  couldNotRun,
  notApplicable,
  pass,
  type CheckDef,
  type Deadline,
  type ResidentLife,
  type RunOptions,
  type ResidentMilestone,
  type CounterexampleStep,
  type Scenario,
  type ScenarioContext,
  type Verdict,
} from '../engine/model.js';
import { brokenRules, violationsVerdict } from '../engine/judge.js';
import { argumentsNotAuthority, sessionLauncherChange, sessionStateChange, stateFollowsCall } from './authority.js';
import { Traffic, type CallChecks, type Model, type Step, type TrafficOutcome } from '../engine/traffic.js';
import { Burst, Exec, chargedTo, EXPLORE_DEFAULTS, idleStep, judgeTraffic, SessionOpen, SessionRound, singleCalls, SlowExec } from '../engine/traffic.js';
import { SLOW_COMMAND_MS, SLOW_FORMS } from './commands.js';
import { driveExecTool, everyExecTool } from './exec-tools.js';
import { controlledPass } from '../engine/judge.js';
import { brokenSandbox, failsClosedAfterSuccess } from './launcher.js';

/**
 * A server lives for a whole Codex session: minutes to hours, hundreds of calls. Two ways to look
 * at that: the resident server of every default run (one per transport, started first, called
 * throughout the run while the other scenarios run, judged and charged like every other call),
 * and the soak (--soak SECONDS: exploration traffic on one long-lived server per transport).
 */

// ---- the resident server ----

/** Calls the resident server gets over a run: more than 30, so that a defect that waits for 30 calls shows. */
export const RESIDENT_CALLS = 36;
const RESIDENT_SEED = 20261202;
/**
 * Idle gaps (ms) the resident leaves after some calls, whatever the run's pace: a defect may wait
 * for a timer. Up to the call after the last gap (its core: 33 calls, over 5 s) the calls come at
 * once between the gaps, so that a worker that warms up for 4 s after its first call, or a defect
 * that waits for 30 calls, meets them in every default run; a run whose others are done sooner
 * waits for the core, never cuts it.
 */
export const RESIDENT_GAPS = new Map([
  [2, 1500],
  [16, 2000],
  [31, 1500],
]);
const FIRST_GAP = Math.min(...RESIDENT_GAPS.keys());
const LAST_GAP = Math.max(...RESIDENT_GAPS.keys());
/** The resident's core: its calls up to the first after the last gap, and the answers of its slow commands (slowBeside). */
const CORE_CALLS = LAST_GAP + 2;
/**
 * How long the long commands run unless --slow-command says otherwise: as long as a default run
 * affords at no cost. Sent beside the first gap, they end no later than the slow commands sent
 * beside the last one (SLOW_COMMAND_MS), whose answers the core waits for anyway: the gaps before
 * the last and a slow command's length (1.5 + 2 + 2.5 = 6 s); the calls between the gaps only make
 * those end later. Longer than the longest gap, and than a watchdog of 5 s.
 */
export const DEFAULT_SLOW_COMMAND_MS = [...RESIDENT_GAPS.entries()].filter(([k]) => k !== LAST_GAP).reduce((sum, [, ms]) => sum + ms, 0) + SLOW_COMMAND_MS;
/** How long the long commands of the resident and the soak run in this run (--slow-command). */
export const slowCommandMs = (options: RunOptions): number => options.slowCommandMs ?? DEFAULT_SLOW_COMMAND_MS;
/**
 * The gaps beside which the resident sends the slow commands (SLOW_FORMS), left running, and how
 * long they run: beside the first (after its first calls) the long ones (slowCommandMs), which run
 * through the gaps after it; beside the last (past 30 calls and 4 s) two of SLOW_COMMAND_MS. So a
 * server whose watchdog reruns a slow command outside the launch after a few seconds, only after its
 * first calls, or only later in its life, meets them in every default run at no cost in time; the
 * 2 s gap stays idle (a defect may wait for a server with nothing to do).
 */
const slowBeside = (options: RunOptions) =>
  new Map([
    [FIRST_GAP, slowCommandMs(options)],
    [LAST_GAP, SLOW_COMMAND_MS],
  ]);
/** How long the others wait at most for the resident to send its first call. */
const HEAD_START_MS = 1_000;
/** How long a resident may go on once every other scenario is done and it made its core calls. */
const GRACE_MS = 2_000;
/**
 * How long a resident that has not made its core calls may go on without an answer once every other
 * scenario is done (and its long commands' length on top: their answers take that long).
 */
const CORE_WAIT_MS = 20_000;

/**
 * The resident's life, in one place: it starts first, outside the job slots; the others start once
 * it is `calling` (its first call goes out) or after its head start; it calls through the run, its
 * core first; once the others are done, one that made its core calls gets a short grace (its last
 * few calls), and one that has not goes on while its calls are answered (at most CORE_WAIT_MS
 * between two, and the length of its long commands, `slowMs`), so that slow calls never cut the
 * calls a defect on a count or a timer needs, while a server that stops answering still ends the run
 * (the checks it charges then say so: unfinished).
 */
export class ResidentLifecycle implements ResidentLife {
  readonly headStartMs = HEAD_START_MS;
  readonly calling: Promise<void>;
  private readonly core: Promise<void>;
  private readonly reach: Record<ResidentMilestone, () => void> = { calling: () => undefined, core: () => undefined };
  private madeCore = false;
  /** Once the others are done, until its core calls: its deadline, which every answer renews by `ms`. */
  private window?: { deadline: Deadline; ms: number };

  constructor(private readonly slowMs = 0) {
    this.calling = new Promise((resolve) => (this.reach.calling = resolve));
    this.core = new Promise((resolve) => (this.reach.core = resolve));
  }

  reached(milestone: ResidentMilestone): void {
    if (milestone === 'core') this.madeCore = true;
    this.reach[milestone]();
  }

  answered(): void {
    if (this.window && !this.madeCore) this.window.deadline.renew(this.window.ms);
  }

  async othersDone(deadline: Deadline, scenarioTimeoutMs: number): Promise<void> {
    if (!this.madeCore) {
      this.window = { deadline, ms: Math.min(scenarioTimeoutMs, CORE_WAIT_MS) + this.slowMs };
      deadline.cap(this.window.ms);
      await this.core;
    }
    deadline.cap(Math.min(scenarioTimeoutMs, GRACE_MS));
  }

  unfinished(reason: string, crashed: boolean): string | undefined {
    if (crashed) return reason;
    return this.madeCore ? undefined : `its core calls did not finish: ${reason}`;
  }
}

/** The rule-level checks its calls are made for: a finding the monitor charges to no rule's role goes to these. */
const RESIDENT_CHECKS: CallChecks = {
  valid: stateFollowsCall.id,
  refused: failsClosedAfterSuccess.id,
  broken: brokenSandbox.id,
  relative: 'launcher/relative-path',
  notExecutable: 'launcher/not-executable',
  smuggled: argumentsNotAuthority.id,
  sessionLauncher: sessionLauncherChange.id,
  sessionState: sessionStateChange.id,
};

/**
 * The resident's calls: the same every run (seeded), one at a time, authority changed one dimension
 * at a time, missing and malformed authority. The first is as Codex's first call of a session
 * (everything it sends, nothing changed), so that whatever a server starts on its first call has
 * the resident's idle gaps to get ready before the later calls.
 */
function residentSteps(): Step[] {
  // No launcher sent over HTTP: trusting one there is HTTP-2's (a SHOULD), not a finding of the rules the resident charges.
  const sampled = fc.sample(fc.oneof(...singleCalls({ smuggle: false, launcherOverHttp: false })), { seed: RESIDENT_SEED, numRuns: RESIDENT_CALLS - 1 });
  return [new Exec('none', 0, 0, false, false), ...sampled];
}

/**
 * The resident's session traffic, on every session pair, by the call it follows: a session opened
 * on each pair under the current authority, or a round of sends to every open session, each under
 * its own authority with one more dimension changed (SessionRound: none, then policy, launcher,
 * workspace, an unknown field). The first sessions get five sends over the core, those opened
 * past the 2 s gap three: a server that reuses a session across changed authority only from its
 * third send, or only on a pair other than the first, meets them.
 */
const SESSION_STEPS = new Map<number, 'open' | 'round'>([
  [1, 'open'],
  [4, 'round'],
  [9, 'round'],
  [18, 'open'],
  [22, 'round'],
  [26, 'round'],
  [32, 'round'],
]);

/** The session steps after call `k`, with `pairs` session pairs. */
function sessionStepsAfter(k: number, pairs: number): Step[] {
  const action = pairs > 0 ? SESSION_STEPS.get(k) : undefined;
  if (action === 'open') return Array.from({ length: pairs }, (_, pair) => new SessionOpen(pair));
  return action === 'round' ? [new SessionRound()] : [];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Paces call `k`. In the core the calls come at once, the gaps between them in full (even once the
 * others are done: the gaps are what a defect on a timer waits for), so that the gaps are behind
 * the resident early. The calls after the core wait, until the others are done, for the run to
 * have come as far as their share, or for spare capacity (a free job slot, nothing left to start).
 */
async function paceCall(ctx: ScenarioContext, k: number, othersDone: () => boolean): Promise<void> {
  const gap = RESIDENT_GAPS.get(k);
  if (gap !== undefined) await ctx.idle(gap);
  if (k < CORE_CALLS) return;
  const share = (k - CORE_CALLS + 1) / (RESIDENT_CALLS - CORE_CALLS + 1);
  const ready = () => othersDone() || ctx.lifetime.spare() || ctx.lifetime.progress() >= share * 0.9;
  while (!ready()) await sleep(50);
}

async function residentTraffic(ctx: ScenarioContext): Promise<void> {
  // A server that did not opt in gets no sandbox keys, and without an exec tool there is nothing to call: the fixed checks say so.
  if (!ctx.exec || !ctx.optedIn) return ctx.lifetime.reached('calling');
  let done = false;
  void ctx.lifetime.othersDone.then(() => (done = true));
  const traffic = await Traffic.on(ctx, {
    checks: RESIDENT_CHECKS,
    idle: (ms) => ctx.idle(ms),
    stopWhenBroken: false,
    extraTools: [],
    sessionAdapters: ctx.sessionAdapters,
  });
  const model: Model = { steps: 0 };
  const steps = residentSteps();
  const slow = slowBeside(ctx.options);
  let listChanged = ctx.session.toolsListChanged;
  for (const [k, step] of steps.entries()) {
    const slowMs = slow.get(k);
    if (slowMs !== undefined) for (const form of SLOW_FORMS) await new SlowExec(form, slowMs).run(model, traffic);
    await paceCall(ctx, k, () => done);
    // Its server is up and its first call goes out: the others may start (a server that never answers costs them nothing).
    if (k === 0) ctx.lifetime.reached('calling');
    await step.run(model, traffic);
    // Beside the calls, in order: a server whose session calls take seconds does not hold up the core's calls and gaps.
    const sessionSteps = sessionStepsAfter(k, ctx.sessionAdapters.length);
    if (sessionSteps.length > 0)
      traffic.inOrderBeside(async () => {
        for (const sessionStep of sessionSteps) await sessionStep.run(model, traffic);
      });
    if (k === CORE_CALLS - 1) {
      // Over 30 calls and 5 s into the server's life: its other exec tools too (a count or a timer may cover them all).
      for (const adapter of ctx.execTools) await driveExecTool(ctx, adapter, everyExecTool.id, false);
      await traffic.settle();
      ctx.lifetime.reached('core');
    }
    ctx.lifetime.answered();
    ctx.progress(`${traffic.calls} calls, ${seconds(Date.now() - ctx.serverStartedAt)}`);
    if (ctx.session.toolsListChanged !== listChanged) {
      listChanged = ctx.session.toolsListChanged;
      await driveNewTools(ctx, `after notifications/tools/list_changed, ${seconds(Date.now() - ctx.serverStartedAt)} after the resident server started`);
    }
  }
  await ctx.lifetime.othersDone;
  await traffic.settle();
  await driveNewTools(ctx, `at the end of the resident server's life, ${seconds(Date.now() - ctx.serverStartedAt)} after it started`);
}

/**
 * Relists the tools and drives every exec tool that was not listed before with the call with
 * everything Codex sends and the one without a launcher (over HTTP: one call as Codex sends it);
 * the monitor charges what they break (execution/every-exec-tool, or a rule's own check).
 */
async function driveNewTools(ctx: ScenarioContext, when: string): Promise<void> {
  const tools = await ctx.session.listTools(() => ctx.options.callTimeoutMs);
  if (!Array.isArray(tools)) return;
  for (const adapter of ctx.newExecTools(tools, when)) await driveExecTool(ctx, adapter, everyExecTool.id, false);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export const residentScenario: Scenario = {
  id: 'lifetime/resident',
  title: 'one server for the whole run, called throughout it',
  checks: [],
  needs: ['exec', 'opt-in'],
  transports: ['stdio', 'http'],
  resident: {
    life: (options) => new ResidentLifecycle(slowCommandMs(options)),
    charges: [
      RESIDENT_CHECKS.valid,
      RESIDENT_CHECKS.refused,
      RESIDENT_CHECKS.broken,
      RESIDENT_CHECKS.relative,
      RESIDENT_CHECKS.notExecutable,
      RESIDENT_CHECKS.smuggled,
      RESIDENT_CHECKS.sessionLauncher,
      RESIDENT_CHECKS.sessionState,
      everyExecTool.id,
    ],
  },
  // It lasts as long as the run (whose own timeout bounds it).
  timeoutMs: () => Number.MAX_SAFE_INTEGER,
  run: async (ctx) => {
    await residentTraffic(ctx);
    return new Map();
  },
};

// ---- the soak ----

export const soakHoldsContract: CheckDef = {
  id: 'explore/soak-holds-contract',
  rule: 'EXEC-1',
  level: 'MUST',
  title: 'one long-lived server keeps to the contract for the whole soak',
  summary:
    'In Codex a server lives for the whole session: minutes to hours, hundreds of calls. When a soak is asked for, one server per transport receives exploration traffic for that long (authority changed one dimension at a time, missing and malformed authority, every command shape, concurrent bursts, repeated calls, relists, a share of the calls to every other exec tool) with idle gaps of up to several seconds, and beside it one long command after another (each as long as those of the resident server, 6 s unless the run asks for longer), and every call must still run only inside a launch of its own codexExecutable under its own state, or nothing. Source: CONTRACT.md §3 EXEC-1, AUTH-2, AUTH-3, LAUNCH-2.',
  observes:
    'One fresh server with its own observers; after the soak it is stopped and the sandbox monitor judges every call against every execution, launch and trap invocation recorded, as for the fixed scenarios. The soak fails on any finding of a MUST rule, and on a valid call that reported success while its command never ran; the report names each call with its time since the server started, and the steps before the first violation. Not applicable unless a soak is asked for.',
  why: 'A defect that waits for a count of calls (a worker recycled after N calls, a fast path after N successes) or for time (a worker that warms up, a cache that expires) never shows in a scenario a few seconds long on a fresh server.',
  typicalMistake:
    'A warm worker or a recycled one started under a remembered authority; sandboxing dropped after a number of calls or once something "warmed up".',
  fix: 'Read the authority from each call, every time; whatever you keep (workers, pools, caches), key it by the exact state JSON and launcher path, and start it under the authority of the call that needs it.',
  needs: ['exec', 'opt-in', 'soak'],
};

/** The soak's traffic: exploration's steps, and idle gaps of up to several seconds. */
function soakArbitrary(): fc.Arbitrary<Step> {
  const burst = fc
    .array(fc.constantFrom('policy', 'workspace', 'variant', 'launcher' as const), { minLength: 1, maxLength: 2 })
    .map((changes): Step => new Burst(changes));
  return fc.oneof(...singleCalls({ smuggle: true, launcherOverHttp: true }), burst, idleStep());
}

async function soak(ctx: ScenarioContext, seconds: number): Promise<Verdict> {
  const seed = ctx.options.explore?.seed ?? EXPLORE_DEFAULTS.seed;
  const totalMs = seconds * 1000;
  const slowMs = slowCommandMs(ctx.options);
  const run = await ctx.isolated(
    async (sub) => {
      // The soak's time starts once its traffic is set up (on a loaded machine that takes a while).
      let deadline = Infinity;
      const traffic = await Traffic.on(sub, {
        checks: chargedTo(soakHoldsContract.id),
        // An idle gap takes at most an eighth of the soak (a short soak is mostly calls) and never runs past its end.
        idle: (ms) => ctx.idle(Math.max(0, Math.min(ms, totalMs / 8, deadline - Date.now()))),
        // The last long command's time may run past the soak's end: the server lives until it is up.
        linger: (ms) => ctx.idle(ms),
        stopWhenBroken: false,
        // The other exec tools get a share of its valid calls, as in exploration.
        extraTools: sub.execTools,
        sessionAdapters: ctx.sessionAdapters,
      });
      deadline = Date.now() + totalMs;
      const model: Model = { steps: 0 };
      const arbitrary = soakArbitrary();
      // A long command (--slow-command) beside the traffic, the slow forms in turn, the next once the last one's time is up:
      // a watchdog on a long command's length, or on the Nth long command, meets them over the whole soak.
      let slowSent = 0;
      let nextSlowAt = 0;
      for (let chunk = 0; Date.now() < deadline; chunk++) {
        for (const step of fc.sample(arbitrary, { seed: seed + chunk, numRuns: 20 })) {
          if (Date.now() >= deadline) break;
          if (Date.now() >= nextSlowAt) {
            nextSlowAt = Date.now() + slowMs;
            await new SlowExec(SLOW_FORMS[slowSent++ % SLOW_FORMS.length]!, slowMs).run(model, traffic);
          }
          await step.run(model, traffic);
          ctx.progress(`${soakSeconds(Date.now() - sub.serverStartedAt)} of ${seconds} s, ${traffic.calls} calls`);
        }
      }
      await traffic.settle();
      return traffic;
    },
    { timed: true },
  );
  const outcome = judgeTraffic(run, soakHoldsContract);
  const calls = run.calls.length;
  if (outcome.violations.length > 0) return soakFailure(outcome, calls);
  if (run.error) return { status: 'error', message: `the soak could not finish after ${calls} calls: ${(run.error as Error).message ?? String(run.error)}` };
  if (outcome.executed === 0 && ctx.transport === 'stdio')
    return couldNotRun(`${calls} calls in the soak, but no call with valid authority executed anything, so nothing was judged`);
  const note = `${calls} calls over ${seconds} s on one server held the contract; ${outcome.executed} executions judged`;
  // Over HTTP every call must be refused: that says something only when the tool runs commands where it may (the stdio control).
  return ctx.transport === 'http' ? controlledPass(ctx, 'nothing ran over HTTP', note) : pass(note);
}

const soakSeconds = (ms: number) => `${Math.round(ms / 1000)} s`;
function soakFailure(outcome: TrafficOutcome, calls: number): Verdict {
  // The monitor lists findings by kind; the soak tells them in the order their calls were sent.
  const violations = [...outcome.violations].sort((a, b) => (a.call ?? Infinity) - (b.call ?? Infinity));
  const story = outcome.run.value?.story(outcome) ?? [];
  const lead = `after ${calls} calls on one server, the soak broke ${brokenRules(violations)}: `;
  return violationsVerdict(violations, lead, { after: ['the steps before it:', ...stepsBefore(story, violations[0]!.call)] });
}

/** The steps up to the call `call` (the first violation's): the last few, with their times. */
function stepsBefore(story: CounterexampleStep[], call: number | undefined): string[] {
  const upTo = story.findIndex((step) => step.response.some((r) => r.startsWith(`call #${call ?? -1}:`)));
  const end = upTo < 0 ? story.length : upTo + 1;
  return story
    .slice(Math.max(0, end - 5), end)
    .flatMap((step) => [
      `  step ${step.n} [${step.atMs !== undefined ? `${(step.atMs / 1000).toFixed(1)} s` : '?'}] ${step.action}`,
      ...step.authority.map((a) => `      sent: ${a}`),
      ...step.ran.map((r) => `      ran:  ${r}`),
    ]);
}

export const soakScenario: Scenario = {
  id: 'explore/soak',
  title: 'exploration traffic on one long-lived server per transport, for as long as the soak lasts',
  checks: [soakHoldsContract],
  needs: ['exec', 'opt-in'],
  transports: ['stdio', 'http'],
  long: true,
  timeoutMs: (options, base) => (options.soak ? base + options.soak.seconds * 1000 + slowCommandMs(options) : base),
  run: async (ctx) => {
    const verdict = ctx.options.soak ? await soak(ctx, ctx.options.soak.seconds) : notApplicable('the soak was not asked for', 'soak-off');
    return new Map([[soakHoldsContract.id, verdict]]);
  },
};
