import type { Transport } from '../harness/codex-wire.js';
import type { CheckDef, Scenario } from './engine/model.js';
import { hostCheckDefs, hostChecks } from './host/checks.js';
import { aliasScenarios } from './server/aliases.js';
import { authorityScenarios } from './server/authority.js';
import { capabilityScenarios } from './server/capability.js';
import { catalogScenarios } from './server/catalog.js';
import { enforcementScenarios } from './server/enforcement.js';
import { executionScenarios } from './server/execution.js';
import { exploreScenarios } from './server/explore.js';
import { forwardingScenarios } from './server/forwarding.js';
import { launcherScenarios } from './server/launcher.js';
import { resourceScenarios } from './server/resources.js';
import { residentScenario, soakScenario } from './server/lifetime.js';
import { transportScenarios } from './server/transport.js';

/**
 * The one registry of checks, both modes': server mode's scenarios (each deciding its checks)
 * and host mode's checks. `list`, `explain`, --only/--skip, the reporters and the tests all look
 * checks up here.
 */

/** Every scenario of server mode, in report order: each area's (suites/server/<area>.ts) in turn. */
export const allScenarios: Scenario[] = [
  ...capabilityScenarios,
  ...forwardingScenarios,
  ...executionScenarios,
  ...aliasScenarios,
  ...launcherScenarios,
  ...transportScenarios,
  ...authorityScenarios,
  ...resourceScenarios,
  ...catalogScenarios,
  ...enforcementScenarios,
  ...exploreScenarios,
  soakScenario,
  // Decides no check of its own: its calls are charged to the rules' checks above.
  residentScenario,
];

/** Every check of server mode, in report order, each once. */
export const allChecks: CheckDef[] = [...new Map(allScenarios.flatMap((s) => s.checks).map((c) => [c.id, c])).values()];

export type Mode = 'server' | 'host';

/** Every check of both modes: server mode's, then host mode's. */
export const everyCheck: CheckDef[] = [...allChecks, ...hostCheckDefs];

/** The checks of one mode. */
export const checksOf = (mode: Mode): CheckDef[] => (mode === 'server' ? allChecks : hostCheckDefs);

const byId = new Map(everyCheck.map((check) => [check.id, check]));
const transports = new Map<string, Transport[]>();
for (const scenario of allScenarios)
  for (const check of scenario.checks) transports.set(check.id, [...new Set([...(transports.get(check.id) ?? []), ...scenario.transports])]);
for (const check of hostChecks) transports.set(check.id, check.transports);

export const checkById = (id: string): CheckDef | undefined => byId.get(id);

/** The transports a check runs over (those of the scenarios that decide it; a host check's own). */
export const transportsOf = (checkId: string): Transport[] => transports.get(checkId) ?? [];
