import { LAUNCHER_KEY, OLDER_STATE_UPDATE_METHOD, olderSandboxStateProtocol, STATE_KEY, STATE_KEY_DEPRECATED } from '../../harness/codex-wire.js';
import { bothKeys } from './aliases.js';
import { isRefusal } from '../../harness/codex-session.js';
import {
  awaitProbeRuns,
  commandLabel,
  controlFacts,
  judgeStateReachedLaunch,
  launchesFor,
  launchOf,
  parseLaunchArgv,
  probeRunsOf,
  stateInArgv,
  structuralDiff,
  summarizeOutcome,
} from '../engine/judge.js';
import { runsGivenExecutable } from './launcher.js';
import { queueAdapter, queueControl, toolControl } from './exec-tools.js';
import {
  couldNotRun,
  fail,
  pass,
  type CheckDef,
  type ControlFacts,
  type ExecProbe,
  type Scenario,
  type ScenarioContext,
  type Verdict,
  takingTurns,
} from '../engine/model.js';
import type { Observations } from '../../harness/observers.js';

export const argvShape: CheckDef = {
  id: 'forwarding/argv-shape',
  rule: 'FWD-1',
  level: 'MUST',
  title: 'launches `<codex> sandbox --sandbox-state-json <state> -- <command>`',
  summary:
    'The launcher is called with the subcommand sandbox, the whole state as the single value of --sandbox-state-json, then --, then exactly the command asked for. The only other flags allowed are --sandbox-state-readable-root <absolute path> (repeatable) and --sandbox-state-disable-network. Source: CONTRACT.md §3 FWD-1.',
  observes:
    'The exact argv the fake launcher recorded for each launch (its capability probe aside), parsed: first "sandbox", exactly one --sandbox-state-json value, then "--", with only --sandbox-state-readable-root <absolute path> and --sandbox-state-disable-network allowed besides, and for an argv tool the command after "--" equal to the argv the call asked for. The control call only has to launch for this check to run; the monitor judges every launch of every call in the run the same way and charges any misshapen one here, so a correct control call cannot cover a wrong shape in another scenario.',
  why: 'Any other shape is either rejected by the real codex sandbox or changes what runs inside it.',
  typicalMistake: 'Splitting the state across arguments, adding flags such as -C, or wrapping the command in a shell.',
  fix: "spawn(codexExecutable, ['sandbox', '--sandbox-state-json', JSON.stringify(state), '--', ...argv]) with no shell.",
  needs: ['exec', 'opt-in'],
  monitors: 'argv-shape',
};

export const stateUnchanged: CheckDef = {
  id: 'forwarding/state-unchanged',
  rule: 'FWD-2',
  level: 'MUST',
  title: 'forwards the state unchanged, unknown fields included',
  summary:
    'The value passed to --sandbox-state-json is the state Codex sent: nothing added, dropped or renamed, and fields the server does not know (at any depth) survive. Source: CONTRACT.md §2 and §3 FWD-2.',
  observes:
    "The monitor parses the value of --sandbox-state-json of every launch of every call in the run and compares it, deep-equal, with the state that call sent, canaries included (unknown fields at the top level, inside permissionProfile and inside a file_system entry); a value that is not JSON, or differs at any path, is charged here whichever scenario made the call. Only a launch carrying another call's exact state goes to the AUTH checks instead, one of another executable to LAUNCH-1, and one that took a decoy value (the conflicting deprecated key, a state in the arguments) to the check that planted it.",
  why: 'The state is opaque and gains fields between Codex releases; a server that rebuilds it silently drops policy it does not understand.',
  typicalMistake: 'Parsing the state into a typed struct and serializing that struct.',
  fix: 'Forward the JSON value exactly as received (serialize the parsed value, never a typed copy).',
  needs: ['exec', 'opt-in'],
  monitors: 'state-unchanged',
};

