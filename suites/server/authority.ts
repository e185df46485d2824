import { CANARY, codexState, type SandboxEntries, type StateProfile } from '../../harness/codex-wire.js';
import { takesProperties, type SessionAdapter } from '../../harness/exec-adapter.js';
import { isRefusal, type RawOutcome } from '../../harness/codex-session.js';
import {
  awaitProbeRuns,
  carriesState,
  controlledPass,
  judgeFailClosed,
  launchesFor,
  launchOf,
  passOnControl,
  probeRunsOf,
  summarizeOutcome,
  waitForControl,
} from '../engine/judge.js';
import {
  couldNotRun,
  fail,
  pass,
  singleCheckScenario,
  type CheckDef,
  type ProbeOptions,
  type Scenario,
  type ScenarioContext,
  type Verdict,
  takingTurns,
} from '../engine/model.js';
import type { Observations } from '../../harness/observers.js';
import { openSession, sendToSession } from '../engine/tool-calls.js';

export const argumentsNotAuthority: CheckDef = {
  id: 'authority/arguments-are-not-authority',
  rule: 'AUTH-1',
  level: 'MUST',
  title: 'ignores a state or launcher smuggled into the tool arguments',
  summary:
    'Tool arguments come from the model. A sandbox state, a launcher or a _meta-like object inside `arguments` is never used; only the request _meta counts. Rejecting the unknown arguments is fine. Source: CONTRACT.md §3 AUTH-1.',
  observes:
    "One call carries the normal _meta and, in its arguments, a danger-full-access state with its own sandboxCwd and a planted trap executable, under every plausible name (codexExecutable, sandboxState, codex/sandbox-state, codex/sandbox-launcher, _meta); over stdio its launch must carry the _meta state's sandboxCwd, or the call be refused while the control works. The monitor charges here any invocation of the trap and any launch of the call whose forwarded state contains the smuggled sandboxCwd; over HTTP, where nothing may run, everything else that ran is HTTP-1's.",
  why: 'A model (or a prompt injection) could otherwise widen its own sandbox or pick the binary that runs its command.',
  typicalMistake: 'Merging arguments and _meta into one options object, or accepting a codexExecutable argument "for testing".',
  fix: 'Read codex/sandbox-state and codex/sandbox-launcher from the request _meta only.',
  needs: ['exec', 'opt-in'],
};

export const noCachedResults: CheckDef = {
  id: 'authority/no-result-reuse-across-state',
  rule: 'AUTH-2',
  level: 'MUST',
  title: 'repeating a call under a different state launches again under that state',
  summary:
    'A result produced under one authority is not handed out for a call with another: the same exec call repeated with a different state must run again, under the new state (or be refused). Source: CONTRACT.md §3 AUTH-2.',
  observes:
    'The same exec call is sent twice with the same arguments and nonce, the second under a state with network enabled and another sandboxCwd, and the suite counts the launches that carried that nonce: a single launch while the second call reported success fails (a reused result), otherwise the last launch must carry the second state\'s sandboxCwd before "--". Both calls are registered, so a launch of either under a state or executable that neither sent is still the monitor\'s finding (FWD-2, LAUNCH-1).',
  why: 'A cache keyed on the arguments alone replays what one sandbox allowed to a caller in another.',
  typicalMistake: 'Memoizing tool results by their arguments.',
  fix: 'Do not cache exec results, or include the exact state and launcher in the cache key.',
  needs: ['exec', 'opt-in'],
};

