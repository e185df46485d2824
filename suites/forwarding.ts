import { LAUNCHER_KEY } from '../harness/codex-wire.js';
import { usesShellString } from '../harness/exec-adapter.js';
import { shellQuote } from '../harness/observers.js';
import { bothKeys } from './aliases.js';
import { controlFacts, judgeStateReachedLaunch, keyOrderDifferences, launchesOf, parseLaunchArgv, probeRan, stateInArgv, structuralDiff, summarizeOutcome } from './judge.js';
import { runsGivenExecutable } from './launcher.js';
import { couldNotRun, fail, pass, type CheckDef, type ExecProbe, type Scenario, type Verdict } from './model.js';
import type { Observations } from '../harness/observers.js';

export const argvShape: CheckDef = {
  id: 'forwarding/argv-shape',
  rule: 'FWD-1',
  level: 'MUST',
  title: 'launches `<codex> sandbox --sandbox-state-json <state> -- <command>`',
  summary:
    'The launcher is called with the subcommand sandbox, the whole state as the single value of --sandbox-state-json, then --, then exactly the command asked for. The only other flags allowed are --sandbox-state-readable-root <absolute path> (repeatable) and --sandbox-state-disable-network. Source: CONTRACT.md §3 FWD-1.',
  why: 'Any other shape is either rejected by the real codex sandbox or changes what runs inside it.',
  typicalMistake: 'Splitting the state across arguments, adding flags such as -C, or wrapping the command in a shell.',
  fix: "spawn(codexExecutable, ['sandbox', '--sandbox-state-json', JSON.stringify(state), '--', ...argv]) with no shell.",
  needs: ['exec', 'opt-in'],
};

export const stateUnchanged: CheckDef = {
  id: 'forwarding/state-unchanged',
  rule: 'FWD-2',
  level: 'MUST',
  title: 'forwards the state unchanged, unknown fields included',
  summary:
    'The value passed to --sandbox-state-json is the state Codex sent: nothing added, dropped or renamed, and fields the server does not know (at any depth) survive. Source: CONTRACT.md §2 and §3 FWD-2.',
  why: 'The state is opaque and gains fields between Codex releases; a server that rebuilds it silently drops policy it does not understand.',
  typicalMistake: 'Parsing the state into a typed struct and serializing that struct.',
  fix: 'Forward the JSON value exactly as received (serialize the parsed value, never a typed copy).',
  needs: ['exec', 'opt-in'],
};

export const fidelity: CheckDef = {
  id: 'forwarding/state-fidelity',
  rule: 'FWD-3',
  level: 'SHOULD',
  title: 'forwards the value as received: key order, non-ASCII, empty values, nulls, depth',
  summary:
    'Forward the original JSON value rather than a re-serialized typed copy, so that the order of non-index keys, non-ASCII text, empty objects and arrays, nulls and deep nesting survive. Judged on parsed JSON plus key order, never on bytes (parsers may reorder index-like keys, respell numbers and expand escapes). Source: CONTRACT.md §3 FWD-3.',
  why: 'A typed copy is where fields get lost or reshaped; a value that comes back in a different order is a sign the server rebuilt it.',
  typicalMistake: 'Deserializing into a struct or a sorted map and serializing that.',
  fix: 'Keep the parsed JSON value as is (or the raw text) and serialize that.',
  needs: ['exec', 'opt-in'],
};

/** The command the launcher should run: exactly the argv, or (for a shell-string tool) a shell running that string. */
function commandMatches(actual: string[] | undefined, probe: ExecProbe, shellString: boolean): boolean {
  if (!actual) return false;
  if (JSON.stringify(actual) === JSON.stringify(probe.command)) return true;
  if (!shellString) return false;
  const script = probe.command.map(shellQuote).join(' ');
  return actual.length === 3 && /(^|\/)(ba|z|da)?sh$/.test(actual[0]!) && /^-l?c$/.test(actual[1]!) && actual[2] === script;
}

function judgeArgv(probe: ExecProbe, observations: Observations, shellString: boolean): Verdict {
  const launch = launchesOf(observations, probe.nonce)[0];
  if (!launch) return couldNotRun(`no launch carried the probe, so there is no argv to judge (see ${runsGivenExecutable.id})`);
  const parsed = parseLaunchArgv(launch.argv);
  const problems = [...parsed.problems];
  if (!commandMatches(parsed.command, probe, shellString)) {
    problems.push(`the command after "--" is ${JSON.stringify(parsed.command)}, not ${JSON.stringify(probe.command)}`);
  }
  if (problems.length === 0) return pass();
  return fail(problems.join('; '), {
    expected: ['sandbox', '--sandbox-state-json', '<state JSON>', '--', ...probe.command],
    actual: launch.argv,
  });
}