export const fidelity: CheckDef = {
  id: 'forwarding/state-fidelity',
  rule: 'FWD-3',
  level: 'SHOULD',
  title: 'forwards the value as received: key order, non-ASCII, empty values, nulls, depth',
  summary:
    'Forward the original JSON value rather than a re-serialized typed copy, so that the order of non-index keys, non-ASCII text, empty objects and arrays, nulls and deep nesting survive. Judged on parsed JSON plus key order, never on bytes (parsers may reorder index-like keys, respell numbers and expand escapes). Source: CONTRACT.md §3 FWD-3.',
  observes:
    "For every launch in the run whose forwarded state is deep-equal with its call's, the monitor compares the order of non-index object keys at every depth with the order sent; the state carries a canary with keys out of alphabetical order, non-ASCII text, empty objects and arrays, nulls and deep nesting. Any reordering is charged here once per launch, in whatever scenario it happened; a value that lost content is FWD-2's finding, so this check is only about values that arrived equal.",
  why: 'A typed copy is where fields get lost or reshaped; a value that comes back in a different order is a sign the server rebuilt it.',
  typicalMistake: 'Deserializing into a struct or a sorted map and serializing that.',
  fix: 'Keep the parsed JSON value as is (or the raw text) and serialize that.',
  needs: ['exec', 'opt-in'],
  monitors: 'fidelity',
};

/**
 * The control call's own launch decides whether there is anything to judge; what is wrong with
 * it, and with every other launch of the run, is the sandbox monitor's finding (suites/engine/monitor.ts),
 * charged to these same checks. So each verdict here is: could not run, or pass pending the monitor.
 */
function judgeArgv(probe: ExecProbe, observations: Observations): Verdict {
  const launch = launchOf(observations, probe.nonce);
  if (!launch) return couldNotRun(`no launch served the control call, so there is no argv to judge (see ${runsGivenExecutable.id})`, runsGivenExecutable.id);
  return pass();
}

function judgeState(probe: ExecProbe, observations: Observations): Verdict {
  const launch = launchOf(observations, probe.nonce);
  if (!launch) return couldNotRun(`no launch served the control call (see ${runsGivenExecutable.id})`, runsGivenExecutable.id);
  if (parseLaunchArgv(launch.argv).stateArguments.length !== 1)
    return couldNotRun(`the launch does not carry exactly one state value (see ${argvShape.id})`, argvShape.id);
  return pass();
}

function judgeFidelity(probe: ExecProbe, observations: Observations, state: unknown): Verdict {
  const launch = launchOf(observations, probe.nonce);
  const received = launch ? stateInArgv(launch.argv) : undefined;
  if (received === undefined) return couldNotRun(`no forwarded state to judge (see ${stateUnchanged.id})`, stateUnchanged.id);
  if (structuralDiff(state, received).length > 0) {
    return couldNotRun(`the forwarded state differs in content (see ${stateUnchanged.id}); fidelity is judged on an equal value`, stateUnchanged.id);
  }
  return pass();
}

/** Why a server that advertises the older protocol's capability launches nothing (olderSandboxStateProtocol), or ''. */
function olderProtocolNote(initializeResult: Record<string, unknown>): string {
  const advertised = olderSandboxStateProtocol(initializeResult);
  if (!advertised) return '';
  return (
    `; it advertises ${advertised}: the older sandbox-state protocol, where the server waits for a ${OLDER_STATE_UPDATE_METHOD} request ` +
    `after initialize. Current Codex (0.171.0) never sends that request: it sends the state with each tools/call, in _meta ` +
    `(${STATE_KEY}, ${STATE_KEY_DEPRECATED}, ${LAUNCHER_KEY}), so such a server can run nothing under it`
  );
}

/**
 * The control: with everything Codex sends, the command runs inside a launch of the given
 * codexExecutable. A launch of it whose command never ran shows nothing: a failure when the call
 * reported success, else could not run (a tool that takes code in another language, say), saying
 * what the launch printed.
 */
