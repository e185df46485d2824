import { aliasScenarios } from './aliases.js';
import { authorityScenarios } from './authority.js';
import { capabilityScenario } from './capability.js';
import { catalogScenario, inventoryScenario } from './catalog.js';
import { enforcementScenarios } from './enforcement.js';
import { codexCallScenario } from './forwarding.js';
import { launcherScenarios } from './launcher.js';
import { executionScenarios } from './execution.js';
import { exploreScenario } from './explore.js';
import type { CheckDef, Scenario } from './model.js';
import { resourceScenario } from './resources.js';
import { transportScenarios } from './transport.js';

/** Every scenario, in report order. */
export const allScenarios: Scenario[] = [
  capabilityScenario,
  codexCallScenario,
  ...executionScenarios,
  ...aliasScenarios,
  ...launcherScenarios,
  ...transportScenarios,
  ...authorityScenarios,
  resourceScenario,
  catalogScenario,
  inventoryScenario,
  ...enforcementScenarios,
  exploreScenario,
];

/** Every check, in report order, each once. */
export const allChecks: CheckDef[] = [...new Map(allScenarios.flatMap((s) => s.checks).map((c) => [c.id, c])).values()];

/** The transports a check runs over (those of the scenarios that decide it). */
export function transportsOf(checkId: string): string[] {
  return [...new Set(allScenarios.filter((s) => s.checks.some((c) => c.id === checkId)).flatMap((s) => s.transports))];
}
