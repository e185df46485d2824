import { isDeepStrictEqual } from 'node:util';
import { isRefusal } from '../../harness/codex-session.js';
import type { SandboxEntries } from '../../harness/codex-wire.js';
import { adapterRejection, readSessionId, renderArguments, toolArguments, type ExecAdapter, type SessionAdapter } from '../../harness/exec-adapter.js';
import { isObject } from '../../harness/json.js';
import type { QueuePair } from '../../harness/session-pairs.js';
import { commandText } from '../engine/judge.js';
import type { Observations } from '../../harness/observers.js';
import {
  awaitProbeRuns,
  commandLabel,
  controlFacts,
  judgeFailClosed,
  parseLaunchArgv,
  probeRunsOf,
  summarizeOutcome,
  violationsVerdict,
  type ControlObservers,
} from '../engine/judge.js';
import { grammarProbe, type GrammarEntry } from './commands.js';
import { argumentChoices, openSession, sendToSession } from '../engine/tool-calls.js';
import {
  couldNotRun,
  fail,
  notApplicable,
  pass,
  type CheckDef,
  type ControlFacts,
  type ExecProbe,
  type IsolatedContext,
  type Scenario,
  type ScenarioContext,
  type Verdict,
} from '../engine/model.js';

export const everyExecTool: CheckDef = {
  id: 'execution/every-exec-tool',
  rule: 'EXEC-1',
  level: 'MUST',
  title: 'every tool that can run a command runs it only inside a launch, and fails closed without authority',
  summary:
    'EXEC-1 holds for every tool, not only the one the other checks drive: a second tool that runs a script, evaluates code or starts a process runs it inside `codex sandbox` under the state of its own call, and runs nothing without a valid launcher, or over HTTP. Source: CONTRACT.md §3 EXEC-1, LAUNCH-2, LAUNCH-3, HTTP-1.',
  observes:
    "Every tool detected as one that runs a command (a `command`, `cmd`, `argv`, `script`, `code`, `shell`, `program` or `commandLine` property, or a description that says it runs something; or each exec tool the operator names) other than the one the other checks drive gets the fixed calls, on one server: with everything Codex sends (the probe must run inside a launch of the launcher sent), without a launcher, and with a relative launcher (both must get an error with nothing run), then with everything Codex sends, at once, four commands past the durations, sizes and forms a server may special-case (a command that works for 2.5 s before it runs the probe, a simple command over 1 KB, a `bash -lc` wrapper over 8 KB, a heredoc of about 100 KB: each must run inside a launch, or be refused; success with nothing run fails); over HTTP the plain call and those four as Codex sends them there (nothing may run). Every exec tool, the primary included, is also driven with each choice of its optional properties (each alone at its fixed values: one per property, a number at its largest, except a boolean both ways, every enum value and a working directory at the workspace and a subdirectory; and all together; exploration draws every value a model may give) and, for a code tool, with a program in each language it offers that this machine runs: with everything Codex sends and without a launcher over stdio, as Codex sends it over HTTP. Each tool's refusals count only on that same tool's control: over stdio its own call here, over HTTP its control call over stdio (made by the control scenario); a control counts only when its probe ran inside a launch of the launcher sent, so a tool that launches `true`, or hands our shell line to another language, is could not run, never a pass. Required properties are filled from the schema as detection does. The monitor charges here whatever ran for a call without authority, and to execution/inside-launch whatever ran outside a launch. A tool that was listed after a notifications/tools/list_changed, or by the end of the resident server's life, gets the call with everything Codex sends and the one without a launcher on that server. A tool whose call was rejected as invalid, or that ran nothing even with full authority, was not driven: could not run, never a pass. A session pair's send tool, detected in the tool list, is never sent a command alone: it gets the calls through its pair (a session opened with everything Codex sends, then the probe sent to it with everything Codex sends, without a launcher and with a relative one; over HTTP a session the open grants anyway is sent the probe as Codex sends it there), and a pair whose session cannot be opened or whose id cannot be read is could not run. A queue pair (a submit tool that takes a command and answers a job id, a collect tool that takes only that id) is driven through the pair: the probe queued and collected with everything Codex sends (it must run inside a launch of that authority, at either call: a submit that runs nothing is no failure), then queued with everything Codex sends and collected without a launcher (whatever runs must run inside the queueing call's launch) and collected under another state (it must be refused, or run under the collecting call's launch: a run under the queueing call's state once that call answered fails); over HTTP both calls as Codex sends them there (nothing may run). Its submit tool is never sent a command alone. Not applicable when the server has one exec tool and no session or queue pair.",
  why: 'A model calls whichever tool it likes: one unsandboxed tool beside a sandboxed one runs its commands with the full rights of the server.',
  typicalMistake: 'Routing the main shell tool through the launcher, and a later "run script" or "fast path" tool straight to a child process.',
  fix: 'Send every tool that runs anything through the same launcher code path, with the same authority checks.',
  needs: ['exec', 'opt-in'],
};