function judgeLauncherUsed(probe: ExecProbe, observations: Observations, facts: ControlFacts, initializeResult: Record<string, unknown>): Verdict {
  if (facts.works) return pass(`the codexExecutable sent ran the command: ${facts.detail}`, facts.call);
  const launch = launchOf(observations, probe.nonce);
  const runs = probeRunsOf(observations, probe.nonce);
  if (launch?.launcher === 'a' && runs.length === 0) {
    if (probe.outcome.kind === 'result' && !isRefusal(probe.outcome))
      return fail(`with everything Codex sends, the call reported success, but the command never ran inside the launch${commandLabel(probe.shown)}`, {
        expected: { launchedWith: 'the codexExecutable sent', commandRan: 'inside that launch (the probe leaves a record of its run there)' },
        actual: facts.detail,
      });
    return couldNotRun(`the launcher was started, but the command never ran inside it, so nothing was shown${commandLabel(probe.shown)}: ${facts.detail}`);
  }
  const older = launchesFor(observations, probe.nonce).length === 0 && runs.length === 0 ? olderProtocolNote(initializeResult) : '';
  return fail(
    `with everything Codex sends, the server never ran the command through the ${LAUNCHER_KEY} codexExecutable it was given${commandLabel(probe.shown)}${older}`,
    {
      expected: { response: "the command's output", launchedWith: 'the codexExecutable sent', commandRan: 'inside that launch' },
      actual: {
        ...(summarizeOutcome(probe.outcome) as object),
        launches: launchesFor(observations, probe.nonce).map((l) => l.argv),
        codexFoundOnPath: observations.trapCalls.filter((t) => t.trap === 'path-search').map((t) => t.argv.join(' ')),
        commandRan: runs.length ? runs.map((r) => r.launchId || '(outside any launch)') : false,
      },
    },
  );
}

/**
 * Publishes the control's facts at once (the scenarios waiting on them start), then makes each
 * other exec tool's own control call (its refusals over HTTP rest on it), in this scenario's turn.
 */
async function publishWithToolControls(ctx: ScenarioContext, facts: ControlFacts): Promise<void> {
  // The primary's own control is this one (its optional values' refusals over HTTP rest on it).
  const tools = new Map<string, ControlFacts>(ctx.exec ? [[ctx.exec.tool, facts]] : []);
  let made!: () => void;
  const allMade = new Promise<void>((resolve) => (made = resolve));
  const tool = async (name: string): Promise<ControlFacts> => {
    await allMade;
    return tools.get(name) ?? { works: false, detail: `${name} got no control call over stdio (the control scenario did not reach it)` };
  };
  ctx.publishControl({ ...facts, tool });
  try {
    for (const adapter of ctx.execTools) tools.set(adapter.tool, await toolControl(ctx, adapter));
    for (const pair of ctx.queuePairs) tools.set(queueAdapter(pair).tool, await queueControl(ctx, pair));
  } finally {
    made();
  }
}

/**
 * The control scenario: one call exactly as Codex makes it. It decides the launch and forwarding
 * checks, and tells the fail-closed scenarios whether the exec tool works at all.
 */
export const codexCallScenario: Scenario = {
  id: 'forwarding/codex-call',
  title: 'a tools/call exactly as Codex sends it',
  checks: [runsGivenExecutable, argvShape, stateUnchanged, fidelity, bothKeys],
  needs: ['exec', 'opt-in'],
  transports: ['stdio'],
  isControl: true,
  run: async (ctx) => {
    const probe = await ctx.observers.keepingOutput(async () => {
      const sent = await ctx.execProbe(ctx.codexEntries());
      // A tool that answers before its command has run (a session, a started process): the control waits for the probe's record.
      if (sent.outcome.kind === 'result' && !isRefusal(sent.outcome)) await awaitProbeRuns(ctx, [sent.nonce]);
      return sent;
    });
    const observations = await ctx.observe();
    const facts = await controlFacts(probe, observations, ctx.observers, ctx.exec?.tool ?? '');
    await publishWithToolControls(ctx, facts);
    return new Map<string, Verdict>([
      [runsGivenExecutable.id, judgeLauncherUsed(probe, observations, facts, ctx.handshake.initializeResult)],
      [argvShape.id, judgeArgv(probe, observations)],
      [stateUnchanged.id, judgeState(probe, observations)],
      [fidelity.id, judgeFidelity(probe, observations, ctx.state)],
      [bothKeys.id, await judgeStateReachedLaunch(probe, observations, ctx.state, 'a call with both state keys', ctx)],
    ]);
  },
};

/** The scenarios of this area, in report order (suites/index.ts lists the areas). */
export const forwardingScenarios: Scenario[] = [takingTurns(codexCallScenario)];
