import { isDeepStrictEqual } from 'node:util';
import { isAbsolute } from 'node:path';
import { accessSync, constants, statSync } from 'node:fs';
import { STATE_KEY, STATE_KEY_DEPRECATED, type SandboxEntries, type Transport } from '../../harness/codex-wire.js';
import type { Launch, LauncherName, Observations, ProbeRun, TrapCall } from '../../harness/observers.js';
import { isObject } from '../../harness/json.js';
import type { CheckIndex } from './checks.js';
import type { Authority, Finding, MonitoredCall, MonitorRole } from './model.js';
import { carriesNonce, commandLabel, keyOrderDifferences, parseLaunchArgv, parseJson, structuralDiff, summarizeOutcome } from './judge.js';

/**
 * The sandbox monitor (EXEC-1 and the rules it implies). Every tools/call a scenario makes is
 * registered with the authority it carried; once the scenario's servers are gone, every recorded
 * execution (probe runs, launches, trap calls) is matched to its call by nonce and to its launch
 * by launch id, and judged: a call with valid authority ran only inside launches of exactly its
 * codexExecutable under exactly its state; a call without ran nothing, ever; nothing ran outside a
 * launch; no trap ran. Pure functions over observations, so they are unit-tested on synthetic logs.
 */

/** A path the host could hand out as a launcher: absolute, an existing executable regular file. */
export function isUsableLauncher(path: unknown): path is string {
  if (typeof path !== 'string' || !isAbsolute(path)) return false;
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The authority a call carries, read as the contract says a server must (ALIAS-1, ALIAS-2,
 * LAUNCH-3, HTTP-1, HTTP-2): the current key wins, the deprecated one is the fallback, a
 * non-object state or a launcher that is not an absolute executable file counts as absent, and
 * over HTTP no launcher counts at all.
 */
export function authorityOf(sent: SandboxEntries, transport: Transport, usable: (path: unknown) => boolean = isUsableLauncher): Authority {
  if (transport === 'http') return { kind: 'none', why: 'over HTTP no launcher can be trusted' };
  const launcher = sent.launcher;
  if (launcher === undefined) return { kind: 'none', why: 'no launcher was sent' };
  const exe = isObject(launcher) ? launcher.codexExecutable : undefined;
  if (!usable(exe)) return { kind: 'none', why: `the launcher is not an absolute path to an executable file (${JSON.stringify(launcher)})` };
  const state = isObject(sent.state) ? sent.state : sent.state === undefined && isObject(sent.stateDeprecated) ? sent.stateDeprecated : undefined;
  if (!state) return { kind: 'none', why: sent.state === undefined && sent.stateDeprecated === undefined ? 'no state was sent' : 'the state is not an object' };
  return { kind: 'valid', codexExecutable: exe as string, state };
}

/** Both state keys with different values: the current one must win (ALIAS-2). */
export const keysConflict = (sent: SandboxEntries): boolean =>
  isObject(sent.state) && isObject(sent.stateDeprecated) && !isDeepStrictEqual(sent.state, sent.stateDeprecated);

export interface MonitorInput {
  calls: MonitoredCall[];
  observations: Observations;
  /** Which of the suite's launchers is at a path. */
  launcherName: (path: string) => LauncherName | undefined;
  /** The check that planted each named trap. */
  trapOwners: Map<string, string>;
  /** The run's checks: where each kind of finding is charged (CheckDef.monitors). */
  checks: CheckIndex;
}

const describeAuthority = (call: MonitoredCall) =>
  call.authority.kind === 'valid'
    ? { codexExecutable: call.authority.codexExecutable, state: call.authority.state }
    : { authority: `none: ${call.authority.why}` };

/** A call as findings name it: its scenario and number, when it was sent on a long-lived server, and the command it asked for (form and text). */
const callLabel = (call: MonitoredCall) =>
  `${call.scenario} call #${call.index}${call.atMs === undefined ? '' : ` (sent ${(call.atMs / 1000).toFixed(1)} s after its server started)`}` +
  commandLabel(call.command);

/** Where an execution ran, in one line: its launch, or no launch with what tells the process apart. */
const whereItRan = (run: ProbeRun) =>
  `${run.launchId ? `inside launch ${run.launchId}` : 'no launch'} (pid ${run.pid}, cwd ${run.cwd}, invoked as ${run.invoked})`;
/** Where a call's command was to run: a finding about where something ran says this, not the whole state. */
const whereItShouldRun = (call: MonitoredCall) =>
  call.authority.kind === 'valid' ? `inside a launch of ${call.authority.codexExecutable} under this call's state` : 'nowhere: the call must run nothing';

/** Judges every registered call of one scenario against everything its observers recorded. */
export function monitor(input: MonitorInput): Finding[] {
  return new MonitorPass(input).run();
}

type FindingText = Omit<Finding, 'check' | 'scenario' | 'transport' | 'call' | 'fallback'>;

/** One pass of the monitor over one scenario's calls and observations. */
class MonitorPass {
  private readonly findings: Finding[] = [];
  private readonly launchesById: Map<string, Launch>;
  private readonly byNonce = new Map<string, MonitoredCall[]>();
  private readonly judgedLaunches = new Set<string>();
  private readonly orderJudged = new Set<string>();

  constructor(private readonly input: MonitorInput) {
    this.launchesById = new Map(input.observations.launches.map((l) => [l.id, l]));
    for (const call of input.calls) if (call.nonce) this.byNonce.set(call.nonce, [...(this.byNonce.get(call.nonce) ?? []), call]);
  }

  run(): Finding[] {
    const { observations } = this.input;
    for (const run of observations.probeRuns) this.judgeProbeRun(run);
    // Launches that carried a call's nonce (the probe may not have left a record, e.g. inside a real sandbox).
    for (const launch of observations.launches) this.judgeNonceLaunch(launch);
    // Traps: a codex on PATH, or an executable planted where only a wrong reading would find it.
    for (const trap of observations.trapCalls) this.judgeTrap(trap);
    // One finding per call and cause: a worker that ran the same call twice says it once.
    const seen = new Set<string>();
    return this.findings.filter((f) => {
      const key = `${f.check.id}\0${f.call ?? ''}\0${f.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }

  /** The check declaring a role, or (when the run has none) the call's own. */
  private role(kind: MonitorRole, call?: MonitoredCall): string {
    return this.input.checks.forRole(kind)?.id ?? call?.check ?? '';
  }

  private charge(call: MonitoredCall | undefined, check: string, finding: FindingText): void {
    const { checks, calls } = this.input;
    const first = calls[0];
    this.findings.push({
      check: checks.resolve(check),
      fallback: call && call.check !== check ? checks.resolve(call.check) : undefined,
      scenario: call?.scenario ?? first?.scenario ?? '',
      transport: call?.transport ?? first?.transport ?? 'stdio',
      call: call?.index,
      ...finding,
    });
  }

  /** An execution of the probe: asked for by a call that may run it, inside a launch of that call's authority. */
  private judgeProbeRun(run: ProbeRun): void {
    const owners = this.byNonce.get(run.nonce) ?? [];
    const launch = run.launchId ? this.launchesById.get(run.launchId) : undefined;
    const allowed = owners.filter((c) => c.expect === 'run');
    if (owners.length === 0) {
      if (!launch)
        this.charge(undefined, this.role('exec'), {
          message: `a command ran outside any launch, and no call of this scenario asked for it (nonce ${JSON.stringify(run.nonce)})`,
          expected: { ran: 'inside a launch of codex sandbox' },
          actual: { ran: whereItRan(run) },
        });
      return;
    }
    if (allowed.length === 0) return this.ranAlthoughRefused(owners[0]!, run, launch);
    if (!launch) {
      const call = allowed[0]!;
      this.charge(call, this.role('exec', call), {
        message: `${callLabel(call)}: the command ran outside any launch of codex sandbox${run.launchId ? ` (under an unknown launch ${run.launchId})` : ''}`,
        expected: { ran: whereItShouldRun(call) },
        actual: { ran: whereItRan(run), response: call.outcome ? summarizeOutcome(call.outcome) : undefined },
      });
      return;
    }
    this.judgeLaunch(launch, allowed, run);
  }

  /** The command of a call that must run nothing ran (in a launch or outside any). */
  private ranAlthoughRefused(call: MonitoredCall, run: ProbeRun, launch: Launch | undefined): void {
    if (launch) this.judgedLaunches.add(launch.id); // one finding for the call, not another for its launch
    const check = call.transport === 'http' ? this.role('http', call) : call.check;
    const reason =
      call.expect === 'attempt'
        ? 'its launcher cannot set up a sandbox, so nothing may run'
        : call.authority.kind === 'none'
          ? call.authority.why
          : 'the call must be refused';
    this.charge(call, check, {
      message: `${callLabel(call)}: the command ran although ${reason}${launch ? '' : ', and it ran outside any sandbox'}`,
      expected: { ran: `nothing: ${reason}` },
      actual: { ran: whereItRan(run), response: call.outcome ? summarizeOutcome(call.outcome) : undefined, ...(launch ? { launch: launch.argv } : {}) },
    });
  }

  /** A launch that carried a call's nonce and was not judged through a probe record. */
  private judgeNonceLaunch(launch: Launch): void {
    if (launch.isCapabilityProbe || this.judgedLaunches.has(launch.id)) return;
    const owners = this.input.calls.filter((c) => c.nonce && carriesNonce(launch.argv, c.nonce));
    if (owners.length === 0) return;
    const allowed = owners.filter((c) => c.expect !== 'refuse');
    if (allowed.length > 0) return this.judgeLaunch(launch, allowed, undefined);
    const call = owners[0]!;
    this.charge(call, call.transport === 'http' ? this.role('http', call) : call.check, {
      message: `${callLabel(call)}: the command was handed to a launcher although ${call.authority.kind === 'none' ? call.authority.why : 'the call must be refused'}`,
      expected: { ...describeAuthority(call), launches: [] },
      actual: { response: call.outcome ? summarizeOutcome(call.outcome) : undefined, launch: launch.argv },
    });
  }

  private judgeTrap(trap: TrapCall): void {
    const owner = this.input.calls.find((c) => c.nonce && carriesNonce(trap.argv, c.nonce));
    const planter = this.input.trapOwners.get(trap.trap);
    const check = owner?.expect === 'refuse' ? owner.check : (planter ?? this.role('launcher', owner));
    const what =
      trap.trap === 'path-search' ? 'a `codex` found on PATH' : `the trap "${trap.trap}" (an executable only a wrong reading of the call could pick)`;
    this.charge(owner, check, {
      message: `${owner ? `${callLabel(owner)}: ` : ''}the server executed ${what}`,
      expected: owner
        ? { ...describeAuthority(owner), executed: owner.authority.kind === 'valid' ? 'that codexExecutable only' : 'nothing' }
        : { executed: 'only the codexExecutable each call sends' },
      actual: { trap: trap.trap, argv: trap.argv },
    });
  }

  /** A launch used by one of `allowed` (calls sharing a nonce): it must match one of them exactly. */
  private judgeLaunch(launch: Launch, allowed: MonitoredCall[], run: ProbeRun | undefined): void {
    // The launch's own shape is judged once; how it served each call is judged per call (the
    // findings are deduplicated), whatever order the records come in.
    const firstTime = !this.judgedLaunches.has(launch.id);
    this.judgedLaunches.add(launch.id);
    const parsed = parseLaunchArgv(launch.argv);
    const json = parsed.stateArguments.length === 1 ? parseJson(parsed.stateArguments[0]!) : undefined;
    const served: ServedLaunch = { launch, parsed, forwarded: json?.ok ? json.value : undefined, run };
    const call = allowed.find((c) => this.matches(c, served)) ?? allowed[0]!;
    this.judgeShape(call, served, firstTime);
    if (this.matches(call, served)) return this.judgeOrder(call, served);
    if (parsed.stateArguments.length !== 1) return; // FWD-1's finding already: no single state to compare
    this.judgeOtherAuthority(call, served);
  }

  private exeOf(call: MonitoredCall): LauncherName | undefined {
    return call.authority.kind === 'valid' ? this.input.launcherName(call.authority.codexExecutable) : undefined;
  }

  /** Whether the launch is of exactly this call's codexExecutable and state. */
  private matches(call: MonitoredCall, { launch, forwarded }: ServedLaunch): boolean {
    return this.exeOf(call) === launch.launcher && isDeepStrictEqual(stateOf(call), forwarded);
  }

  /** FWD-1: `sandbox --sandbox-state-json <state> -- <command>`, and an argv tool's command exactly as asked. */
  private judgeShape(call: MonitoredCall, { launch, parsed }: ServedLaunch, firstTime: boolean): void {
    // Only once per launch: its shape does not depend on which execution we came from.
    if (firstTime && parsed.problems.length > 0) {
      this.charge(call, this.role('argv-shape', call), {
        message: `${callLabel(call)}: the launch is not \`sandbox --sandbox-state-json <state> -- <command>\`: ${parsed.problems.join('; ')}`,
        expected: ['sandbox', '--sandbox-state-json', '<the state JSON>', '--', ...(call.argv ?? ['<command>'])],
        actual: launch.argv,
      });
    }
    const command = parsed.command ?? [];
    if (call.argv && call.nonce && carriesNonce(command, call.nonce) && !isDeepStrictEqual(command, call.argv)) {
      this.charge(call, this.role('argv-shape', call), {
        message: `${callLabel(call)}: an argv tool's command must follow "--" exactly as asked`,
        expected: ['sandbox', '--sandbox-state-json', '<the state JSON>', '--', ...call.argv],
        actual: launch.argv,
      });
    }
  }

  /** FWD-3: the right state, re-serialized (key order changed): said once per launch, for the first call it served. */
  private judgeOrder(call: MonitoredCall, { launch, forwarded }: ServedLaunch): void {
    const order = keyOrderDifferences(stateOf(call), forwarded);
    if (order.length === 0 || this.orderJudged.has(launch.id)) return;
    this.orderJudged.add(launch.id);
    this.charge(call, this.role('fidelity', call), {
      message: `${callLabel(call)}: the forwarded state was re-serialized: key order changed at ${order.length} place${order.length === 1 ? '' : 's'}`,
      expected: stateOf(call),
      actual: forwarded,
      diff: order.map((d) => `~ order    ${d}`),
    });
  }

  /** The launch is not of this call's authority: another call's (AUTH-2, AUTH-3), another launcher (LAUNCH-1), or a changed state (FWD-2). */
  private judgeOtherAuthority(call: MonitoredCall, served: ServedLaunch): void {
    const { launch, parsed, forwarded } = served;
    const actual = {
      launch: launch.argv,
      forwardedState: forwarded ?? parsed.stateArguments,
      execution: served.run ? whereItRan(served.run) : '(no record of the command itself)',
    };
    const others = this.input.calls.filter((c) => c !== call && c.authority.kind === 'valid' && c.expect !== 'refuse');
    const owners = others.filter((c) => this.matches(c, served));
    // A call in flight at the same time first (AUTH-3), else an earlier one (AUTH-2).
    const owner = owners.find((c) => inFlightTogether(call, c)) ?? owners[0];
    if (owner) {
      const concurrent = inFlightTogether(call, owner);
      const diff = stateOf(call) && isObject(forwarded) ? structuralDiff(stateOf(call), forwarded) : undefined;
      this.charge(call, call.authorityCheck ?? this.role(concurrent ? 'concurrent-authority' : 'stale-authority', call), {
        message: `${callLabel(call)}: ran under the authority of ${callLabel(owner)}${concurrent ? ', another call in flight at the same time' : ''}, not its own`,
        expected: { call: `${call.scenario} call #${call.index}`, ...describeAuthority(call) },
        actual: { ...actual, ranUnderAuthorityOf: { call: `${owner.scenario} call #${owner.index}`, ...describeAuthority(owner) } },
        diff,
      });
    } else if (this.exeOf(call) !== launch.launcher) {
      this.charge(call, this.role('launcher', call), {
        message: `${callLabel(call)}: the command ran in a launch of another codexExecutable than the one this call sent`,
        expected: describeAuthority(call),
        actual,
      });
    } else if (forwarded === undefined) {
      this.charge(call, this.role('state-unchanged', call), {
        message: `${callLabel(call)}: the value of --sandbox-state-json is not JSON`,
        expected: stateOf(call),
        actual: parsed.stateArguments[0],
      });
    } else this.judgeChangedState(call, forwarded);
  }

  /** FWD-2: the state forwarded differs from the one this call sent (or took a decoy: ALIAS-2, AUTH-1). */
  private judgeChangedState(call: MonitoredCall, forwarded: unknown): void {
    const diff = structuralDiff(stateOf(call), forwarded);
    const text = JSON.stringify(forwarded);
    const decoyTaken = call.decoy && call.decoy.markers.some((marker) => text.includes(marker));
    const keyNote =
      call.sent.state === undefined
        ? ` (state sent only under ${STATE_KEY_DEPRECATED})`
        : call.sent.stateDeprecated === undefined
          ? ` (state sent only under ${STATE_KEY})`
          : '';
    this.charge(call, decoyTaken ? call.decoy!.check : this.role('state-unchanged', call), {
      message: `${callLabel(call)}${keyNote}: the forwarded state differs from the one this call sent (${diff.length} path${diff.length === 1 ? '' : 's'})`,
      expected: stateOf(call),
      actual: forwarded,
      diff,
    });
  }
}

/** A launch as one execution saw it: its argv taken apart, the state it forwarded, the probe's record. */
interface ServedLaunch {
  launch: Launch;
  parsed: ReturnType<typeof parseLaunchArgv>;
  forwarded: unknown;
  run: ProbeRun | undefined;
}

/**
 * Whether two calls were in flight at the same time: both sent amid concurrent traffic, and each
 * sent before the other was answered (two bursts seconds apart are not; without times, the flags decide).
 */
function inFlightTogether(a: MonitoredCall, b: MonitoredCall): boolean {
  if (!a.concurrent || !b.concurrent) return false;
  if (!a.window || !b.window) return true;
  return a.window.sent < (b.window.answered ?? Infinity) && b.window.sent < (a.window.answered ?? Infinity);
}

const stateOf = (call: MonitoredCall) => (call.authority.kind === 'valid' ? call.authority.state : undefined);
