import { STATE_KEY, STATE_KEY_DEPRECATED } from '../harness/codex-wire.js';
import { judgeStateReachedLaunch } from './judge.js';
import type { CheckDef, Scenario, ScenarioContext, Verdict } from './model.js';
import type { SandboxEntries } from '../harness/codex-wire.js';

const aliasCheck = (id: string, title: string, variant: string): CheckDef => ({
  id,
  rule: 'ALIAS-1',
  level: 'MUST',
  title,
  summary: `"${STATE_KEY}" and "${STATE_KEY_DEPRECATED}" name one policy: the server accepts either alone and both together, and launches with that state. This check sends ${variant}. Source: CONTRACT.md §2 and §3 ALIAS-1.`,
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
  return {
    id: check.id,
    title: check.title,
    checks: [check],
    needs: check.needs,
    transports: ['stdio'],
    run: async (ctx) => {
      const probe = await ctx.execProbe(entries(ctx));
      const verdict = judgeStateReachedLaunch(probe, await ctx.observe(), ctx.state, `a call with ${check.title.replace(/^launches with the state when /, '')}`);
      return new Map<string, Verdict>([[check.id, verdict]]);
    },
  };
}

export const aliasScenarios: Scenario[] = [
  aliasScenario(currentKeyOnly, (ctx) => ({ ...ctx.codexEntries(), stateDeprecated: undefined })),
  aliasScenario(deprecatedKeyOnly, (ctx) => ({ ...ctx.codexEntries(), state: undefined })),
];
