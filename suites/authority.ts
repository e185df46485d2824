import { renderArguments, readPath } from '../harness/exec-adapter.js';
import { isRefusal, type RawOutcome } from '../harness/host-session.js';
import { shellQuote, type Observations } from '../harness/observers.js';
import { pathToFileURL } from 'node:url';
import { carriesNonce, carriesState, judgeFailClosed, launchesOf, probeRan, summarizeOutcome } from './judge.js';
import { couldNotRun, fail, pass, singleCheckScenario, type CheckDef, type Scenario, type ScenarioContext, type Verdict } from './model.js';
import { isObject } from '../harness/json.js';


export const argumentsNotAuthority: CheckDef = {
  id: 'authority/arguments-are-not-authority',
  rule: 'AUTH-1',
  level: 'MUST',
  title: 'ignores a state or launcher smuggled into the tool arguments',
  summary:
    'Tool arguments come from the model. A sandbox state, a launcher or a _meta-like object inside `arguments` is never used; only the request _meta counts. Rejecting the unknown arguments is fine. Source: CONTRACT.md §3 AUTH-1.',
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

export const concurrentCalls: CheckDef = {
  id: 'authority/concurrent-calls-isolated',
  rule: 'AUTH-3',
  level: 'SHOULD',
  title: 'concurrent calls with different states each launch with their own',
  summary: 'Calls in flight at the same time never see each other\'s state: each launch carries the state of the call that asked for it. Source: CONTRACT.md §3 AUTH-3.',
  why: 'Codex can run several tool calls at once; a shared "current state" lets one call run under another\'s policy.',
  typicalMistake: 'Keeping the latest state in a global or per-connection variable.',
  fix: 'Pass the state from the request handler down to the spawn, with no shared mutable state.',
  needs: ['exec', 'opt-in'],
};

/** The scenario's state with its own workspace (so launches can tell it apart) and some changes. */
async function variantState(ctx: ScenarioContext, name: string, changes: Record<string, unknown>): Promise<Record<string, unknown>> {
  return { ...ctx.state, ...changes, sandboxCwd: pathToFileURL(await ctx.observers.workspaceVariant(name)).href };
}

/** The check passes when the launch carried `expected`; a refusal passes when the control shows the tool works. */
async function judgeRanUnder(
  ctx: ScenarioContext,
  outcome: RawOutcome,
  nonce: string,
  observations: Observations,
  expected: Record<string, unknown>,
  what: string,
): Promise<Verdict> {
  const launches = launchesOf(observations, nonce);
  if (launches.length === 0) {
    const facts = await ctx.control();
    if (!facts.works) return couldNotRun(`nothing launched, and the exec tool does not launch even with everything Codex sends (${facts.detail})`);
    const verdict = await judgeFailClosed({ nonce, command: [], arguments: undefined, outcome }, observations, ctx.control());
    return verdict.status === 'pass' ? pass('the server refused the call') : verdict;
  }
  const launch = launches.at(-1)!;
  if (carriesState(launch.argv, expected)) return pass();
  return fail(`${what}: the launch did not carry the state from _meta (sandboxCwd ${JSON.stringify(expected.sandboxCwd)})`, {
    expected,
    actual: launch.argv,
  });
}

const argumentsScenario = singleCheckScenario(argumentsNotAuthority, async (ctx) => {
    const trap = await ctx.observers.trap('launcher-in-arguments');
    const permissive = await variantState(ctx, 'from arguments', { permissionProfile: { type: 'disabled' } });
    const smuggled = {
      codexExecutable: trap,
      sandboxState: permissive,
      'codex/sandbox-state': permissive,
      'codex/sandbox-launcher': { codexExecutable: trap },
      _meta: { 'codex/sandbox-state': permissive, 'codex/sandbox-state-meta': permissive, 'codex/sandbox-launcher': { codexExecutable: trap } },
    };
    if (!isObject(renderArguments(ctx.exec?.arguments, []))) {
      return couldNotRun('the exec arguments template is not an object, so nothing can be smuggled into it');
    }
    const probe = await ctx.execProbe(ctx.codexEntries(), smuggled);
    const observations = await ctx.observe();
    const fired = observations.trapCalls.filter((t) => t.trap === 'launcher-in-arguments');
    if (fired.length > 0) {
      return fail('the server executed the codexExecutable named in the tool arguments', {
        expected: { executed: 'the _meta launcher only' },
        actual: { ...(summarizeOutcome(probe.outcome) as object), executedFromArguments: fired.map((t) => t.argv.join(' ')) },
      });
    }
    return judgeRanUnder(ctx, probe.outcome, probe.nonce, observations, ctx.state, 'with a permissive state in the arguments');
});

const cacheScenario = singleCheckScenario(noCachedResults, async (ctx) => {
    const first = await ctx.execProbe(ctx.codexEntries());
    const changed = await variantState(ctx, 'second call', { permissionProfile: { ...(ctx.state.permissionProfile as object), network: 'enabled' } });
    const second = await ctx.execProbe(ctx.codexEntries(changed), undefined, first.nonce);
    const observations = await ctx.observe();
    const launches = launchesOf(observations, first.nonce);
    if (launches.length === 0) return couldNotRun('the first call launched nothing (see the forwarding checks)');
    if (launches.length === 1 && !isRefusal(second.outcome)) {
      return fail('the repeated call under a different state did not launch again: its result was reused', {
        expected: { launches: 2, secondState: changed },
        actual: { launches: launches.length, secondResponse: summarizeOutcome(second.outcome) },
      });
    }
    return judgeRanUnder(ctx, second.outcome, first.nonce, launches.length === 1 ? { ...observations, launches: [] } : observations, changed, 'the repeated call');
});

const concurrentScenario = singleCheckScenario(concurrentCalls, async (ctx) => {
    const states = await Promise.all([1, 2, 3, 4].map((call) => variantState(ctx, `call ${call}`, {})));
    const probes = await Promise.all(states.map((state) => ctx.execProbe(ctx.codexEntries(state))));
    const observations = await ctx.observe();
    const mixups: string[] = [];
    probes.forEach((probe, i) => {
      const launch = launchesOf(observations, probe.nonce)[0];
      if (!launch) mixups.push(`call ${i + 1}: no launch`);
      else if (!carriesState(launch.argv, states[i]!)) {
        const other = states.findIndex((state) => carriesState(launch.argv, state));
        mixups.push(`call ${i + 1} launched with ${other >= 0 ? `the state of call ${other + 1}` : 'a state it was not sent'}`);
      }
    });
    const launched = probes.filter((p) => launchesOf(observations, p.nonce).length > 0).length;
    if (launched === 0) return couldNotRun('none of the concurrent calls launched anything');
    return mixups.length === 0 ? pass() : fail("concurrent calls saw each other's state", { expected: 'call N launches with the state of call N', actual: mixups });
});

/** A session runs what it is sent asynchronously: give the probe a moment to leave its marker. */
async function observeProbe(ctx: ScenarioContext, nonce: string, waitMs = 1500): Promise<Observations> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const observations = await ctx.observe();
    if (probeRan(observations, nonce) || Date.now() > deadline) return observations;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Opens a session under the current authority and sends it commands; see the AUTH-2 session checks. */
function sessionScenario(check: CheckDef, changeLauncher: boolean): Scenario {
  return singleCheckScenario(check, async (ctx) => {
    const adapter = ctx.sessionAdapter!;
    const timeout = ctx.options.callTimeoutMs;
    const opened = await ctx.session.callTool(adapter.open.tool, renderArguments(adapter.open.arguments, [ctx.observers.sessionShellPath]), ctx.codexEntries(), timeout);
    if (opened.kind !== 'result' || isRefusal(opened)) return couldNotRun(`opening the session failed: ${JSON.stringify(summarizeOutcome(opened))}`);
    const id = readPath(opened.result, adapter.sessionId);
    if (typeof id !== 'string' && typeof id !== 'number') {
      return couldNotRun(`no session id at "${adapter.sessionId}" in the open result: ${JSON.stringify(opened.result).slice(0, 300)}`);
    }
    const send = async (sandbox: ReturnType<ScenarioContext['codexEntries']>) => {
      const nonce = ctx.observers.newNonce();
      const line = ctx.observers.probeCommand(nonce).map(shellQuote).join(' ');
      const args = renderArguments(adapter.send.arguments, ctx.observers.probeCommand(nonce), { sessionId: String(id) });
      const outcome = await ctx.session.callTool(adapter.send.tool, typeof args === 'string' ? line : args, sandbox, timeout);
      return { nonce, outcome };
    };
    // Control: under the same authority, the session runs what it is sent, in its own launch.
    const same = await send(ctx.codexEntries());
    let observations = await observeProbe(ctx, same.nonce);
    const sessionLaunch = observations.launches.find((l) => carriesNonce(l.argv, ctx.observers.sessionShellPath));
    const controlRun = probeRan(observations, same.nonce);
    if (!sessionLaunch || !controlRun || controlRun.launchId !== sessionLaunch.id) {
      return couldNotRun(`under the same authority the session did not run the command it was sent inside its launch (${JSON.stringify(summarizeOutcome(same.outcome))}); check the session adapter`);
    }
    const changedState = await variantState(ctx, 'changed authority', { permissionProfile: { type: 'disabled' } });
    const entries = changeLauncher
      ? { ...ctx.codexEntries(), launcher: { codexExecutable: await ctx.observers.secondLauncher() } }
      : ctx.codexEntries(changedState);
    const changed = await send(entries);
    observations = await observeProbe(ctx, changed.nonce, isRefusal(changed.outcome) ? 300 : 1500);
    const ran = probeRan(observations, changed.nonce);
    if (ran && ran.launchId === sessionLaunch.id) {
      return fail(`the command sent with ${changeLauncher ? 'another launcher' : 'another state'} ran in the process started under the old authority`, {
        expected: 'a refusal, or a fresh launch under the new authority',
        actual: { response: summarizeOutcome(changed.outcome), ranUnder: `${ran.launchId} (the session's original launch)` },
      });
    }
    if (!ran) {
      if (isRefusal(changed.outcome)) return pass('the server refused the call');
      return fail('the call reported success, but the command it carried never ran', { expected: 'a refusal, or the command run under the new authority', actual: summarizeOutcome(changed.outcome) });
    }
    const launch = observations.launches.find((l) => l.id === ran.launchId);
    if (!launch) return fail('the command ran outside any launch', { expected: 'a fresh launch under the new authority', actual: ran });
    if (changeLauncher) {
      return (
        launch.launcher === 'b'
          ? pass('the session restarted under the new launcher')
          : fail('the command ran in a launch of the old launcher, not the one this call sent', { expected: 'a launch of the new launcher', actual: launch.argv })
      );
    }
    return (
      carriesState(launch.argv, changedState)
        ? pass('the session restarted under the new state')
        : fail('the fresh launch did not carry the new state', { expected: changedState, actual: launch.argv })
    );
  });
}

export const authorityScenarios: Scenario[] = [
  argumentsScenario,
  cacheScenario,
  concurrentScenario,
  sessionScenario(sessionStateChange, false),
  sessionScenario(sessionLauncherChange, true),
];