const sessionCheck = (id: string, title: string, changed: string): CheckDef => ({
  id,
  rule: 'AUTH-2',
  level: 'MUST',
  title,
  summary: `A long-lived subprocess belongs to the authority it was started under. This check opens a session, then sends it a command with ${changed}: the server must refuse, or run it in a fresh launch under the new authority, never in the old process. Source: CONTRACT.md §3 AUTH-2.`,
  observes: `On each session pair (the operator's session adapter, else every pair detected in the tool list: an open tool, and a send tool taking the session's id and a command), a session is opened and sent a probe command under the same authority; the launch id in that command's execution record identifies the session's launch, which must be one of the launcher sent (otherwise the check could not run). A second command is then sent with ${changed}: the check fails if its execution record carries the session's original launch id, or if the call reported success and the command never ran. After a refusal the servers stay up a moment longer (in the background), so a command the server refuses but still sends to the old session is seen too; both sends name this check as their authority check, so the monitor charges here any launch of theirs that carries another call's authority. Over a server's life the resident server, on every pair, opens sessions (two per pair, the second past its 2 s gap) and sends each a round of probes, one after each other under the session's own authority with one more dimension changed (its own, then policy, launcher, workspace, an unknown field; five sends to the first sessions over its core, three to the later ones): a send under ${changed} that ran in the session's launch is charged here too, so a server that reuses a session only from its third send, or on a pair other than the first, fails.`,
  why: 'The old process keeps the old sandbox; reusing it for a call with another policy runs that call under a policy Codex did not send.',
  typicalMistake: 'Looking sessions up by id only.',
  fix: 'Store the state JSON and launcher path with each session; on every call compare them and refuse (or restart) on any difference.',
  needs: ['exec', 'opt-in', 'session'],
});

export const sessionStateChange = sessionCheck('authority/session-state-change', 'a session is not reused after the state changes', 'a different state');
export const sessionLauncherChange = sessionCheck(
  'authority/session-launcher-change',
  'a session is not reused after the launcher changes',
  'the same state but a different launcher path',
);

export const stateFollowsCall: CheckDef = {
  id: 'authority/state-follows-call',
  rule: 'AUTH-2',
  level: 'MUST',
  title: 'on one server process, every call launches under its own state and launcher',
  summary:
    "Authority belongs to the call that sent it. On one server process the suite sends, one after another: a state, the same workspace with another policy, the same policy with only an unknown field changed, another launcher, and the first authority again. Each launch must carry exactly the state and codexExecutable of its own call. The sandbox monitor also charges to this check any launch, in any scenario, that carried an earlier call's authority. Source: CONTRACT.md §3 AUTH-2 and EXEC-1.",
  observes:
    "Five calls on one server process: the scenario state, the same workspace with network enabled, only an unknown canary field changed, a second launcher, then the first authority again; the scenario fails a call that reported success with nothing launched or executed. The monitor compares each launch's executable and whole forwarded state with its own call's, and charges here any launch, in any scenario of the run, that carries exactly the authority of another call of that scenario instead of its own (concurrent calls and sessions have checks of their own), so a cache keyed on known fields or on the workspace shows wherever it bites.",
  why: 'A server that remembers the first state of a workspace, or caches by the fields it knows, runs later commands under a policy Codex no longer sends.',
  typicalMistake: 'Caching the serialized state or the launcher path by workspace, by known fields, or "until it changes".',
  fix: 'Read and forward the state and launcher of each call, every time; if you must cache, key by the exact state JSON and launcher path.',
  needs: ['exec', 'opt-in'],
  monitors: 'stale-authority',
};

export const concurrentSameWorkspace: CheckDef = {
  id: 'authority/concurrent-same-workspace',
  rule: 'AUTH-3',
  level: 'MUST',
  title: 'concurrent calls that share a workspace each launch with their own state',
  summary:
    "Calls in flight at the same time, for the same workspace but with different policies, never see each other's state: each launch carries the whole state of its own call (told apart by content, not by the workspace path). Source: CONTRACT.md §3 AUTH-3 (MUST).",
  observes:
    "Four calls sent at once share the workspace and differ only in network (restricted or enabled) and a conformanceCall field; the scenario only requires that at least one launched. The monitor matches each launch to the calls by whole-state deep equality, not by sandboxCwd, and charges here any launch of one call that carries another's state, showing both calls and the authority each sent; any other difference is FWD-2's.",
  why: 'A per-workspace "current state" mixes up two turns that work in the same directory.',
  typicalMistake: 'Keeping the latest state per workspace (or per session) in a map that concurrent calls overwrite.',
  fix: 'Pass the state from the request handler down to the spawn, with no shared mutable state.',
  needs: ['exec', 'opt-in'],
};

