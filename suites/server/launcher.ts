import { LAUNCHER_KEY, STATE_KEY, STATE_KEY_DEPRECATED, type SandboxEntries } from '../../harness/codex-wire.js';
import { join } from 'node:path';
import { isRefusal } from '../../harness/codex-session.js';
import { awaitProbeRuns, controlledPass, controlRun, judgeFailClosed, launchesOf, ranInside, summarizeOutcome, waitForControl } from '../engine/judge.js';
import {
  couldNotRun,
  fail,
  pass,
  singleCheckScenario,
  type CheckDef,
  type ExecProbe,
  type IsolatedContext,
  type Scenario,
  type ScenarioContext,
  type Verdict,
  takingTurns,
} from '../engine/model.js';

export const runsGivenExecutable: CheckDef = {
  id: 'launcher/runs-given-executable',
  rule: 'LAUNCH-1',
  level: 'MUST',
  title: 'executes exactly the codexExecutable it was given',
  summary: `When "${LAUNCHER_KEY}" is present, the server executes its codexExecutable and nothing else: not a codex found on PATH, not one named in tool arguments. Source: CONTRACT.md §2 and §3 LAUNCH-1.`,
  observes:
    "The control call, made exactly as Codex makes it over stdio, must be served by a launch of the fake launcher whose path it sent, and its command must have run inside that launch: the probe's own record carries that launch's id (inside the real sandbox, where a state may forbid the record, the probe's stdout line as the launcher kept it). A launch whose command never ran shows nothing: it fails when the call reported success, and is could not run otherwise (a code tool given a shell line), saying what the launch printed. The server's PATH starts with a trap codex that records any invocation. For every call of the run the monitor charges here a launch by another of the suite's launchers than the one that call sent, and any trap invocation that is not owed to a call that had to be refused or to the check that planted the trap.",
  why: 'Codex verified that executable; any other codex may be a different version, or something else that merely has the name.',
  typicalMistake: "spawn('codex', ...) by bare name, which searches PATH.",
  fix: 'Spawn meta["codex/sandbox-launcher"].codexExecutable by its absolute path.',
  needs: ['exec', 'opt-in'],
  monitors: 'launcher',
};

const failClosedCheck = (id: string, rule: 'LAUNCH-2' | 'LAUNCH-3', title: string, sends: string, typicalMistake: string, watched = ''): CheckDef => ({
  id,
  rule,
  level: 'MUST',
  title,
  summary: `${sends} The server must fail closed: answer with an error and run nothing (no PATH search, no unsandboxed fallback), unless the operator who started it opted out. Source: CONTRACT.md §3 ${rule}.`,
  observes: `A fresh server gets each missing or malformed variant in turn, before any valid call. This variant's call must get an error response (a JSON-RPC error or isError: true), with no launch carrying its nonce, no execution record of its probe and no trap invocation${watched}; a refusal only counts when the control call shows the same tool runs commands when given everything Codex sends (its probe ran inside a launch; a bare launch is no such proof). The call is registered as one to refuse, so the monitor charges to this check any launch or execution tied to it that is recorded until its server is stopped.`,
  why: 'Without a verified launcher and a valid state, the only way to run the command is outside the sandbox, silently.',
  typicalMistake,
  fix: 'Validate the launcher (object, absolute path, existing executable file) and the state (object) on every call; if either is missing or invalid, return isError: true without spawning anything.',
  needs: ['exec', 'opt-in'],
});

export const absentFailsClosed = failClosedCheck(
  'launcher/absent-fails-closed',
  'LAUNCH-2',
  'fails closed when no launcher is sent',
  `The call carries both state keys but no "${LAUNCHER_KEY}".`,
  'Falling back to running the command directly, or to a codex on PATH.',
  " (the server's PATH starts with a trap codex)",
);

