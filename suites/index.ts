import { aliasScenarios } from './aliases.js';
import { authorityScenarios } from './authority.js';
import { capabilityScenario } from './capability.js';
import { codexCallScenario } from './forwarding.js';
import { launcherScenarios } from './launcher.js';
import type { CheckDef, Scenario } from './model.js';
import { resourceScenario } from './resources.js';
import { transportScenarios } from './transport.js';

/** Every scenario, in report order. */
export const allScenarios: Scenario[] = [capabilityScenario, codexCallScenario, ...aliasScenarios, ...launcherScenarios, ...transportScenarios, ...authorityScenarios, resourceScenario];

/** Every check, in report order, each once. */
export const allChecks: CheckDef[] = [...new Map(allScenarios.flatMap((s) => s.checks).map((c) => [c.id, c])).values()];