export const concurrentCalls: CheckDef = {
  id: 'authority/concurrent-calls-isolated',
  rule: 'AUTH-3',
  level: 'MUST',
  title: 'concurrent calls with different states each launch with their own',
  summary:
    "Calls in flight at the same time never see each other's state or launcher: each launch carries the authority of the call that asked for it. A command that ran under another in-flight call's authority fails the run, in this scenario, in any other, and in exploration's bursts alike: a read-only call that runs under a concurrent call's permissive state is a sandbox escape. Source: CONTRACT.md §3 AUTH-3 (MUST).",
  observes:
    "Four calls sent at once, each with a state of its own sandboxCwd, are registered as concurrent; the scenario only requires that at least one launched. The monitor charges here any launch of one of them that carries another's exact state and executable (any other difference is FWD-2's), and any such launch of concurrent calls in any other scenario of the run, so a mix-up cannot hide behind the scenario's pass; the finding shows both calls and the authority each sent. Exploration's bursts (calls differing in policy, workspace, launcher or key form, sent at once or a few milliseconds apart) fail explore/sequences-hold-contract the same way.",
  why: 'Codex can run several tool calls at once; a shared "current state" lets one call run under another\'s policy.',
  typicalMistake: 'Keeping the latest state in a global or per-connection variable.',
  fix: 'Pass the state from the request handler down to the spawn, with no shared mutable state.',
  needs: ['exec', 'opt-in'],
  monitors: 'concurrent-authority',
};

/** Codex's state of another profile (same Codex, same workspace unless given), canaries included, as after a policy change. */
const stateOf = (ctx: ScenarioContext, profile: StateProfile, workspace = ctx.observers.workspaceDir): Record<string, unknown> =>
  codexState(profile, workspace, { linuxSandboxExe: String(ctx.state.codexLinuxSandboxExe) });

/** Codex's state of `profile` on a workspace of its own, so that launches can tell it apart. */
async function variantState(ctx: ScenarioContext, name: string, profile: StateProfile = 'workspace-write'): Promise<Record<string, unknown>> {
  return stateOf(ctx, profile, await ctx.observers.workspaceVariant(name));
}

/** The check passes when the call's launch carried `expected`; a refusal passes when the control shows the tool works. */
async function judgeRanUnder(
  ctx: ScenarioContext,
  outcome: RawOutcome,
  nonce: string,
  observations: Observations,
  expected: Record<string, unknown>,
  what: string,
): Promise<Verdict> {
  const launch = launchOf(observations, nonce);
  if (!launch) {
    const blocked = await waitForControl(ctx, 'nothing launched');
    if (blocked) return blocked;
    const verdict = await judgeFailClosed({ nonce, command: [], arguments: undefined, outcome }, observations, ctx.control());
    return verdict.status === 'pass' ? passOnControl('the server refused the call', await ctx.control()) : verdict;
  }
  if (carriesState(launch.argv, expected)) return pass();
  return fail(`${what}: the launch did not carry the state from _meta (sandboxCwd ${JSON.stringify(expected.sandboxCwd)})`, {
    expected,
    actual: launch.argv,
  });
}

/**
 * A permissive state and a trap launcher smuggled into a call's arguments under every plausible
 * name, and the decoy the monitor charges to AUTH-1's check when a launch carries that state (its
 * sandboxCwd): what the check, exploration and the soak send.
 */
