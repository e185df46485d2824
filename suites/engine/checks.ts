import type { CheckDef, MonitorRole } from './model.js';

/**
 * The checks of a run, looked up by id and by the monitor role they declare (CheckDef.monitors).
 * Built from the scenarios a run is given, so the engine knows no rule area by name.
 */
export interface CheckIndex {
  byId(id: string): CheckDef | undefined;
  /** The check declaring `role`; undefined when no scenario of the run has it (the call's own check is charged then). */
  forRole(role: MonitorRole): CheckDef | undefined;
  /** `byId`, or for an id no scenario declares, a MUST stand-in under EXEC-1 (a finding never weighs less for being unknown). */
  resolve(id: string): CheckDef;
}

export function indexChecks(checks: Iterable<CheckDef>): CheckIndex {
  const byId = new Map<string, CheckDef>();
  const byRole = new Map<MonitorRole, CheckDef>();
  for (const check of checks) {
    byId.set(check.id, check);
    if (!check.monitors) continue;
    const other = byRole.get(check.monitors);
    if (other && other.id !== check.id) throw new Error(`two checks declare the monitor role ${check.monitors}: ${other.id} and ${check.id}`);
    byRole.set(check.monitors, check);
  }
  return {
    byId: (id) => byId.get(id),
    forRole: (role) => byRole.get(role),
    resolve: (id) => byId.get(id) ?? standInCheck(id),
  };
}

/** A check known only by its id: MUST under EXEC-1, nothing else said of it. */
export const standInCheck = (id: string): CheckDef => ({
  id,
  rule: 'EXEC-1',
  level: 'MUST',
  title: id,
  summary: '',
  observes: '',
  why: '',
  typicalMistake: '',
  fix: '',
  needs: [],
});
