import type { Transport } from '../../harness/codex-wire.js';
import type { AppObservation, ExecObservation } from '../../harness/host-mode/drive.js';
import type { CheckDef, Verdict } from '../engine/model.js';

/**
 * Host mode: the mirror image of the suite. A recording MCP server watches a host (real Codex, or
 * a build or fake with the same CLI) and the host checks judge what it sent against CONTRACT.md §2
 * and §4 (HOST-1..HOST-4), one file per rule (host-1-*.ts .. host-4-*.ts). The host is driven (and
 * the launchers it sends are probed) by harness/host-mode/drive.ts; suites/host/ only judges what
 * was observed (scenario.ts runs the drive and the judges on the runner).
 */

/** Everything observed on one transport. */
export interface HostObservations {
  transport: Transport;
  exec: ExecObservation;
  app: AppObservation;
  /** How many times the app-server session changed the policy between turns. */
  policyChanges: number;
}

type JudgeContext = HostObservations;

/** The host runs a check judges. */
export type HostRun = 'exec' | 'app-server' | 'exec + app-server';

/** A host check: what `list` and `explain` show, where it runs, and its judge of what was observed. */
export interface HostCheck extends CheckDef {
  transports: Transport[];
  scenario: HostRun;
  judge(ctx: JudgeContext): Verdict | Promise<Verdict>;
}

/** Both transports: a check whose defect can show on either runs on both. */
export const BOTH: Transport[] = ['stdio', 'http'];