/** How long a call that reported success may take to run its command (a session or process tool runs it after answering). */
const ACCEPTED_RUN_WAIT_MS = 5000;

/** What one exec tool was asked, on one server: the control (full authority) and the calls it must refuse. */
export interface ToolCalls {
  adapter: ExecAdapter;
  /** The optional values or language these calls set, in words (none: the tool's template alone). */
  choice?: string;
  control?: ExecProbe;
  refusals: { label: string; probe: ExecProbe }[];
  /** With everything Codex sends, commands of TOOL_SHAPES: each runs inside a launch, or is refused. */
  shaped: { label: string; probe: ExecProbe }[];
  /** A session pair's send tool whose session could not be opened or read: why (it was not driven). */
  unresolved?: string;
  /** A failure found while driving (a queued command run under the queueing call's authority once another collected it). */
  failure?: Verdict & { status: 'fail' };
}

/**
 * What every other exec tool is also sent (over HTTP too, where nothing may run): commands past the
 * sizes and forms a server may special-case (a long command written to a script and run directly,
 * a `bash -lc` unwrapped). The monitor judges where each ran.
 */
const TOOL_SHAPES: GrammarEntry[] = [
  { form: 'slow: works first', size: '100 B' },
  { form: 'simple', size: '1 KB' },
  { form: 'bash -lc', size: '8 KB' },
  { form: 'heredoc', size: '100 KB' },
];

type Variant = { label: string; entries: (ctx: IsolatedContext) => SandboxEntries };
const WITHOUT_LAUNCHER: Variant = { label: 'without a launcher', entries: (ctx) => ({ ...ctx.codexEntries(), launcher: undefined }) };
const RELATIVE_LAUNCHER: Variant = { label: 'with a relative launcher', entries: (ctx) => ({ ...ctx.codexEntries(), launcher: { codexExecutable: 'codex' } }) };

/**
 * Drives one more exec tool with the fixed calls, charged to `check`: over stdio the control and
 * the refusals (`full`: without a launcher and with a malformed one; else without a launcher
 * only); over HTTP one call as Codex sends it there, which must run nothing.
 */
export async function driveExecTool(ctx: IsolatedContext, adapter: ExecAdapter, check: string, full = true): Promise<ToolCalls> {
  const call = (entries: SandboxEntries) => probeTool(ctx, adapter, check, entries);
  // At once: the slow command's seconds overlap the others'.
  const shaped = (entries: SandboxEntries) =>
    Promise.all(
      TOOL_SHAPES.map(async (entry) => {
        const { form, probe } = await grammarProbe(ctx, entry, entries, { adapter, check });
        return { label: form, probe };
      }),
    );
  if (ctx.transport === 'http') {
    const refusals = [{ label: 'over HTTP', probe: await call(ctx.codexEntries()) }];
    for (const { label, probe } of await shaped(ctx.codexEntries())) refusals.push({ label: `over HTTP (${label})`, probe });
    return { adapter, refusals, shaped: [] };
  }
  const control = await ctx.observers.keepingOutput(() => call(ctx.codexEntries()));
  const refusals = [];
  for (const variant of full ? [WITHOUT_LAUNCHER, RELATIVE_LAUNCHER] : [WITHOUT_LAUNCHER])
    refusals.push({ label: variant.label, probe: await call(variant.entries(ctx)) });
  return { adapter, control, refusals, shaped: await shaped(ctx.codexEntries()) };
}