function judgeState(probe: ExecProbe, observations: Observations, state: unknown): Verdict {
  const launch = launchesOf(observations, probe.nonce)[0];
  if (!launch) return couldNotRun(`no launch carried the probe (see ${runsGivenExecutable.id})`);
  const parsed = parseLaunchArgv(launch.argv);
  if (parsed.stateArguments.length !== 1) return couldNotRun(`the launch does not carry exactly one state value (see ${argvShape.id})`);
  const received = stateInArgv(launch.argv);
  if (received === undefined) {
    return fail('the value of --sandbox-state-json is not JSON', { expected: state, actual: parsed.stateArguments[0] });
  }
  const diff = structuralDiff(state, received);
  if (diff.length === 0) return pass();
  return fail(`the forwarded state differs from the one sent (${diff.length} path${diff.length === 1 ? '' : 's'})`, { expected: state, actual: received, diff });
}

function judgeFidelity(probe: ExecProbe, observations: Observations, state: unknown): Verdict {
  const launch = launchesOf(observations, probe.nonce)[0];
  const received = launch ? stateInArgv(launch.argv) : undefined;
  if (received === undefined) return couldNotRun(`no forwarded state to judge (see ${stateUnchanged.id})`);
  if (structuralDiff(state, received).length > 0) {
    return couldNotRun(`the forwarded state differs in content (see ${stateUnchanged.id}); fidelity is judged on an equal value`);
  }
  const differences = keyOrderDifferences(state, received);
  if (differences.length === 0) return pass();
  return fail(`the forwarded state was re-serialized: key order changed at ${differences.length} place${differences.length === 1 ? '' : 's'}`, {
    expected: state,
    actual: received,
    diff: differences.map((d) => `~ order    ${d}`),
  });
}

function judgeLauncherUsed(probe: ExecProbe, observations: Observations): Verdict {
  const ran = probeRan(observations, probe.nonce);
  const pathSearch = observations.trapCalls.filter((t) => t.trap === 'path-search');
  const launches = launchesOf(observations, probe.nonce);
  const actual = {
    ...(summarizeOutcome(probe.outcome) as object),
    launchesOfGivenLauncher: launches.length,
    codexFoundOnPath: pathSearch.map((t) => t.argv.join(' ')),
    probeRan: ran ? ran.launchId || '(without any launcher)' : false,
  };
  const expected = { launchesOfGivenLauncher: 1, codexFoundOnPath: [], probeRan: '<under that launch>' };
  if (pathSearch.length > 0) return fail('the server ran a `codex` found on PATH instead of codexExecutable', { expected, actual });
  if (ran && !ran.launchId) return fail('the command ran without the launcher', { expected, actual });
  if (launches.length === 0 && !ran) {
    return couldNotRun('the call ran nothing at all, so which executable the server would use is unknown (see aliases/both-keys)');
  }
  if (launches.length === 0) return fail(`the server never executed the ${LAUNCHER_KEY} codexExecutable`, { expected, actual });
  return pass();
}

/**
 * The control scenario: one call exactly as Codex makes it. It decides the launch and forwarding
 * checks, and tells the fail-closed scenarios whether the exec tool works at all.
 */
export const codexCallScenario: Scenario = {
  id: 'forwarding/codex-call',
  title: 'a tools/call exactly as Codex sends it',
  checks: [runsGivenExecutable, argvShape, stateUnchanged, fidelity, bothKeys],
  needs: ['exec', 'opt-in'],
  transports: ['stdio'],
  isControl: true,
  run: async (ctx) => {
    const probe = await ctx.execProbe(ctx.codexEntries());
    const observations = await ctx.observe();
    ctx.publishControl(controlFacts(probe, observations));
    const shellString = usesShellString(ctx.exec?.arguments);
    return new Map<string, Verdict>([
      [runsGivenExecutable.id, judgeLauncherUsed(probe, observations)],
      [argvShape.id, judgeArgv(probe, observations, shellString)],
      [stateUnchanged.id, judgeState(probe, observations, ctx.state)],
      [fidelity.id, judgeFidelity(probe, observations, ctx.state)],
      [bothKeys.id, judgeStateReachedLaunch(probe, observations, ctx.state, 'a call with both state keys')],
    ]);
  },
};