const relativePath = failClosedCheck(
  'launcher/relative-path',
  'LAUNCH-3',
  'fails closed when codexExecutable is a relative path',
  'codexExecutable is the relative path "codex", and executables named codex wait where a resolver might look (the workspace, its bin/).',
  'Spawning a relative name, which searches PATH, or resolving it against the working directory or the sandboxCwd.',
  " (trap executables named codex are planted in the workspace, which is the sandboxCwd, and in its bin/, and a trap codex is first on the server's PATH)",
);

/** Traps where a relative "codex" could be resolved to: the workspace (the sandboxCwd) and its bin/; their firing is charged to `check`. */
export async function plantRelativeTraps(ctx: Pick<IsolatedContext, 'plantTrap'>, workspace: string, check: string): Promise<void> {
  await Promise.all([
    ctx.plantTrap('relative-launcher', { dir: workspace }, check),
    ctx.plantTrap('relative-launcher', { dir: join(workspace, 'bin') }, check),
  ]);
}

interface Malformed {
  check: CheckDef;
  entries: (ctx: ScenarioContext) => Promise<SandboxEntries>;
}

const malformed: Malformed[] = [
  {
    check: failClosedCheck(
      'launcher/not-an-object',
      'LAUNCH-3',
      'fails closed when the launcher is not an object',
      `"${LAUNCHER_KEY}" is a bare string holding a real executable path.`,
      'Accepting a string as the launcher.',
      ' (the string is the path of the fake launcher itself, so using it shows as a launch)',
    ),
    entries: async (ctx) => ({ ...ctx.codexEntries(), launcher: ctx.observers.launcherPath }),
  },
  {
    check: relativePath,
    entries: async (ctx) => {
      await plantRelativeTraps(ctx, ctx.observers.workspaceDir, relativePath.id);
      return { ...ctx.codexEntries(), launcher: { codexExecutable: 'codex' } };
    },
  },
  {
    check: failClosedCheck(
      'launcher/missing-file',
      'LAUNCH-3',
      'fails closed when codexExecutable does not exist',
      'codexExecutable is an absolute path to no file.',
      'Trying the path, failing, and then running the command some other way.',
      " (a trap codex is first on the server's PATH)",
    ),
    entries: async (ctx) => ({ ...ctx.codexEntries(), launcher: { codexExecutable: ctx.observers.missingLauncherPath() } }),
  },
  {
    check: failClosedCheck(
      'launcher/not-executable',
      'LAUNCH-3',
      'fails closed when codexExecutable is not executable',
      'codexExecutable is a file without the execute bit.',
      'Running the file through a shell (sh <path>) when exec fails.',
      ' (the file is itself a trap, so running it through a shell is recorded)',
    ),
    entries: async (ctx) => ({
      ...ctx.codexEntries(),
      launcher: { codexExecutable: await ctx.plantTrap('not-executable', { executable: false }, 'launcher/not-executable') },
    }),
  },
  {
    check: failClosedCheck(
      'launcher/state-missing',
      'LAUNCH-3',
      'fails closed when no state is sent',
      `A valid launcher, but neither "${STATE_KEY}" nor "${STATE_KEY_DEPRECATED}".`,
      'Forwarding {} or a default state of its own.',
      ' (the launcher is the valid fake launcher, so forwarding any state of its own shows as a launch)',
    ),
    entries: async (ctx) => ({ ...ctx.codexEntries(), state: undefined, stateDeprecated: undefined }),
  },
  {
    check: failClosedCheck(
      'launcher/state-not-object',
      'LAUNCH-3',
      'fails closed when the state is not an object',
      'A valid launcher, and both state keys hold the state as a JSON string instead of an object.',
      'Forwarding whatever value arrives.',
      ' (the launcher is the valid fake launcher, so forwarding the string shows as a launch)',
    ),
    entries: async (ctx) => {
      const asString = JSON.stringify(ctx.state);
      return { ...ctx.codexEntries(), state: asString, stateDeprecated: asString };
    },
  },
];