/**
 * A detected session pair's send tool, given the fixed calls through its pair: a session opened with
 * everything Codex sends, then the probe sent to it with everything Codex sends (the control),
 * without a launcher and with a relative one (each refused, nothing run: a session never lends its
 * authority to a call without any). Over HTTP the open should be refused; a session it opens anyway
 * is sent the probe as Codex sends it there, which must run nothing.
 */
export async function driveSessionPair(ctx: ScenarioContext, pair: SessionAdapter, check: string): Promise<ToolCalls | undefined> {
  const adapter: ExecAdapter = { tool: pair.send.tool, arguments: pair.send.arguments, source: 'detected' };
  const { outcome: opened, id } = await openSession(ctx, pair, ctx.codexEntries(), { check });
  if (id === undefined) {
    if (ctx.transport === 'http') return undefined;
    const unresolved = `${pair.send.tool}: no session to send to (${pair.open.tool} returned ${JSON.stringify(summarizeOutcome(opened)).slice(0, 300)})`;
    return { adapter, refusals: [], shaped: [], unresolved };
  }
  const send = async (entries: SandboxEntries): Promise<ExecProbe> => {
    const { nonce, outcome } = await sendToSession(ctx, pair, id, entries, { check });
    return {
      nonce,
      command: ctx.observers.probeCommand(nonce),
      arguments: undefined,
      outcome,
      shown: { form: `simple, to session ${id} of ${pair.open.tool}`, text: ctx.observers.probeCommand(nonce).join(' ') },
    };
  };
  if (ctx.transport === 'http') return { adapter, refusals: [{ label: 'over HTTP', probe: await send(ctx.codexEntries()) }], shaped: [] };
  const control = await send(ctx.codexEntries());
  const refusals = [];
  for (const variant of [WITHOUT_LAUNCHER, RELATIVE_LAUNCHER]) refusals.push({ label: variant.label, probe: await send(variant.entries(ctx)) });
  // Refused with the session's own authority: most likely the id was misread (whatever ran is still the monitor's).
  if (!isRefusal(control.outcome)) return { adapter, control, refusals, shaped: [] };
  const unresolved = `${pair.send.tool}: it refused session id ${JSON.stringify(id)}, read from what ${pair.open.tool} returned (${JSON.stringify(summarizeOutcome(opened)).slice(0, 300)}), with everything Codex sends (${JSON.stringify(summarizeOutcome(control.outcome)).slice(0, 200)})`;
  return { adapter, control, refusals, shaped: [], unresolved };
}

/**
 * A detected queue pair, given the fixed calls: the probe queued with everything Codex sends and
 * collected with the same (the control: wherever it runs, at either call, it runs inside a launch of
 * that authority), then queued with everything Codex sends and collected without a launcher (the
 * collect must refuse, or have nothing to run: whatever ran, ran inside the queueing call's launch,
 * else the monitor's finding). Over HTTP both calls as Codex sends them there: nothing may run. A
 * queue call that runs nothing is no failure; its command is judged where it runs.
 */
