import { STATE_KEY, STATE_KEY_DEPRECATED } from '../../harness/codex-wire.js';
import { pathToFileURL } from 'node:url';
import { carriesNonce, carriesState, judgeFailClosed, judgeStateReachedLaunch, launchOf, passOnControl, waitForControl } from '../engine/judge.js';
import { fail, pass, singleCheckScenario, type CheckDef, type Scenario, type ScenarioContext, type Verdict, takingTurns } from '../engine/model.js';
import type { SandboxEntries } from '../../harness/codex-wire.js';

const aliasCheck = (id: string, title: string, variant: string): CheckDef => ({
  id,
  rule: 'ALIAS-1',
  level: 'MUST',
  title,
  summary: `"${STATE_KEY}" and "${STATE_KEY_DEPRECATED}" name one policy: the server accepts either alone and both together, and launches with that state. This check sends ${variant}. Source: CONTRACT.md §2 and §3 ALIAS-1.`,
  observes: `One call sends ${variant}; the suite takes what served it (launches carrying its nonce or running its probe, and trap invocations carrying its nonce) and requires that it was launched at most once and that what ran carried the sent state's unique sandboxCwd before "--"; nothing launched fails. Whether that state arrived intact and under the executable sent is judged on the same launch by the monitor (FWD-2, LAUNCH-1), so reading the key but mangling its value still fails the run.`,
  why: 'Codex sends both today; a later Codex may drop the deprecated copy, and older hosts may send only the deprecated one.',
  typicalMistake: 'Reading only one of the two keys.',
  fix: `Read "${STATE_KEY}" first and fall back to "${STATE_KEY_DEPRECATED}".`,
  needs: ['exec', 'opt-in'],
});

export const bothKeys = aliasCheck('aliases/both-keys', 'launches with the state when both keys are sent', 'both keys with identical values, as Codex does');
export const currentKeyOnly = aliasCheck('aliases/current-key-only', `launches with the state when only ${STATE_KEY} is sent`, `only "${STATE_KEY}"`);
export const deprecatedKeyOnly = aliasCheck(
  'aliases/deprecated-key-only',
  `launches with the state when only ${STATE_KEY_DEPRECATED} is sent`,
  `only "${STATE_KEY_DEPRECATED}"`,
);

function aliasScenario(check: CheckDef, entries: (ctx: ScenarioContext) => SandboxEntries): Scenario {
  const scenario = singleCheckScenario(check, async (ctx) => {
    const probe = await ctx.execProbe(entries(ctx));
    return judgeStateReachedLaunch(probe, await ctx.observe(), ctx.state, `a call with ${check.title.replace(/^launches with the state when /, '')}`, ctx);
  });
  // One key alone may launch where the control's two keys did not (a server that takes them for a conflict).
  return { ...scenario, ownCallForms: true };
}

export const conflictPrefersCurrent: CheckDef = {
  id: 'aliases/conflict-prefers-current',
  rule: 'ALIAS-2',
  level: 'SHOULD',
  title: `when the two keys disagree, uses ${STATE_KEY} (or refuses), never a merge`,
  summary: `If "${STATE_KEY}" and "${STATE_KEY_DEPRECATED}" ever carry different values, the current key wins; the two values are never merged. Refusing the call is also acceptable. Source: CONTRACT.md §3 ALIAS-2.`,
  observes:
    "One call whose two keys hold different states, each with its own workspace as sandboxCwd and a field the other lacks; the suite reads the argv of the launch (or trap) that carried the call's nonce: the deprecated value's sandboxCwd before \"--\", or its own field anywhere in the argv, fails (taken, or merged), the current value's sandboxCwd passes, and no launch at all is judged as a refusal. The call carries a decoy, so the monitor also charges here any launch of it whose single forwarded state contains those markers; any other difference stays FWD-2's.",
  why: 'The two keys are one policy; a merge can produce a policy nobody sent, and the deprecated copy may be stale.',
  typicalMistake: 'Object-spreading both values together, or reading the deprecated key first.',
  fix: `Take "${STATE_KEY}" when it is an object; only fall back to "${STATE_KEY_DEPRECATED}" when the current key is absent.`,
  needs: ['exec', 'opt-in'],
};

const conflictScenario = singleCheckScenario(conflictPrefersCurrent, async (ctx) => {
  // Each value has its own workspace (told apart by sandboxCwd) and a field the other lacks,
  // so a merge shows even when the forwarder also drops or reorders fields.
  const variant = async (name: string, extra: Record<string, unknown>) => ({
    ...ctx.state,
    ...extra,
    sandboxCwd: pathToFileURL(await ctx.observers.workspaceVariant(name)).href,
  });
  const current = await variant('current key', { conformanceCurrentOnly: true });
  const deprecated = await variant('deprecated key', { conformanceDeprecatedOnly: true });
  const probe = await ctx.execProbe(
    { ...ctx.codexEntries(), state: current, stateDeprecated: deprecated },
    { decoy: { check: conflictPrefersCurrent.id, markers: [JSON.stringify(deprecated.sandboxCwd), 'conformanceDeprecatedOnly'] } },
  );
  const observations = await ctx.observe();
  // Whichever codex ran (the given launcher, or a trap: LAUNCH-1's finding), judge what it got.
  const launch = launchOf(observations, probe.nonce) ?? observations.trapCalls.find((t) => carriesNonce(t.argv, probe.nonce));
  let verdict: Verdict;
  if (!launch) {
    // Blocked, not blamed: when the control's call ran nothing through the launcher either, what this
    // call did says nothing of the two keys (a command run directly is EXEC-1's finding).
    verdict = (await waitForControl(ctx, 'the conflicting call launched nothing')) ?? (await judgeFailClosed(probe, observations, ctx.control()));
    if (verdict.status === 'pass') verdict = passOnControl('the server refused the conflicting call', await ctx.control());
  } else if (carriesState(launch.argv, deprecated)) {
    verdict = fail(`with conflicting keys the server forwarded the ${STATE_KEY_DEPRECATED} value`, { expected: current, actual: launch.argv });
  } else if (launch.argv.some((arg) => arg.includes('conformanceDeprecatedOnly'))) {
    verdict = fail('with conflicting keys the server forwarded a merge of both values', { expected: current, actual: launch.argv });
  } else if (carriesState(launch.argv, current)) {
    verdict = pass();
  } else {
    verdict = fail('with conflicting keys the launch carried neither value', { expected: current, actual: launch.argv });
  }
  return verdict;
});

export const aliasScenarios: Scenario[] = [
  aliasScenario(currentKeyOnly, (ctx) => ({ ...ctx.codexEntries(), stateDeprecated: undefined })),
  aliasScenario(deprecatedKeyOnly, (ctx) => ({ ...ctx.codexEntries(), state: undefined })),
  conflictScenario,
].map((scenario) => takingTurns(scenario));
