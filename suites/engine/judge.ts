import diff from 'microdiff';
import { isRefusal, type RawOutcome } from '../../harness/codex-session.js';
import { adapterRejection } from '../../harness/exec-adapter.js';
import type { Launch, Observations, Printed, ProbeRun } from '../../harness/observers.js';
import { couldNotRun, fail, pass, type ControlCall, type ControlFacts, type Counterexample, type ExecProbe, type Finding, type Verdict } from './model.js';
import { isObject } from '../../harness/json.js';

/** A short, readable account of a tools/call outcome for expected/actual. */
export function summarizeOutcome(outcome: RawOutcome): unknown {
  switch (outcome.kind) {
    case 'result': {
      const result = isObject(outcome.result) ? outcome.result : {};
      const content = Array.isArray(result.content) ? result.content : [];
      const text = content
        .map((item) => (isObject(item) && typeof item.text === 'string' ? item.text : ''))
        .join('\n')
        .slice(0, 400);
      return { response: 'result', isError: result.isError === true, text };
    }
    case 'error':
      return { response: 'JSON-RPC error', code: outcome.error.code, message: outcome.error.message };
    case 'timeout':
      return { response: `no answer within ${outcome.afterMs} ms` };
    case 'closed':
      return { response: `connection lost: ${outcome.detail}` };
  }
}

const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;

/**
 * A command as a report shows it: control and invisible characters escaped (a newline is "\n"),
 * the scenario's directory shortened to "<tmp>", cut to `max` characters with its size in bytes.
 */
export function commandText(text: string, dir?: string, max = 120): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  // Only the head can show: escape and count no more than that (a command may be 100 KB, and every call shows its own).
  const head = text.slice(0, 4 * max + (dir?.length ?? 0));
  let shown = dir ? head.split(dir).join('<tmp>') : head;
  shown = shown.replace(UNSAFE, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
  const chars = [...shown];
  return chars.length > max || head.length < text.length ? `${chars.slice(0, max).join('')}… (${bytes} bytes)` : shown;
}

/** A call's command as findings name it, after the call: " (command, <form>: "<text>")", or '' when it has none. */
export const commandLabel = (command: { form: string; text: string } | undefined): string =>
  command ? ` (command, ${command.form}: ${JSON.stringify(command.text)})` : '';

/** True when an argv mentions the nonce, also inside a shell string that wraps the command. */
export const carriesNonce = (argv: string[], nonce: string): boolean => argv.some((arg) => arg.includes(nonce));

/** The launches (not capability probes) that carried this probe's nonce. */
export function launchesOf(observations: Observations, nonce: string): Launch[] {
  return observations.launches.filter((l) => !l.isCapabilityProbe && carriesNonce(l.argv, nonce));
}

/** Every execution of the probe with this nonce (each leaves its own record). */
export function probeRunsOf(observations: Observations, nonce: string) {
  return observations.probeRuns.filter((run) => run.nonce === nonce);
}

/**
 * Waits (up to `waitMs`) until the probe with each nonce has run, and returns what was observed
 * by then: a session or a started process runs what it accepted after the call returned.
 */
export async function awaitProbeRuns(ctx: { observe(): Promise<Observations> }, nonces: string[], waitMs = 1500): Promise<Observations> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const observations = await ctx.observe();
    if (nonces.every((n) => probeRunsOf(observations, n).length > 0) || Date.now() >= deadline) return observations;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The first execution of this probe inside a launch, else its first execution at all. */
export function probeRan(observations: Observations, nonce: string) {
  const runs = probeRunsOf(observations, nonce);
  return runs.find((run) => run.launchId !== '') ?? runs[0];
}

/**
 * The launches that served this call: those that carried its nonce, and those its probe ran in
 * (a worker or session launched earlier and fed the command later).
 */
export function launchesFor(observations: Observations, nonce: string): Launch[] {
  const ranIn = new Set(probeRunsOf(observations, nonce).map((run) => run.launchId));
  return observations.launches.filter((l) => !l.isCapabilityProbe && (carriesNonce(l.argv, nonce) || ranIn.has(l.id)));
}

