import type { Transport } from '../../harness/codex-wire.js';
import { POLICY_CHANGES, observeAppServer, observeExec, type AppObservation, type ExecObservation, type HostTarget } from '../../harness/host-mode/drive.js';
import type { TranscriptEntry } from '../../harness/transcript.js';
import { fail, type CounterexampleStep, type HostDriveContext, type HostDriven, type HostScenario, type Verdict } from '../engine/model.js';
import { explorationBoundMs, exploreHost, runFixedSequence, type FixedSequenceOutcome, type HostExploration } from './explore.js';
import { runSuite, type RunPlan, type RunReport } from '../engine/runner.js';
import { hostChecks } from './checks.js';
import { BOTH, type HostCheck, type HostObservations } from './host-check.js';

/** Running host mode: host scenarios on the runner, one per transport, each driving the host and judging what it sent. */

const emptyExec = (transport: Transport): ExecObservation => ({
  transport,
  workspace: '',
  httpRequests: [],
  records: [],
  plainRecords: [],
  stdout: '',
  stderr: '',
  modelRequests: [],
  problems: [],
  launcherProbes: {},
  durationMs: 0,
});
const emptyApp = (transport: Transport): AppObservation => ({
  transport,
  workspace: '',
  steps: [],
  turns: [],
  records: [],
  plainRecords: [],
  stderr: '',
  problems: [],
  launcherProbes: {},
  durationMs: 0,
});

/**
 * What one host run showed the recording servers, as transcript entries: a note naming the run,
 * each request the host sent, then what went wrong while driving it and its stderr's tail.
 */
function transcriptOf(o: ExecObservation | AppObservation, kind: 'exec' | 'app-server', started: number): TranscriptEntry[] {
  const records = [...o.records, ...o.plainRecords].sort((a, b) => a.t - b.t);
  if (records.length === 0 && o.problems.length === 0 && !o.stderr.trim()) return [];
  const first = records[0]?.t ?? started;
  // Notes come after the requests: at the last one's time.
  const end = records.at(-1)?.t ?? started;
  const stderr = o.stderr.trim().split('\n').slice(-5).join('\n');
  return [
    { t: first - started, dir: 'note', text: `${kind}: what the recording servers got from this run` },
    ...records.map((r): TranscriptEntry => ({ t: r.t - started, dir: 'host->server', message: r.message })),
    ...o.problems.map((text): TranscriptEntry => ({ t: end - started, dir: 'note', text: `${kind}: ${text}` })),
    ...(stderr ? [{ t: end - started, dir: 'note' as const, text: `${kind}: the host's stderr ends with:\n${stderr}` }] : []),
  ];
}

/**
 * The host scenario of one transport: the exec run and the app-server session side by side (each
 * only when a selected check judges it, so --only 'host/resource-*' runs no exec), then every
 * selected check judged on what the recording servers saw.
 */
async function driveAndJudge(checks: HostCheck[], ctx: HostDriveContext): Promise<HostDriven> {
  const started = Date.now();
  const { host, transport, signal } = ctx;
  const policyChanges = host.policyChanges ?? POLICY_CHANGES;
  const options = { ...host, transport, signal, policyChanges };
  const selected = checks.filter((c) => ctx.selected(c.id));
  const needs = (scenario: 'exec' | 'app-server') => selected.some((c) => c.scenario.includes(scenario));
  const observed: HostObservations = { transport, exec: emptyExec(transport), app: emptyApp(transport), policyChanges };
  let exploration: HostExploration | undefined;
  let fixed: FixedSequenceOutcome | undefined;
  await Promise.all([
    needs('exec') ? observeExec(options).then((o) => void (observed.exec = o)) : undefined,
    needs('app-server') ? observeAppServer(options).then((o) => void (observed.app = o)) : undefined,
    needs('app-server') ? runFixedSequence(options).then((f) => void (fixed = f)) : undefined,
    host.explore && host.explore.runs > 0 ? exploreHost(options, host.explore).then((e) => void (exploration = e)) : undefined,
  ]);
  const transcript = [...transcriptOf(observed.exec, 'exec', started), ...transcriptOf(observed.app, 'app-server', started)];
  if (fixed?.problem) transcript.push({ t: Date.now() - started, dir: 'note', text: `the fixed sequence stopped: ${fixed.problem}` });
  if (fixed) transcript.push({ t: Date.now() - started, dir: 'note', text: `the fixed sequence, step by step:\n${fixed.steps.map(stepText).join('\n')}` });
  if (exploration?.problem)
    transcript.push({ t: Date.now() - started, dir: 'note', text: `exploration stopped after ${exploration.sequences} sequences: ${exploration.problem}` });
  // The host failed to start when a run of it failed and not one request reached a recording server.
  const hostFailed = observed.exec.hostFailed ?? observed.app.hostFailed;
  if (hostFailed && observed.exec.records.length === 0 && observed.app.records.length === 0) {
    const problems = [...new Set([...observed.exec.problems, ...observed.app.problems])];
    return {
      verdicts: new Map(),
      transcript,
      startFailure: { message: `${host.host.display} never reached the recording server`, stderrTail: problems.join('\n') },
    };
  }
  const verdicts = new Map<string, Verdict>();
  for (const check of selected) {
    try {
      verdicts.set(check.id, withExploration(withFixedSequence(await check.judge(observed), check.id, fixed), check.id, exploration));
    } catch (error) {
      verdicts.set(check.id, { status: 'error', message: (error as Error).stack ?? String(error) });
    }
  }
  return { verdicts, transcript };
}

