import { STATE_KEY, STATE_KEY_DEPRECATED } from '../../harness/codex-wire.js';
import { blockedByOptIn, fail, pass, type CheckDef, type Scenario, type Verdict } from '../engine/model.js';
import { isObject } from '../../harness/json.js';

const SOURCE = 'CONTRACT.md §1 and §3 (CAP-1, CAP-2)';

export const advertised: CheckDef = {
  id: 'capability/advertised',
  rule: 'CAP-1',
  level: 'MUST',
  title: 'opts in under capabilities.experimental with an object value',
  summary: `A server that wants the sandbox policy says so in its initialize result: "${STATE_KEY}" (or the older "${STATE_KEY_DEPRECATED}") under capabilities.experimental, with a JSON object as the value. Source: ${SOURCE}.`,
  observes:
    "The raw initialize result of the scenario's own connection (stdio, and HTTP when given), read as sent rather than through an SDK client: passes when capabilities.experimental holds codex/sandbox-state or codex/sandbox-state-meta with an object value, and names the failure when the value is not an object, the key sits at the top level of capabilities, or experimental is not an object. Every other scenario reads its own handshake too, and one that did not opt in leaves its opt-in checks could-not-run rather than passing them.",
  why: 'Codex sends no sandbox keys to a server that did not opt in, and fails the whole startup when the value is not an object; a key at the top level of capabilities is ignored.',
  typicalMistake: 'Putting the key directly under capabilities, or giving it the value true.',
  fix: `Return capabilities: { experimental: { "${STATE_KEY}": {} } } from initialize.`,
  needs: [],
};

export const currentName: CheckDef = {
  id: 'capability/current-name',
  rule: 'CAP-2',
  level: 'SHOULD',
  title: `advertises the current name ${STATE_KEY}`,
  summary: `Advertise "${STATE_KEY}"; "${STATE_KEY_DEPRECATED}" alone still works but is the deprecated spelling. Source: ${SOURCE}.`,
  observes:
    'The same raw initialize result: passes only when capabilities.experimental["codex/sandbox-state"] is an object; the deprecated name alone, or no object under either name, fails.',
  why: 'The deprecated name is kept for compatibility and may go away in a later Codex.',
  typicalMistake: `Copying an old example that advertises only "${STATE_KEY_DEPRECATED}".`,
  fix: `Advertise "${STATE_KEY}" (advertising both is fine).`,
  needs: [],
};

/** Judged on the raw initialize result, so that what an SDK client would drop is still seen. */
export function judgeCapabilities(initializeResult: Record<string, unknown>): Map<string, Verdict> {
  const capabilities = isObject(initializeResult.capabilities) ? initializeResult.capabilities : {};
  const experimental = capabilities.experimental;
  const expected = { capabilities: { experimental: { [STATE_KEY]: {} } } };
  const actual = { capabilities };
  const verdicts = new Map<string, Verdict>();
  const keys = [STATE_KEY, STATE_KEY_DEPRECATED];
  const advertisedKeys = isObject(experimental) ? keys.filter((key) => key in experimental) : [];
  const objectKeys = advertisedKeys.filter((key) => isObject((experimental as Record<string, unknown>)[key]));

  if (objectKeys.length > 0) verdicts.set(advertised.id, pass());
  else if (advertisedKeys.length > 0) {
    verdicts.set(advertised.id, fail(`capabilities.experimental["${advertisedKeys[0]}"] is not an object; Codex fails the startup`, { expected, actual }));
  } else if (keys.some((key) => key in capabilities)) {
    verdicts.set(advertised.id, fail('the sandbox capability is at the top level of capabilities, where Codex ignores it', { expected, actual }));
  } else if (experimental !== undefined && !isObject(experimental)) {
    verdicts.set(advertised.id, fail('capabilities.experimental is not an object', { expected, actual }));
  } else {
    verdicts.set(advertised.id, fail('the server does not opt in to the sandbox contract', { expected, actual }));
  }

  // Which name a server uses only matters once it opts in: one cause, one finding (CAP-1's), and
  // no hint (--assume-opt-in changes what the suite sends, not what the server advertises).
  if (objectKeys.length === 0) verdicts.set(currentName.id, blockedByOptIn('the server did not opt in under either name'));
  else if (isObject(experimental) && isObject(experimental[STATE_KEY])) verdicts.set(currentName.id, pass());
  else if (objectKeys.includes(STATE_KEY_DEPRECATED)) {
    verdicts.set(currentName.id, fail(`only the deprecated name "${STATE_KEY_DEPRECATED}" is advertised`, { expected, actual }));
  } else {
    verdicts.set(currentName.id, fail(`"${STATE_KEY}" is not advertised as an object under capabilities.experimental`, { expected, actual }));
  }
  return verdicts;
}

export const capabilityScenario: Scenario = {
  id: 'capability/initialize',
  title: 'Codex starts the server and reads its capabilities',
  checks: [advertised, currentName],
  needs: [],
  transports: ['stdio', 'http'],
  // It reads the greeting: the shared server's serves.
  shares: 'handshake',
  run: async (ctx) => judgeCapabilities(ctx.handshake.initializeResult),
};

/** The scenarios of this area, in report order (suites/index.ts lists the areas). */
export const capabilityScenarios: Scenario[] = [capabilityScenario];