/** The launch the probe ran in (else the first that carried it), if any. */
export function launchOf(observations: Observations, nonce: string): Launch | undefined {
  const ran = probeRunsOf(observations, nonce).find((run) => observations.launches.some((l) => l.id === run.launchId));
  return (ran && observations.launches.find((l) => l.id === ran.launchId)) ?? launchesOf(observations, nonce)[0];
}

/** The check whose failure is reported when the control call launches nothing. */
export const CONTROL_CHECK = 'launcher/runs-given-executable';

/** A could-not-run verdict when the control shows the exec tool runs no command inside a launch; undefined when it works. */
export async function waitForControl(ctx: { control(): Promise<ControlFacts> }, what: string): Promise<Verdict | undefined> {
  const facts = await ctx.control();
  return facts.works
    ? undefined
    : couldNotRun(
        `${what}, and the exec tool does not run a command inside a launch even with everything Codex sends (see ${CONTROL_CHECK}: ${facts.detail})`,
        CONTROL_CHECK,
      );
}

/** A pass that rests on the control: `note`, what the control's call ran, and that call (--verbose, the JSON report). */
export const passOnControl = (note: string, facts: ControlFacts): Verdict =>
  pass(facts.call ? `${note}; the control, with everything Codex sends, showed the tool runs commands: ${facts.call.ran}` : note, facts.call);

/** The control's pass, or why the check resting on it could not run: for checks whose every call was refused or ran nothing. */
export async function controlledPass(ctx: { control(): Promise<ControlFacts> }, what: string, note: string): Promise<Verdict> {
  return (await waitForControl(ctx, what)) ?? passOnControl(note, await ctx.control());
}

/** The parts of a launcher argv, and everything wrong with its shape (FWD-1). */
export interface LaunchArgv {
  stateArguments: string[];
  command: string[] | undefined;
  problems: string[];
}

export function parseLaunchArgv(argv: string[]): LaunchArgv {
  const problems: string[] = [];
  const stateArguments: string[] = [];
  if (argv[0] !== 'sandbox') problems.push(`first argument is ${JSON.stringify(argv[0])}, not "sandbox"`);
  const separator = argv.indexOf('--');
  if (separator < 0) problems.push('no "--" before the command');
  const flags = argv.slice(1, separator < 0 ? argv.length : separator);
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i]!;
    if (flag === '--sandbox-state-json') {
      if (i + 1 >= flags.length) problems.push('--sandbox-state-json has no value');
      else stateArguments.push(flags[++i]!);
    } else if (flag.startsWith('--sandbox-state-json=')) {
      stateArguments.push(flag.slice('--sandbox-state-json='.length));
    } else if (flag === '--sandbox-state-readable-root') {
      const root = flags[++i];
      if (root === undefined || !root.startsWith('/')) problems.push('--sandbox-state-readable-root needs an absolute path');
    } else if (flag === '--sandbox-state-disable-network') {
      // allowed
    } else {
      problems.push(`argument ${JSON.stringify(flag)} is not allowed before "--"`);
    }
  }
  if (stateArguments.length !== 1) problems.push(`--sandbox-state-json given ${stateArguments.length} times, expected once`);
  return { stateArguments, command: separator < 0 ? undefined : argv.slice(separator + 1), problems };
}

/** Renders microdiff output as one line per changed path. */
export function structuralDiff(expected: unknown, actual: unknown): string[] {
  if (!isObject(expected) || !isObject(actual)) {
    return JSON.stringify(expected) === JSON.stringify(actual) ? [] : [`~ (whole value) ${JSON.stringify(expected)} -> ${JSON.stringify(actual)}`];
  }
  return diff(expected, actual).map((change) => {
    const path = change.path
      .map((part) => (typeof part === 'number' ? `[${part}]` : `.${part}`))
      .join('')
      .replace(/^\./, '');
    if (change.type === 'REMOVE') return `- missing  ${path} (was ${JSON.stringify(change.oldValue)})`;
    if (change.type === 'CREATE') return `+ added    ${path} = ${JSON.stringify(change.value)}`;
    return `~ changed  ${path}: ${JSON.stringify(change.oldValue)} -> ${JSON.stringify(change.value)}`;
  });
}

export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