export function smuggledAuthority(trap: string, permissive: Record<string, unknown>): Pick<ProbeOptions, 'extraArguments' | 'decoy'> {
  const launcher = { codexExecutable: trap };
  return {
    extraArguments: {
      codexExecutable: trap,
      sandboxState: permissive,
      'codex/sandbox-state': permissive,
      'codex/sandbox-launcher': launcher,
      _meta: { 'codex/sandbox-state': permissive, 'codex/sandbox-state-meta': permissive, 'codex/sandbox-launcher': launcher },
    },
    decoy: { check: argumentsNotAuthority.id, markers: [JSON.stringify(permissive.sandboxCwd)] },
  };
}

/** AUTH-1 on both transports: a permissive state and a trap launcher in the arguments are never used. */
const argumentsScenario = singleCheckScenario(
  argumentsNotAuthority,
  async (ctx) => {
    const trap = await ctx.plantTrap('launcher-in-arguments');
    const permissive = await variantState(ctx, 'from arguments', 'danger-full-access');
    if (!takesProperties(ctx.exec?.arguments)) {
      return couldNotRun('the exec arguments template is not an object, so nothing can be smuggled into it');
    }
    const probe = await ctx.execProbe(ctx.codexEntries(), smuggledAuthority(trap, permissive));
    const observations = await ctx.observe();
    // Over HTTP no launcher is trusted: a trap that fired is this check's finding (the monitor's),
    // anything else that ran is HTTP-1's.
    if (ctx.transport === 'http') return controlledPass(ctx, 'nothing ran', 'over HTTP the authority in the arguments was not used');
    // A trap that fired is the monitor's finding, charged to this check.
    return judgeRanUnder(ctx, probe.outcome, probe.nonce, observations, ctx.state, 'with a permissive state in the arguments');
  },
  ['stdio', 'http'],
);

const cacheScenario = singleCheckScenario(noCachedResults, async (ctx) => {
  const first = await ctx.execProbe(ctx.codexEntries());
  const changed = await variantState(ctx, 'second call', 'workspace-write-network');
  const second = await ctx.execProbe(ctx.codexEntries(changed), { nonce: first.nonce });
  const observations = await ctx.observe();
  const launches = launchesFor(observations, first.nonce);
  if (launches.length === 0)
    return (await waitForControl(ctx, 'the first call launched nothing')) ?? couldNotRun('the first call launched nothing (see the forwarding checks)');
  if (launches.length === 1 && !isRefusal(second.outcome)) {
    return fail('the repeated call under a different state did not launch again: its result was reused', {
      expected: { launches: 2, secondState: changed },
      actual: { launches: launches.length, secondResponse: summarizeOutcome(second.outcome) },
    });
  }
  if (launches.length === 1) return pass('the server refused the repeated call');
  const launch = launches.at(-1)!;
  return carriesState(launch.argv, changed)
    ? pass()
    : fail('the repeated call: the launch did not carry the state from _meta', { expected: changed, actual: launch.argv });
});

/** Judges that concurrent calls launched; who got whose state is the monitor's finding (charged to `check`). */
function concurrentScenario(check: CheckDef, states: (ctx: ScenarioContext) => Promise<Record<string, unknown>[]>): Scenario {
  return singleCheckScenario(check, async (ctx) => {
    const sent = await states(ctx);
    const probes = await Promise.all(sent.map((state) => ctx.execProbe(ctx.codexEntries(state), { concurrent: true, authorityCheck: check.id })));
    const observations = await ctx.observe();
    const launched = probes.filter((p) => launchOf(observations, p.nonce)).length;
    if (launched === 0)
      return (await waitForControl(ctx, 'none of the concurrent calls launched anything')) ?? couldNotRun('none of the concurrent calls launched anything');
    return pass(launched < probes.length ? `${probes.length - launched} of ${probes.length} calls were refused` : undefined);
  });
}