export async function driveQueuePair(ctx: ScenarioContext, pair: QueuePair, check: string): Promise<ToolCalls> {
  const adapter = queueAdapter(pair);
  if (ctx.transport === 'http')
    return {
      adapter,
      refusals: [{ label: 'over HTTP', probe: (await queueProbe(ctx, pair, ctx.codexEntries(), ctx.codexEntries(), check)).probe }],
      shaped: [],
    };
  const { probe: control, unresolved } = await queueProbe(ctx, pair, ctx.codexEntries(), ctx.codexEntries(), check);
  // Collected without a launcher: the monitor judges whatever ran (inside the queueing call's launch, or nowhere).
  await queueProbe(ctx, pair, ctx.codexEntries(), WITHOUT_LAUNCHER.entries(ctx), check);
  // Collected under another state: it must refuse, or run the command under that state's launch. What ran
  // by the time the queue call answered was the queue call's (under its own launch, the monitor's to judge).
  const state = { ...ctx.state, [QUEUE_CANARY]: 'collected under another state than it was queued with' };
  let ranBefore = 0;
  const { probe: moved } = await queueProbe(ctx, pair, ctx.codexEntries(), ctx.codexEntries(state), check, async (nonce) => {
    ranBefore = probeRunsOf(await ctx.observe(), nonce).length;
  });
  if (accepted(moved)) await awaitProbeRuns(ctx, [moved.nonce], ACCEPTED_RUN_WAIT_MS);
  const observations = await ctx.observe();
  const stale = probeRunsOf(observations, moved.nonce)
    .slice(ranBefore)
    .map((run) => observations.launches.find((l) => l.id === run.launchId))
    .find((launch) => {
      if (!launch) return false; // outside any launch: the monitor's finding
      const [json] = parseLaunchArgv(launch.argv).stateArguments;
      try {
        return !isDeepStrictEqual(JSON.parse(json ?? 'null'), state);
      } catch {
        return true;
      }
    });
  const failure = stale
    ? (fail(
        `${adapter.tool}: collected under another state, the queued command ran under a launch of another state than the collecting call's${commandLabel(moved.shown)}`,
        {
          expected: "refused, or run inside a launch under the collecting call's state",
          actual: { launch: stale.argv, response: summarizeOutcome(moved.outcome) },
        },
      ) as Verdict & { status: 'fail' })
    : undefined;
  return { adapter, control, refusals: [], shaped: [], ...(unresolved ? { unresolved } : {}), ...(failure ? { failure } : {}) };
}

/** The top-level state field that differs when a queued command is collected under another state. */
const QUEUE_CANARY = 'x-conformance-collected-elsewhere';

/** A queue pair as the tool its findings name: "submit_job then job_result". */
export const queueAdapter = (pair: QueuePair): ExecAdapter => ({
  tool: `${pair.submit.tool} then ${pair.collect.tool}`,
  arguments: pair.submit.arguments,
  source: 'detected',
});

/** The probe queued by the pair's submit tool with `submitEntries` and collected with `collectEntries`; why not, when no id came back. */
async function queueProbe(
  ctx: IsolatedContext,
  pair: QueuePair,
  submitEntries: SandboxEntries,
  collectEntries: SandboxEntries,
  check: string,
  /** Called once the queue call answered, with the probe's nonce. */
  afterSubmit?: (nonce: string) => Promise<void>,
): Promise<{ probe: ExecProbe; unresolved?: string }> {
  const nonce = ctx.observers.newNonce();
  const argv = ctx.observers.probeCommand(nonce);
  const built = toolArguments({ tool: pair.submit.tool, arguments: pair.submit.arguments }, { argv });
  const shown = { form: `simple, queued by ${pair.submit.tool}, collected by ${pair.collect.tool}`, text: commandText(built.line, ctx.observers.dir) };
  const submitted = await ctx.callTool(pair.submit.tool, built.arguments, submitEntries, { check, nonce, command: shown });
  const ok = submitted.kind === 'result' && !isRefusal(submitted);
  const id = ok ? readSessionId(submitted.result, undefined, [pair.idProperty, 'jobId', 'job_id', 'taskId', 'task_id']) : undefined;
  if (id === undefined) {
    const probe = { nonce, command: argv, arguments: undefined, outcome: submitted, shown };
    return ok
      ? {
          probe,
          unresolved: `${pair.collect.tool}: no job id to collect (${pair.submit.tool} returned ${JSON.stringify(summarizeOutcome(submitted)).slice(0, 300)})`,
        }
      : { probe };
  }
  await afterSubmit?.(nonce);
  const rendered = renderArguments(pair.collect.arguments, [], { jobId: id });
  const args = pair.numericId && /^\d+$/.test(id) && isObject(rendered) ? { ...rendered, [pair.idProperty]: Number(id) } : rendered;
  const outcome = await ctx.callTool(pair.collect.tool, args, collectEntries, { check, nonce, command: shown });
  return { probe: { nonce, command: argv, arguments: undefined, outcome, shown } };
}

