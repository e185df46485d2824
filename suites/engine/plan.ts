import type { ConnectionPurpose, Transport } from '../../harness/codex-wire.js';
import { toolAllowed, type ConfiguredExec, type ExecAdapter, type SessionAdapter, type ToolAccount, type ToolFilter } from '../../harness/exec-adapter.js';
import type { HostTarget } from '../../harness/host-mode/drive.js';
import type { Containment } from '../../harness/containment.js';
import type { Connection, HttpTarget, StdioTarget, Target } from '../../harness/target.js';
import type { ElicitationAnswer } from '../../harness/elicitation.js';
import type { CheckResult, ElicitationRecord, RunOptions, ScenarioRecord } from './model.js';

/** What the CLI (or a test) asks of a run. */
export interface RunPlan {
  /** At least one of the two (server mode); none in host mode. */
  targets: { stdio?: StdioTarget; http?: HttpTarget };
  /** Host mode: the host its scenarios (HostScenario) drive, over these transports. */
  host?: HostTarget;
  /** The exec tools the operator named (--exec-tool, "exec" in the config): the first is the fixed checks'; none: detected. */
  exec?: ConfiguredExec | readonly ConfiguredExec[];
  /** Tools the operator left out by name (--skip-tool, "skipTools" in the config): the only exec tools not driven. */
  skipTools?: readonly string[];
  /** The tools the suite may call (a Codex config's enabled_tools and disabled_tools); exec detection looks only at these. */
  tools?: ToolFilter;
  options: RunOptions;
  jobs: number;
  /** Which checks to report (--only / --skip). */
  select: (checkId: string) => boolean;
  realCodex?: string;
  session?: SessionAdapter;
  resourceReadMeta?: Record<string, unknown>;
  /** Budget of one scenario, startup included (--scenario-timeout); default: defaultScenarioTimeoutMs(options). */
  scenarioTimeoutMs?: number;
  /** Budget of the whole run (--run-timeout); default DEFAULT_RUN_TIMEOUT_MS. */
  runTimeoutMs?: number;
  /** Called as scenarios start and finish (the CLI's live progress line). */
  onProgress?: (event: ProgressEvent) => void;
  /** Aborts the run as its timeout would, from outside (the API's AbortSignal): every server ends, the temp dir goes. */
  signal?: AbortSignal;
  /** How a server is started and greeted: harness/target.ts `connect` unless a test brings an in-process one. */
  connect?: Connector;
}

export type Connector = (target: Target, pathTrapDir: string, startupTimeoutMs: number, purpose?: ConnectionPurpose) => Promise<Connection>;

export type ProgressEvent =
  | { kind: 'start'; total: number }
  | { kind: 'scenario-start'; scenario: string; transport: Transport }
  | { kind: 'scenario-note'; scenario: string; transport: Transport; note: string }
  | { kind: 'scenario-end'; scenario: string; transport: Transport; done: number; total: number };

export interface RunReport {
  /** Every scenario job, in the scenario list's order: what the results point at. */
  scenarios: ScenarioRecord[];
  /** In the scenario list's order; each names its scenario and transport. */
  results: CheckResult[];
  /** Set when the target never got through startup in any scenario. */
  startFailure?: StartFailure;
  serverInfo?: unknown;
  capabilities?: unknown;
  /** The transports the plan had targets for (whatever --only selected). */
  transports?: Transport[];
  /** How the run made sure nothing it started outlives it (harness/containment.ts, harness/process-registry.ts). */
  containment?: Containment;
  /** The exec adapter the run used (from the first connection that resolved one), and where it came from. */
  exec?: ExecAdapter;
  /** Every tool the server listed (the first connection's), and what the suite did with it: driven (how) or not, and why. */
  tools?: ToolAccount[];
  /** The session adapters the run used (the first connection's): the operator's, or the pairs detected in the tool list. */
  sessions?: SessionAdapter[];
  durationMs: number;
  /** Server mode: how the host answered elicitation/create, and every request the servers sent, in scenario order. */
  elicitation?: { answer: ElicitationAnswer; requests: ElicitationRecord[] };
  /**
   * How much was started: server starts (scenario connections and extra ones) and scenarios run (the
   * time per phase is in `scenarios`); and the starts left out because a known blocker (no opt-in, a
   * control call that executed nothing or was rejected) had decided their checks, one per scenario
   * not started and per exploration sequence not run; and the longest a command it sent was made
   * to run (its slow commands, --slow-command), in ms, when it sent one.
   */
  stats?: {
    serverStarts: number;
    scenariosRun: number;
    startsSaved?: number;
    startsShared?: number;
    startsBy?: Record<string, number>;
    longestCommandMs?: number;
  };
}

/** Why a target never got through startup. */
export interface StartFailure {
  message: string;
  stderrTail: string;
  /** The transport that failed (stdio when both did). */
  transport?: Transport;
  /** The server process ended before it answered `initialize` (harness TargetStartError). */
  endedBeforeInitialize?: boolean;
}

/** Whether the tool filter lets the suite call the session adapter's tools. */
export const sessionAllowed = (plan: RunPlan): boolean =>
  Boolean(plan.session && toolAllowed(plan.tools, plan.session.open.tool) && toolAllowed(plan.tools, plan.session.send.tool));

/** A scenario never needs more than two startups and three calls in a row when every step keeps to its own timeout. */
export const defaultScenarioTimeoutMs = (options: RunOptions): number => 2 * options.startupTimeoutMs + 3 * options.callTimeoutMs;
export const DEFAULT_RUN_TIMEOUT_MS = 30 * 60 * 1000;
/** The longest delay a timer can hold (about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;