/** One server, one call after another, each with authority that differs from the last in one way. */
const sequenceScenario = singleCheckScenario(stateFollowsCall, async (ctx) => {
  const steps: { label: string; entries: SandboxEntries }[] = [
    { label: 'the scenario state', entries: ctx.codexEntries() },
    { label: 'same workspace, network enabled', entries: ctx.codexEntries(stateOf(ctx, 'workspace-write-network')) },
    { label: 'only an unknown field changed', entries: ctx.codexEntries({ ...ctx.state, [CANARY.topLevel]: { note: 'changed between calls', list: [] } }) },
    { label: 'another launcher', entries: { ...ctx.codexEntries(), launcher: { codexExecutable: await ctx.observers.secondLauncher() } } },
    { label: 'the first authority again', entries: ctx.codexEntries() },
  ];
  const probes = [];
  for (const step of steps) probes.push({ label: step.label, probe: await ctx.execProbe(step.entries) });
  const observations = await ctx.observe();
  const silent = probes.filter(
    ({ probe }) => !launchOf(observations, probe.nonce) && probeRunsOf(observations, probe.nonce).length === 0 && !isRefusal(probe.outcome),
  );
  if (probes.every(({ probe }) => !launchOf(observations, probe.nonce))) {
    return (await waitForControl(ctx, 'no call of the sequence launched anything')) ?? couldNotRun('no call of the sequence launched anything');
  }
  if (silent.length > 0) {
    return fail(`${silent.length} call${silent.length === 1 ? '' : 's'} reported success without launching anything`, {
      expected: 'each call launched under its own authority (or refused)',
      actual: silent.map(({ label, probe }) => ({ call: label, response: summarizeOutcome(probe.outcome) })),
    });
  }
  return pass();
});

/** A session pair in words, for findings: "shell_open → shell_send". */
const pairLabel = (adapter: SessionAdapter) => `${adapter.open.tool} → ${adapter.send.tool}`;

/** Why a session check could not run on a pair: what went wrong, and what the open returned (the adapter is then at fault, or the server). */
const pairCouldNotRun = (adapter: SessionAdapter, what: string, opened: RawOutcome) =>
  couldNotRun(
    `${adapter.detected ? 'the detected session pair' : 'the session adapter'}: ${what}; the open returned ${JSON.stringify(summarizeOutcome(opened)).slice(0, 300)}`,
    undefined,
    'session-adapter',
  );

type SessionSend = (sandbox: SandboxEntries) => Promise<{ nonce: string; outcome: RawOutcome }>;

/**
 * Opens a session on `adapter` under the scenario's authority and sends it the probe under the same
 * authority: the send, and the launch that command ran in (the session's); else why the check could not run.
 */
async function openedSession(ctx: ScenarioContext, check: CheckDef, adapter: SessionAdapter): Promise<{ send: SessionSend; launchId: string } | Verdict> {
  const { outcome: opened, id } = await openSession(ctx, adapter, ctx.codexEntries(), { check: check.id });
  if (opened.kind !== 'result' || isRefusal(opened)) {
    const what = `opening the session (${pairLabel(adapter)}) failed: ${JSON.stringify(summarizeOutcome(opened))}`;
    return (await waitForControl(ctx, what)) ?? couldNotRun(what, undefined, 'session-adapter');
  }
  if (id === undefined) {
    const where = adapter.sessionId ? `at "${adapter.sessionId}"` : (adapter.detected?.reads ?? 'in structuredContent.sessionId or a single text block');
    return pairCouldNotRun(adapter, `no session id ${where}`, opened);
  }
  const send: SessionSend = (sandbox) => sendToSession(ctx, adapter, id, sandbox, { check: check.id, authorityCheck: check.id });
  // Control: under the same authority, the session runs what it is sent inside a launch of the
  // launcher sent; that launch, found by where the command ran, is the session's.
  const same = await send(ctx.codexEntries());
  const observations = await awaitProbeRuns(ctx, [same.nonce]);
  const sessionLaunch = launchOf(observations, same.nonce);
  if (!sessionLaunch || sessionLaunch.launcher !== 'a') {
    return pairCouldNotRun(
      adapter,
      `under the same authority the session (id ${JSON.stringify(id).slice(0, 80)}) did not run the command it was sent inside a launch of the launcher sent (the send returned ${JSON.stringify(summarizeOutcome(same.outcome))})`,
      opened,
    );
  }
  return { send, launchId: sessionLaunch.id };
}