/** A queue pair's own control, over stdio (made by the control scenario): queued and collected with everything Codex sends. Its refusals over HTTP rest on it. */
export async function queueControl(ctx: IsolatedContext, pair: QueuePair): Promise<ControlFacts> {
  const name = queueAdapter(pair).tool;
  const probe = await ctx.observers.keepingOutput(async () => {
    const { probe: sent } = await queueProbe(ctx, pair, ctx.codexEntries(), ctx.codexEntries(), everyExecTool.id);
    if (accepted(sent)) await awaitProbeRuns(ctx, [sent.nonce], ACCEPTED_RUN_WAIT_MS);
    return sent;
  });
  return controlFacts(probe, await ctx.observe(), ctx.observers, name);
}

/** The probe, sent to `adapter`'s tool with these entries. The tool's name goes with the command's form, so that every finding about the call names the tool. */
async function probeTool(ctx: IsolatedContext, adapter: ExecAdapter, check: string, entries: SandboxEntries): Promise<ExecProbe> {
  return (await grammarProbe(ctx, undefined, entries, { adapter, check })).probe;
}

const accepted = (probe: ExecProbe | undefined): boolean => probe?.outcome.kind === 'result' && !isRefusal(probe.outcome);

/**
 * Another exec tool's own control, over stdio (made by the control scenario): the probe with
 * everything Codex sends, judged as the primary's is. That tool's refusals over HTTP rest on it.
 */
export async function toolControl(ctx: IsolatedContext, adapter: ExecAdapter): Promise<ControlFacts> {
  const probe = await ctx.observers.keepingOutput(async () => {
    const sent = await probeTool(ctx, adapter, everyExecTool.id, ctx.codexEntries());
    if (accepted(sent)) await awaitProbeRuns(ctx, [sent.nonce], ACCEPTED_RUN_WAIT_MS);
    return sent;
  });
  return controlFacts(probe, await ctx.observe(), ctx.observers, adapter.tool);
}

/** A tool's own control, from the primary control's facts (ControlFacts.tool); without one, why not. */
async function ownControl(primary: Promise<ControlFacts>, tool: string): Promise<ControlFacts> {
  const facts = await primary;
  if (facts.tool) return facts.tool(tool);
  return { works: false, detail: `${tool} got no control call over stdio (${facts.detail})` };
}

/**
 * Drives a tool with each of its argument choices but the first (the template alone, which
 * driveExecTool sends): each optional property alone and all together, each language a code tool
 * offers. Over stdio the control and the call without a launcher for each; over HTTP one call as
 * Codex sends it there. The refusals of a choice rest on that choice's own control.
 */
export async function driveChoices(ctx: IsolatedContext, adapter: ExecAdapter, check: string): Promise<ToolCalls[]> {
  const choices = argumentChoices(adapter).slice(1);
  // Several at once (a model sets a handful of properties; a long enum gives many choices).
  const driven: ToolCalls[] = [];
  for (let i = 0; i < choices.length; i += CHOICES_AT_ONCE) {
    const batch = choices.slice(i, i + CHOICES_AT_ONCE).map(async (choice): Promise<ToolCalls> => {
      const call = async (entries: SandboxEntries) => (await grammarProbe(ctx, undefined, entries, { adapter, check, ...choice.values })).probe;
      if (ctx.transport === 'http')
        return { adapter, choice: choice.label, refusals: [{ label: 'over HTTP', probe: await call(ctx.codexEntries()) }], shaped: [] };
      const control = await ctx.observers.keepingOutput(() => call(ctx.codexEntries()));
      return {
        adapter,
        choice: choice.label,
        control,
        refusals: [{ label: WITHOUT_LAUNCHER.label, probe: await call(WITHOUT_LAUNCHER.entries(ctx)) }],
        shaped: [],
      };
    });
    driven.push(...(await Promise.all(batch)));
  }
  return driven;
}

/** Argument choices driven at once by driveChoices. */
const CHOICES_AT_ONCE = 4;

/** One tool's verdict: a failure, a reason it was not driven, or fine. */
type ToolVerdict =
  | { kind: 'fail'; verdict: Verdict & { status: 'fail' } }
  | { kind: 'not-driven'; why: string; rejected: boolean; session?: boolean }
  | { kind: 'ok'; ran: string };