/** The state carried by an argv of the form `sandbox --sandbox-state-json <json> ...`, parsed. */
export function stateInArgv(argv: string[]): unknown {
  const parsed = parseLaunchArgv(argv);
  if (parsed.stateArguments.length !== 1) return undefined;
  const json = parseJson(parsed.stateArguments[0]!);
  return json.ok ? json.value : undefined;
}

/**
 * A state is recognised in a launch by its sandboxCwd, which every scenario makes unique: a known
 * field survives typed copies and split arguments, so this tells which state a launch got even
 * when the forwarding itself is faulty (that is FWD-1/FWD-2's finding, not this one's).
 */
export const stateMarker = (state: Record<string, unknown>): string => JSON.stringify(state.sandboxCwd);

/** True when some argument before `--` carries the state's marker. */
export function carriesState(argv: string[], state: Record<string, unknown>): boolean {
  const separator = argv.indexOf('--');
  const marker = stateMarker(state);
  return argv.slice(0, separator < 0 ? argv.length : separator).some((arg) => arg.includes(marker));
}

/**
 * The server accepted the call and handed the state it was sent to a codex with this probe
 * (ALIAS-1). Fidelity is FWD-2's question and which codex ran is LAUNCH-1's, so this only asks
 * whether the sent state (known by its unique sandboxCwd) reached a launch before `--`.
 */
export async function judgeStateReachedLaunch(
  probe: ExecProbe,
  observations: Observations,
  state: Record<string, unknown>,
  what: string,
  control: { control(): Promise<ControlFacts> },
): Promise<Verdict> {
  const executions = [
    ...launchesFor(observations, probe.nonce).map((l) => l.argv),
    ...observations.trapCalls.filter((t) => carriesNonce(t.argv, probe.nonce)).map((t) => t.argv),
  ];
  const marker = stateMarker(state);
  const ran = probeRan(observations, probe.nonce);
  const actual = {
    ...(summarizeOutcome(probe.outcome) as object),
    launches: executions,
    probeRan: ran ? ran.launchId || '(without any launcher)' : false,
  };
  if (executions.length === 0) {
    const blocked = await waitForControl(control, `${what}: nothing was launched`);
    if (blocked) return blocked;
    return fail(`${what}: the server never handed the command to a codex sandbox launcher`, {
      expected: 'the probe launched through `codex sandbox --sandbox-state-json <state> -- ...`',
      actual,
    });
  }
  // One policy, not two (ALIAS-1): the command is launched once, however many keys carry the state.
  const launched = launchesFor(observations, probe.nonce).length;
  if (launched > 1) {
    return fail(`${what}: the command was launched ${launched} times; the keys name one policy, so it runs once`, {
      expected: { launches: 1 },
      actual: { ...actual, launches: executions },
    });
  }
  if (executions.some((argv) => carriesState(argv, state))) return pass();
  return fail(`${what}: the launch did not carry the state that was sent (its sandboxCwd ${marker} is nowhere before "--")`, {
    expected: { stateSent: state },
    actual,
  });
}

/** Our own exec call rejected as invalid (a schema error, an unknown tool): the exec checks it fed could not run. */
export const adapterRejected = (rejection: string): Verdict =>
  couldNotRun(`the exec adapter's call was rejected: ${rejection.slice(0, 300)}`, undefined, 'exec-adapter');

/** The run that proves a control: its probe's own record, inside a launch of the launcher the suite sent. */
export function controlRun(observations: Observations, nonce: string): { run: ProbeRun; launch: Launch } | undefined {
  for (const run of probeRunsOf(observations, nonce)) {
    const launch = observations.launches.find((l) => l.id === run.launchId && l.launcher === 'a' && !l.isCapabilityProbe);
    if (launch) return { run, launch };
  }
  return undefined;
}

/** What ran, in words: the probe, inside which launch, and by which record. */
export const ranInside = ({ run, launch }: { run: ProbeRun; launch: Launch }): string =>
  `the probe ran inside launch ${launch.id}` +
  (run.via === 'stdout' ? " (the sandbox's state refused its own record: its stdout line, kept by the launcher outside the sandbox, is the record)" : '');