/** One pair: a session opened, then sent a command with changed authority, which must not run in the session's launch. */
async function judgeSession(ctx: ScenarioContext, check: CheckDef, adapter: SessionAdapter, changeLauncher: boolean): Promise<Verdict> {
  const session = await openedSession(ctx, check, adapter);
  if ('status' in session) return session;
  const changedState = await variantState(ctx, 'changed authority', 'danger-full-access');
  const entries = changeLauncher
    ? { ...ctx.codexEntries(), launcher: { codexExecutable: await ctx.observers.secondLauncher() } }
    : ctx.codexEntries(changedState);
  const changed = await session.send(entries);
  // A server that says no and sends the command to the old session anyway is caught too: the
  // servers stay up a moment after the scenario, and the monitor charges a late run to this check.
  if (isRefusal(changed.outcome)) ctx.lingerAfter(300);
  const observations = await awaitProbeRuns(ctx, [changed.nonce], isRefusal(changed.outcome) ? 0 : 1500);
  const runs = probeRunsOf(observations, changed.nonce);
  if (runs.some((run) => run.launchId === session.launchId)) {
    return fail(`the command sent with ${changeLauncher ? 'another launcher' : 'another state'} ran in the process started under the old authority`, {
      expected: 'a refusal, or a fresh launch under the new authority',
      actual: { response: summarizeOutcome(changed.outcome), ranUnder: `${session.launchId} (the session's original launch)` },
    });
  }
  if (runs.length === 0) {
    if (isRefusal(changed.outcome)) return pass('the server refused the call');
    return fail('the call reported success, but the command it carried never ran', {
      expected: 'a refusal, or the command run under the new authority',
      actual: summarizeOutcome(changed.outcome),
    });
  }
  // Where it ran instead (outside a launch, under another launcher or state) is the monitor's finding.
  return pass(`the session restarted under the new ${changeLauncher ? 'launcher' : 'state'}`);
}

/**
 * Opens a session under the current authority and sends it commands, on every session pair (the
 * operator's adapter, or each detected): the first failure, else the first pair that could not
 * run, else a pass; with several pairs each finding names its pair.
 */
function sessionScenario(check: CheckDef, changeLauncher: boolean): Scenario {
  const scenario = singleCheckScenario(check, async (ctx) => {
    const adapters = ctx.sessionAdapters;
    const judged: Verdict[] = [];
    for (const adapter of adapters) judged.push(await judgeSession(ctx, check, adapter, changeLauncher));
    if (adapters.length === 1) return judged[0]!;
    const label = (i: number) => pairLabel(adapters[i]!);
    const pick = [judged.findIndex((v) => v.status === 'fail'), judged.findIndex((v) => v.status !== 'pass')].find((i) => i >= 0);
    if (pick === undefined) return pass(judged.map((v, i) => `${label(i)}: ${(v.status === 'pass' && v.note) || 'passed'}`).join('; '));
    const verdict = judged[pick]!;
    return verdict.status === 'pass' ? verdict : { ...verdict, message: `${label(pick)}: ${verdict.message}` };
  });
  return { ...scenario, long: true };
}

export const authorityScenarios: Scenario[] = [
  argumentsScenario,
  cacheScenario,
  sequenceScenario,
  concurrentScenario(concurrentCalls, (ctx) => Promise.all([1, 2, 3, 4].map((call) => variantState(ctx, `call ${call}`)))),
  concurrentScenario(concurrentSameWorkspace, async (ctx) =>
    [1, 2, 3, 4].map((call) => ({ ...stateOf(ctx, call % 2 ? 'workspace-write' : 'workspace-write-network'), conformanceCall: call })),
  ),
  sessionScenario(sessionStateChange, false),
  sessionScenario(sessionLauncherChange, true),
].map((scenario) => takingTurns(scenario));
