/**
 * Host mode (CONTRACT.md §2 and §4, HOST-1..HOST-4): what the rest of the project imports.
 *   host-check.ts    a host check and what its judge gets (HostObservations)
 *   observed.ts      what the recording servers saw, picked apart; sandbox-state.ts what its entries describe
 *   host-1-*.ts .. host-4-*.ts   the checks of one rule each
 *   checks.ts        every host check in report order, as `list`/`explain` know them
 *   scenario.ts      the host scenarios (drive the host, judge each check) and runHostChecks
 */
export type { HostCheck, HostObservations, HostRun } from './host-check.js';
export { hostCheckDefs, hostChecks } from './checks.js';
export { profileKind } from './sandbox-state.js';
export { hostScenarios, runHostChecks, type HostPlan } from './scenario.js';