/** What a launch printed, as findings say it: the first lines of each stream, trimmed and neutralised, or that it printed nothing. */
export function printedText(printed: Printed, dir?: string): string {
  // The first lines, and the last (where an interpreter says what went wrong).
  const head = (text: string) => {
    const lines = text.trim().split('\n');
    return commandText((lines.length > 4 ? [...lines.slice(0, 3), '…', lines.at(-1)!] : lines).join('\n'), dir, 240);
  };
  if (printed.kept === false) return "(not kept: the launcher keeps what a control's launches print)";
  const streams = (['stdout', 'stderr'] as const).filter((s) => printed[s].trim() !== '').map((s) => `${s} "${head(printed[s])}"`);
  return streams.length > 0 ? streams.join(', ') : 'nothing';
}

/**
 * The positive control: it works only when its command ran inside a launch of the launcher the
 * suite sent (the probe's own record, tied to that launch). A bare launch (`codex sandbox -- true`,
 * the command handed to another language's interpreter) shows nothing: the checks that rest on it
 * could not run, saying what the launch printed.
 */
export async function controlFacts(probe: ExecProbe, observations: Observations, observers: ControlObservers, tool: string): Promise<ControlFacts> {
  const response = summarizeOutcome(probe.outcome);
  const call = (ran: string): ControlCall => ({ tool, ...(probe.shown ? { command: probe.shown } : {}), ran, response });
  const proof = controlRun(observations, probe.nonce);
  if (proof) return { works: true, detail: ranInside(proof), call: call(ranInside(proof)) };
  const ran = await notRunInside(probe, observations, observers);
  return { works: false, detail: `with everything Codex sends, ${ran} (${JSON.stringify(response)})`, call: call(ran), ...controlBlocker(probe, observations) };
}

/** What the observers tell of a control that did not work: the heads of what its launches printed. */
export type ControlObservers = { printed(launchId: string): Promise<Printed>; readonly dir: string };

/** Why a command did not run inside a launch of the launcher sent, in words. */
async function notRunInside(probe: ExecProbe, observations: Observations, observers: ControlObservers): Promise<string> {
  const outside = probeRunsOf(observations, probe.nonce).filter((run) => run.launchId === '');
  const launches = launchesFor(observations, probe.nonce);
  const printed = await Promise.all(launches.slice(0, 2).map(async (l) => `${l.id} printed ${printedText(await observers.printed(l.id), observers.dir)}`));
  const launched = launches.length === 0 ? '' : `; launched (${printed.join('; ')}${launches.length > 2 ? `; ${launches.length - 2} more` : ''})`;
  if (outside.length > 0) return `the command ran outside any launch${launched}`;
  const own = launches.filter((l) => l.launcher === 'a');
  if (own.length > 0) return `the codexExecutable sent was launched, but the command never ran inside it (no record of the probe in that launch)${launched}`;
  return `the command never ran inside a launch of the codexExecutable sent${launched}`;
}

/**
 * Whether the control's call proves that no exec check can run: rejected as invalid, or answered
 * with nothing executed at all (no launch, no run of the command, no trap). A call that got no
 * answer proves nothing of the kind (the server may only be slow).
 */
function controlBlocker(probe: ExecProbe, observations: Observations): Pick<ControlFacts, 'blocker'> {
  const rejected = adapterRejection(probe.outcome);
  if (rejected) return { blocker: adapterRejected(rejected) };
  const answered = probe.outcome.kind === 'result' || probe.outcome.kind === 'error';
  const nothing = observations.launches.every((l) => l.isCapabilityProbe) && observations.probeRuns.length === 0 && observations.trapCalls.length === 0;
  if (!answered || !nothing) return {};
  const answer = JSON.stringify(summarizeOutcome(probe.outcome));
  return { blocker: couldNotRun(`the exec tool executed nothing, even for a call with everything Codex sends (${answer})`, CONTROL_CHECK) };
}

/**
 * A call the server must refuse (LAUNCH-2, LAUNCH-3, HTTP-1): an error, nothing launched, the
 * probe never ran, no trap fired. A refusal only counts when the control shows the exec tool
 * does run commands when it may: otherwise a server that refuses everything would pass.
 */