/** The control with full authority: fine when it ran inside a launch; else a failure or why the tool was not driven. */
async function judgeControl(
  tool: string,
  control: ExecProbe,
  observations: Observations,
  observers: ControlObservers,
): Promise<{ facts: ControlFacts; verdict?: ToolVerdict }> {
  const rejected = adapterRejection(control.outcome);
  if (rejected)
    return {
      facts: { works: false, detail: 'rejected' },
      verdict: { kind: 'not-driven', why: `${tool}: its call was rejected as invalid: ${rejected.slice(0, 200)}`, rejected: true },
    };
  const facts = await controlFacts(control, observations, observers, tool);
  if (facts.works) return { facts };
  const runs = probeRunsOf(observations, control.nonce);
  const response = summarizeOutcome(control.outcome);
  if (runs.some((run) => run.launchId === '')) {
    const verdict = fail(`${tool}: with everything Codex sends, the command ran outside any launch of codex sandbox${commandLabel(control.shown)}`, {
      expected: "inside a launch of the codexExecutable sent, under this call's state",
      actual: { response, executions: runs.map((r) => ({ pid: r.pid, cwd: r.cwd, invokedAs: r.invoked, launch: r.launchId || 'none' })) },
    }) as Verdict & { status: 'fail' };
    return { facts, verdict: { kind: 'fail', verdict } };
  }
  if (runs.length === 0 && control.outcome.kind === 'result' && !isRefusal(control.outcome)) {
    const verdict = fail(`${tool}: with everything Codex sends, the call reported success but the command never executed${commandLabel(control.shown)}`, {
      expected: 'the command executed inside a launch of the codexExecutable sent (or the call refused)',
      actual: response,
    }) as Verdict & { status: 'fail' };
    return { facts, verdict: { kind: 'fail', verdict } };
  }
  return { facts, verdict: { kind: 'not-driven', why: `${tool}: ${facts.detail}`, rejected: false } };
}

/**
 * A tool's calls, judged: a refusal that ran anything fails whatever the control did; a refusal
 * passes only on that same tool's control (over stdio its own call here, over HTTP its stdio one).
 */
export async function judgeToolCalls(
  calls: ToolCalls,
  observations: Observations,
  observers: ControlObservers,
  primary: Promise<ControlFacts>,
): Promise<ToolVerdict> {
  const tool = calls.choice ? `${calls.adapter.tool} (${calls.choice})` : calls.adapter.tool;
  if (calls.failure) return { kind: 'fail', verdict: calls.failure };
  if (calls.unresolved) return { kind: 'not-driven', why: calls.unresolved, rejected: false, session: true };
  const control = calls.control ? await judgeControl(tool, calls.control, observations, observers) : undefined;
  const facts = control ? Promise.resolve(control.facts) : ownControl(primary, calls.adapter.tool);
  for (const { label, probe } of calls.refusals) {
    const verdict = await judgeFailClosed(probe, observations, facts);
    if (verdict.status === 'fail') return { kind: 'fail', verdict: { ...verdict, message: `${tool}, ${label}: ${verdict.message}` } };
    if (verdict.status === 'error') return { kind: 'not-driven', why: `${tool}, ${label}: ${verdict.message}`, rejected: false };
  }
  if (control?.verdict) return control.verdict;
  // The tool ran the plain probe inside a launch: a larger or wrapped command must run too, or be refused.
  const silent = calls.shaped.find(
    ({ probe }) => probeRunsOf(observations, probe.nonce).length === 0 && probe.outcome.kind === 'result' && !isRefusal(probe.outcome),
  );
  if (control && silent) {
    const verdict = fail(`${tool}: with everything Codex sends, the call reported success but the command never executed (${silent.label})`, {
      expected: 'the command executed inside a launch of the codexExecutable sent (or the call refused)',
      actual: summarizeOutcome(silent.probe.outcome),
    }) as Verdict & { status: 'fail' };
    return { kind: 'fail', verdict };
  }
  const own = await facts;
  if (!control && !own.works)
    return { kind: 'not-driven', why: `${tool}: the refusal over HTTP proves nothing while its stdio control does not run (${own.detail})`, rejected: false };
  return { kind: 'ok', ran: own.call?.ran ?? '' };
}

