import { LAUNCHER_KEY, STATE_KEY, STATE_KEY_DEPRECATED, type SandboxEntries } from '../harness/codex-wire.js';
import { judgeFailClosed } from './judge.js';
import { singleCheckScenario, type CheckDef, type Scenario, type ScenarioContext } from './model.js';

export const runsGivenExecutable: CheckDef = {
  id: 'launcher/runs-given-executable',
  rule: 'LAUNCH-1',
  level: 'MUST',
  title: 'executes exactly the codexExecutable it was given',
  summary: `When "${LAUNCHER_KEY}" is present, the server executes its codexExecutable and nothing else: not a codex found on PATH, not one named in tool arguments. Source: CONTRACT.md §2 and §3 LAUNCH-1.`,
  why: 'Codex verified that executable; any other codex may be a different version, or something else that merely has the name.',
  typicalMistake: "spawn('codex', ...) by bare name, which searches PATH.",
  fix: 'Spawn meta["codex/sandbox-launcher"].codexExecutable by its absolute path.',
  needs: ['exec', 'opt-in'],
};

const failClosedCheck = (
  id: string,
  rule: 'LAUNCH-2' | 'LAUNCH-3',
  title: string,
  sends: string,
  typicalMistake: string,
): CheckDef => ({
  id,
  rule,
  level: 'MUST',
  title,
  summary: `${sends} The server must fail closed: answer with an error and run nothing (no PATH search, no unsandboxed fallback), unless the operator who started it opted out. Source: CONTRACT.md §3 ${rule}.`,
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
);

interface Malformed {
  check: CheckDef;
  entries: (ctx: ScenarioContext) => Promise<SandboxEntries>;
}

const malformed: Malformed[] = [
  {
    check: failClosedCheck('launcher/not-an-object', 'LAUNCH-3', 'fails closed when the launcher is not an object', `"${LAUNCHER_KEY}" is a bare string holding a real executable path.`, 'Accepting a string as the launcher.'),
    entries: async (ctx) => ({ ...ctx.codexEntries(), launcher: ctx.observers.launcherPath }),
  },
  {
    check: failClosedCheck('launcher/relative-path', 'LAUNCH-3', 'fails closed when codexExecutable is a relative path', 'codexExecutable is the relative path "codex".', 'Spawning a relative name, which searches PATH or the working directory.'),
    entries: async (ctx) => ({ ...ctx.codexEntries(), launcher: { codexExecutable: 'codex' } }),
  },
  {
    check: failClosedCheck('launcher/missing-file', 'LAUNCH-3', 'fails closed when codexExecutable does not exist', 'codexExecutable is an absolute path to no file.', 'Trying the path, failing, and then running the command some other way.'),
    entries: async (ctx) => ({ ...ctx.codexEntries(), launcher: { codexExecutable: ctx.observers.missingLauncherPath() } }),
  },
  {
    check: failClosedCheck('launcher/not-executable', 'LAUNCH-3', 'fails closed when codexExecutable is not executable', 'codexExecutable is a file without the execute bit.', 'Running the file through a shell (sh <path>) when exec fails.'),
    entries: async (ctx) => ({ ...ctx.codexEntries(), launcher: { codexExecutable: await ctx.observers.nonExecutableLauncher() } }),
  },
  {
    check: failClosedCheck('launcher/state-missing', 'LAUNCH-3', 'fails closed when no state is sent', `A valid launcher, but neither "${STATE_KEY}" nor "${STATE_KEY_DEPRECATED}".`, 'Forwarding {} or a default state of its own.'),
    entries: async (ctx) => ({ ...ctx.codexEntries(), state: undefined, stateDeprecated: undefined }),
  },
  {
    check: failClosedCheck('launcher/state-not-object', 'LAUNCH-3', 'fails closed when the state is not an object', 'A valid launcher, and both state keys hold the state as a JSON string instead of an object.', 'Forwarding whatever value arrives.'),
    entries: async (ctx) => {
      const asString = JSON.stringify(ctx.state);
      return { ...ctx.codexEntries(), state: asString, stateDeprecated: asString };
    },
  },
];

function failClosedScenario(check: CheckDef, entries: (ctx: ScenarioContext) => Promise<SandboxEntries>): Scenario {
  return singleCheckScenario(check, async (ctx) => {
    const probe = await ctx.execProbe(await entries(ctx));
    return judgeFailClosed(probe, await ctx.observe(), ctx.control());
  });
}

export const launcherScenarios: Scenario[] = [
  failClosedScenario(absentFailsClosed, async (ctx) => ({ ...ctx.codexEntries(), launcher: undefined })),
  ...malformed.map((m) => failClosedScenario(m.check, m.entries)),
];