/**
 * One fresh server is sent every missing or malformed authority in turn, before any valid call:
 * each call decides its own check, and whatever it caused is charged to that check by the monitor.
 * (The same variants between successful calls are fails-closed-after-success's.)
 */
const failClosedScenario: Scenario = {
  id: 'launcher/fails-closed',
  title: 'a fresh server is sent each missing or malformed launcher and state in turn',
  checks: [absentFailsClosed, ...malformed.map((m) => m.check)],
  needs: ['exec', 'opt-in'],
  transports: ['stdio'],
  run: async (ctx) => {
    const variants = [{ check: absentFailsClosed, entries: async (c: ScenarioContext) => ({ ...c.codexEntries(), launcher: undefined }) }, ...malformed];
    const probes: [CheckDef, ExecProbe][] = [];
    for (const variant of variants) probes.push([variant.check, await ctx.execProbe(await variant.entries(ctx), { check: variant.check.id })]);
    const observations = await ctx.observe();
    const verdicts = new Map<string, Verdict>();
    for (const [check, probe] of probes) verdicts.set(check.id, await judgeFailClosed(probe, observations, ctx.control()));
    return verdicts;
  },
};

export const failsClosedAfterSuccess: CheckDef = {
  id: 'launcher/fails-closed-after-success',
  rule: 'LAUNCH-2',
  level: 'MUST',
  title: 'still fails closed after successful calls, for every missing or malformed launcher and state',
  summary:
    'On one server process, calls with everything Codex sends alternate with calls whose launcher is absent, not an object, relative, missing or not executable, and whose state is absent or not an object. Every one of the latter must be refused with nothing run, however many calls succeeded before. Source: CONTRACT.md §3 LAUNCH-2, LAUNCH-3 and EXEC-1.',
  observes:
    "On one server process: a valid call, then the seven invalid variants (launcher absent, not an object, relative, missing, not executable; state absent, not an object), with a valid call after every second one and another at the end; each invalid call must get an error response, and at least one valid call must run its command inside a launch (the probe's own record) for the refusals to count. The invalid calls are registered as ones to refuse, so the monitor charges here any launch or execution tied to them, including one run under the launcher or state remembered from an earlier valid call.",
  why: "A server that remembers the last good launcher or state runs a call that carried no authority under an earlier call's, which is the silent escape the contract exists to prevent.",
  typicalMistake: 'Keeping the last launcher (or state) in a variable and falling back to it when a call has none.',
  fix: "Read the launcher and the state from each call's own _meta, and refuse the call when either is missing or invalid.",
  needs: ['exec', 'opt-in'],
};

export const brokenSandbox: CheckDef = {
  id: 'launcher/broken-sandbox-not-bypassed',
  rule: 'LAUNCH-3',
  level: 'MUST',
  title: 'reports a launcher that cannot set up its sandbox, and never reruns the command another way',
  summary:
    'The codexExecutable exists and is executable but fails the way a broken sandbox does (a bubblewrap error on stderr, exit 1, nothing run). The call must come back as an error, and the command must never run: not directly, not later. Source: CONTRACT.md §3 LAUNCH-3 and EXEC-1.',
  observes:
    "One call names a launcher that records its argv and then fails like a broken bubblewrap (error on stderr, exit 1, nothing run), and a normal call follows on the same server; the first call's response must be an error. That call is registered as an attempt: launching the broken launcher is allowed, but the monitor charges here any execution of its command, by any route and at any time until the server stops, including a retry folded into the later call.",
  why: 'A retry without the sandbox turns every sandbox failure into an unsandboxed run.',
  typicalMistake: 'Catching the launcher\'s failure and rerunning the command directly "so the user still gets output".',
  fix: "Return the launcher's failure as an error result (isError: true) and run nothing else.",
  needs: ['exec', 'opt-in'],
};