/** The check's verdict over every tool: the first failure (the others listed), else every tool not driven, else a pass. */
export function verdictOverTools(judged: { tool: string; verdict: ToolVerdict }[], what: string): Verdict {
  const fails = judged.flatMap(({ verdict }) => (verdict.kind === 'fail' ? [verdict.verdict] : []));
  if (fails.length > 0) return violationsVerdict(fails, '', { listed: fails.length });
  const notDriven = judged.flatMap(({ verdict }) => (verdict.kind === 'not-driven' ? [verdict] : []));
  if (notDriven.length > 0) {
    const hint = notDriven.some((v) => v.rejected) ? 'exec-adapter' : notDriven.some((v) => v.session) ? 'session-adapter' : undefined;
    return couldNotRun(
      `${notDriven.length} of ${judged.length} other exec tools could not be driven: ${notDriven.map((v) => v.why).join('; ')}`,
      undefined,
      hint,
    );
  }
  // What each tool's control ran (the probe, inside which launch): the refusals rest on it.
  const shown = judged.map(({ tool, verdict }) => `${tool} (control: ${verdict.kind === 'ok' ? verdict.ran : ''})`);
  return pass(`${shown.join(', ')}: ${what}`);
}

/** execution/every-exec-tool: the other exec tools, one after another, on one server per transport. */
export const everyExecToolScenario: Scenario = {
  id: everyExecTool.id,
  title: everyExecTool.title,
  checks: [everyExecTool],
  needs: everyExecTool.needs,
  transports: ['stdio', 'http'],
  run: async (ctx) => {
    // The primary's template alone is every other check's; its optional values and languages are driven here.
    const primaryChoices = ctx.exec && argumentChoices(ctx.exec).length > 1;
    // A detected pair's send tool is driven through its pair (an operator's adapter is the session checks' alone).
    const pairs = ctx.sessionAdapters.filter((pair) => pair.detected);
    if (ctx.execTools.length === 0 && !primaryChoices && pairs.length === 0 && ctx.queuePairs.length === 0) {
      return new Map([
        [
          everyExecTool.id,
          notApplicable(`the server has one exec tool (${ctx.exec?.tool ?? 'none'}), which the other checks drive, and it takes no optional property`),
        ],
      ]);
    }
    const driven: ToolCalls[] = [];
    if (primaryChoices) driven.push(...(await driveChoices(ctx, ctx.exec!, everyExecTool.id)));
    for (const adapter of ctx.execTools) {
      driven.push(await driveExecTool(ctx, adapter, everyExecTool.id));
      driven.push(...(await driveChoices(ctx, adapter, everyExecTool.id)));
    }
    for (const pair of pairs) driven.push(...[await driveSessionPair(ctx, pair, everyExecTool.id)].filter((calls) => calls !== undefined));
    for (const pair of ctx.queuePairs) driven.push(await driveQueuePair(ctx, pair, everyExecTool.id));
    // Only session pairs, and over HTTP each refused to open a session: nothing to send to, nothing ran.
    if (driven.length === 0) return new Map([[everyExecTool.id, pass(`over HTTP no session opened (${pairs.map((p) => p.open.tool).join(', ')} refused)`)]]);
    // A tool that starts a session or a process may answer before the command has run (a loaded machine: seconds).
    const nonces = driven.flatMap(({ control, shaped }) =>
      [control, ...shaped.map((s) => s.probe)].flatMap((probe) => (accepted(probe) ? [probe!.nonce] : [])),
    );
    await awaitProbeRuns(ctx, nonces, ACCEPTED_RUN_WAIT_MS);
    const observations = await ctx.observe();
    const judged = [];
    for (const calls of driven)
      judged.push({
        tool: calls.choice ? `${calls.adapter.tool} (${calls.choice})` : calls.adapter.tool,
        verdict: await judgeToolCalls(calls, observations, ctx.observers, ctx.control()),
      });
    const what =
      ctx.transport === 'http'
        ? 'over HTTP (no launcher, as Codex sends) each refused with nothing run'
        : 'each ran the command inside a launch with everything Codex sends, and refused with nothing run without a launcher and with a relative one';
    return new Map([[everyExecTool.id, verdictOverTools(judged, what)]]);
  },
};