const stepText = (s: CounterexampleStep) => `${s.n}. ${s.action}: ${[...s.authority, ...s.ran, ...s.response].join(' | ')}`;

/** A check's verdict with what the fixed sequence found against it: a violation fails it, naming the step. */
function withFixedSequence(verdict: Verdict, checkId: string, fixed: FixedSequenceOutcome | undefined): Verdict {
  const found = fixed?.violations.filter((v) => v.check === checkId) ?? [];
  if (found.length === 0) return verdict;
  const told = found.map((v) => `the fixed sequence, step ${v.step?.n ?? '?'} (${v.step?.action ?? '?'}): ${v.message}`);
  const steps = new Set(found.map((v) => v.step?.n));
  const diff = [...told.slice(1, 6).map((t) => `! ${t}`), ...fixed!.steps.filter((s) => steps.has(s.n)).map((s) => `  ${stepText(s)}`)];
  if (verdict.status === 'fail') return { ...verdict, message: `${verdict.message}; ${told[0]}`, diff: [...(verdict.diff ?? []), ...diff] };
  return fail(told[0]!, { expected: found[0]!.expected ?? 'what CONTRACT.md §2/§4 says for this step', actual: found[0]!.actual ?? found[0]!.message, diff });
}

/** A check's verdict with what exploration found against it: a violation fails it, with the shrunk sequence that shows it. */
function withExploration(verdict: Verdict, checkId: string, exploration: HostExploration | undefined): Verdict {
  const found = exploration?.violations.filter((v) => v.check === checkId) ?? [];
  const counterexample = exploration?.counterexample;
  if (found.length === 0 || !counterexample) return verdict;
  const story = `exploration: a sequence of ${counterexample.steps.length} step${counterexample.steps.length === 1 ? '' : 's'} broke it: ${found[0]!.message}`;
  const more = found.slice(1, 6).map((v) => `! ${v.message}`);
  if (verdict.status === 'fail') return { ...verdict, message: `${verdict.message}; ${story}`, diff: [...(verdict.diff ?? []), ...more], counterexample };
  return fail(story, {
    expected: found[0]!.expected ?? 'what CONTRACT.md §2/§4 says for this step',
    actual: found[0]!.actual ?? found[0]!.message,
    diff: more,
    counterexample,
  });
}

/** Host mode's scenarios, one per transport (a check is on the transports it is for). */
export const hostScenarios: HostScenario[] = BOTH.map((transport) => {
  const checks = hostChecks.filter((c) => c.transports.includes(transport));
  return {
    id: 'host',
    title: `the host, with its MCP servers over ${transport}`,
    checks,
    needs: [],
    transports: [transport],
    drive: (ctx) => driveAndJudge(checks, ctx),
  };
});

export interface HostPlan extends HostTarget {
  /** Transports checked at once (each runs its exec and app-server hosts side by side). */
  jobs: number;
  select?: (checkId: string) => boolean;
  onProgress?: RunPlan['onProgress'];
}

/** Slack beyond one host run's budget for a scenario (its runs go side by side): starting, probing, stopping. */
const HOST_SCENARIO_SLACK_MS = 30_000;

/** Runs the host scenarios on the runner, as server mode runs its own: a RunReport for cli/results.ts. */
export function runHostChecks(plan: HostPlan): Promise<RunReport> {
  const { jobs, select = () => true, onProgress, ...host } = plan;
  // Exploration runs beside the fixed runs, and may outlast them.
  const scenarioMs = Math.max(host.timeoutMs, explorationBoundMs(host.explore, host.timeoutMs)) + HOST_SCENARIO_SLACK_MS;
  return runSuite(
    {
      targets: {},
      host,
      // Server-mode budgets, unused by host scenarios (a host run's own budget is timeoutMs).
      options: { assumeOptIn: false, startupTimeoutMs: host.timeoutMs, callTimeoutMs: host.timeoutMs },
      jobs,
      select,
      // Both budgets follow from one host run's (--timeout): a scenario's runs go side by side,
      // and the run lasts at most one scenario per transport, one after another.
      scenarioTimeoutMs: scenarioMs,
      runTimeoutMs: host.transports.length * scenarioMs + HOST_SCENARIO_SLACK_MS,
      onProgress,
    },
    // Only the plan's transports: a transport left out is not checked (rather than "not applicable").
    hostScenarios.filter((scenario) => scenario.transports.every((t) => host.transports.includes(t))),
  );
}