/** Valid calls interleaved with every invalid variant, on one process. */
const afterSuccessScenario = singleCheckScenario(failsClosedAfterSuccess, async (ctx) => {
  const invalid = [
    { label: launcherAbsent.label, entries: async () => ({ ...ctx.codexEntries(), launcher: undefined }) },
    ...malformed.map((m) => ({ label: m.check.id, entries: () => m.entries(ctx) })),
  ];
  const valid: ExecProbe[] = [];
  const refusedWrongly: { label: string; response: unknown }[] = [];
  valid.push(await ctx.execProbe(ctx.codexEntries()));
  for (const [i, variant] of invalid.entries()) {
    const probe = await ctx.execProbe(await variant.entries(), { expect: 'refuse' });
    if (!isRefusal(probe.outcome)) refusedWrongly.push({ label: variant.label, response: summarizeOutcome(probe.outcome) });
    if (i % 2 === 1) valid.push(await ctx.execProbe(ctx.codexEntries()));
  }
  valid.push(await ctx.execProbe(ctx.codexEntries()));
  await awaitProbeRuns(
    ctx,
    valid.filter((probe) => !isRefusal(probe.outcome)).map((probe) => probe.nonce),
  );
  const observations = await ctx.observe();
  // Nothing may run for the invalid calls: the monitor charges any execution to this check. The
  // refusals count only beside a valid call whose command ran inside a launch (a bare launch shows nothing).
  const shown = valid.map((probe) => controlRun(observations, probe.nonce)).find((proof) => proof !== undefined);
  if (!shown) {
    return (
      (await waitForControl(ctx, 'no valid call of the sequence ran its command inside a launch')) ??
      couldNotRun('no valid call of the sequence ran its command inside a launch, so the refusals prove nothing')
    );
  }
  if (refusedWrongly.length > 0) {
    return fail(`${refusedWrongly.length} call${refusedWrongly.length === 1 ? '' : 's'} without valid authority did not come back as an error`, {
      expected: 'an error (JSON-RPC error or isError: true) for each',
      actual: refusedWrongly,
    });
  }
  return pass(`every call without valid authority was refused, between valid calls that ran their command (${ranInside(shown)})`);
});

/** A launcher that fails like a broken bubblewrap, then a normal call: the first command never runs. */
const brokenSandboxScenario = singleCheckScenario(brokenSandbox, async (ctx) => {
  const broken = await ctx.observers.brokenLauncher();
  const probe = await ctx.execProbe({ ...ctx.codexEntries(), launcher: { codexExecutable: broken } }, { expect: 'attempt' });
  await ctx.execProbe(ctx.codexEntries()); // later: a retry queued for "when the sandbox works" would show here
  const observations = await ctx.observe();
  const attempted = launchesOf(observations, probe.nonce).some((l) => l.launcher === 'broken');
  const actual = { ...(summarizeOutcome(probe.outcome) as object), launchedBrokenLauncher: attempted };
  if (!isRefusal(probe.outcome)) {
    return fail('the launcher failed to set up its sandbox, yet the call reported success', {
      expected: { response: 'an error (isError: true or a JSON-RPC error)' },
      actual,
    });
  }
  if (!attempted) {
    return controlledPass(ctx, 'the broken launcher was never tried', 'the server refused before launching (it checks its launcher beforehand)');
  }
  // Whether the command ran some other way, then or later, is the monitor's finding, charged here;
  // that it ran nowhere says something only of a tool that runs commands where it may (the control).
  return controlledPass(ctx, 'the command never ran', 'the broken launcher was tried and its failure reported as an error');
});

const launcherAbsent = { label: absentFailsClosed.id };

// Failing closed before any valid call is a fresh server's test; the others take turns on the shared one.
export const launcherScenarios: Scenario[] = [failClosedScenario, takingTurns(afterSuccessScenario, { last: true }), takingTurns(brokenSandboxScenario)];
