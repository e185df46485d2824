import { aliasScenarios } from './server/aliases.js';
import { authorityScenarios } from './server/authority.js';
import { capabilityScenario } from './server/capability.js';
import { catalogScenario, inventoryScenario } from './server/catalog.js';
import { enforcementScenarios } from './server/enforcement.js';
import { codexCallScenario } from './server/forwarding.js';
import { launcherScenarios } from './server/launcher.js';
import { executionScenarios } from './server/execution.js';
import { exploreScenario } from './server/explore.js';
import type { CheckDef, Scenario } from './engine/model.js';
import { resourceScenario } from './server/resources.js';
import { transportScenarios } from './server/transport.js';

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