export async function judgeFailClosed(probe: ExecProbe, observations: Observations, control: Promise<ControlFacts>): Promise<Verdict> {
  const launches = launchesOf(observations, probe.nonce);
  const ran = probeRan(observations, probe.nonce);
  // Traps that fired for this call; one that carried no command is the monitor's (charged to its planter).
  const traps = observations.trapCalls.filter((t) => carriesNonce(t.argv, probe.nonce));
  const expected = { response: 'an error (JSON-RPC error or isError: true)', launches: [], probeRan: false, trapsFired: [] };
  const actual = {
    ...(summarizeOutcome(probe.outcome) as object),
    launches: launches.map((l) => l.argv),
    probeRan: ran ? `yes, under ${ran.launchId || 'no launcher at all (unsandboxed)'}` : false,
    trapsFired: traps.map((t) => `${t.trap}: ${t.argv.join(' ')}`),
  };
  const command = commandLabel(probe.shown);
  if (ran && !ran.launchId) return fail(`the command ran without any sandbox launcher${command}`, { expected, actual });
  if (traps.length > 0) return fail(`the server executed a codex it should not have (${traps.map((t) => t.trap).join(', ')})${command}`, { expected, actual });
  if (launches.length > 0 || ran) return fail(`the command was launched although the call should have failed closed${command}`, { expected, actual });
  if (probe.outcome.kind === 'timeout' || probe.outcome.kind === 'closed') {
    return { status: 'error', message: `the call got no answer: ${JSON.stringify(summarizeOutcome(probe.outcome))}` };
  }
  if (!isRefusal(probe.outcome)) return fail('nothing ran, yet the call reported success instead of an error', { expected, actual });
  const facts = await control;
  if (!facts.works) {
    return couldNotRun(
      `the refusal proves nothing: the exec tool did not run a command inside a launch even with everything Codex sends (see ${CONTROL_CHECK}: ${facts.detail})`,
      CONTROL_CHECK,
    );
  }
  return passOnControl(`refused (${JSON.stringify(summarizeOutcome(probe.outcome))}) with nothing launched or run`, facts);
}

const isIndexKey = (key: string) => /^(0|[1-9]\d*)$/.test(key);

/**
 * Where the order of non-index keys differs between two deep-equal values (FWD-3). Index-like
 * keys are left out: JavaScript and other parsers legitimately move them first.
 */
export function keyOrderDifferences(expected: unknown, actual: unknown, path = ''): string[] {
  if (Array.isArray(expected) && Array.isArray(actual)) {
    return expected.flatMap((item, i) => keyOrderDifferences(item, actual[i], `${path}[${i}]`));
  }
  if (!isObject(expected) || !isObject(actual)) return [];
  const want = Object.keys(expected).filter((k) => !isIndexKey(k));
  const got = Object.keys(actual).filter((k) => !isIndexKey(k));
  const here = JSON.stringify(want) === JSON.stringify(got) ? [] : [`${path || '(top level)'}: keys ${JSON.stringify(got)}, sent as ${JSON.stringify(want)}`];
  return [...here, ...want.flatMap((key) => keyOrderDifferences(expected[key], actual[key], path ? `${path}.${key}` : key))];
}

/** What a failure over several violations tells of each: a finding, or another check's failure. */
export type Violation = Pick<Finding, 'message' | 'expected' | 'actual' | 'diff'>;

/** The rules and checks `findings` broke, each once: "EXEC-1 (execution/inside-launch), AUTH-2 (…)". */
export const brokenRules = (findings: readonly Finding[]): string => [...new Set(findings.map((f) => `${f.check.rule} (${f.check.id})`))].join(', ');

/**
 * One failure over several violations: the first told in full (its message after `lead`), the next
 * `listed` as "! message" lines of the diff, then the lines of `after` (the steps before it…).
 */
export function violationsVerdict(
  violations: readonly Violation[],
  lead: string,
  details: { listed?: number; after?: string[]; counterexample?: Counterexample } = {},
): Verdict {
  const [first, ...more] = violations;
  if (!first) throw new Error('violationsVerdict: no violation');
  const listed = more.slice(0, details.listed ?? 5).map((v) => `! ${v.message}`);
  return fail(`${lead}${first.message}`, {
    expected: first.expected,
    actual: first.actual,
    diff: [...(first.diff ?? []), ...listed, ...(details.after ?? [])],
    ...(details.counterexample ? { counterexample: details.counterexample } : {}),
  });
}
