import { judgeFailClosed, passOnControl, summarizeOutcome } from '../engine/judge.js';
import { couldNotRun, fail, singleCheckScenario, type CheckDef, type Scenario, takingTurns } from '../engine/model.js';

export const httpFailsClosed: CheckDef = {
  id: 'transport/http-fails-closed',
  rule: 'HTTP-1',
  level: 'MUST',
  title: 'over HTTP, where no launcher comes, fails closed',
  summary:
    'Codex sends both state keys over Streamable HTTP but never a launcher: the endpoint shares no filesystem with the host. With no launcher the server must answer with an error and run nothing (no PATH search, no unsandboxed run), unless its operator opted out. Source: CONTRACT.md §2 and §3 HTTP-1.',
  observes:
    "Over HTTP, one call with both state keys and no launcher (what Codex sends there) must get an error response, with no launch carrying its nonce, no execution record of its probe and no trap invocation, and the stdio control must show the tool runs commands otherwise. Since no call over HTTP carries usable authority, the monitor charges here every launch and execution tied to any call made over HTTP in the run (AUTH-1's included); trap invocations go to the call's own check.",
  why: 'An HTTP server that runs commands anyway runs every model command outside the sandbox.',
  typicalMistake: 'Treating a missing launcher over HTTP as "no sandbox needed" and running the command directly.',
  fix: 'Apply the same launcher validation over HTTP as over stdio; with no launcher, refuse.',
  needs: ['http', 'exec', 'opt-in'],
  monitors: 'http',
};

export const httpIgnoresLauncher: CheckDef = {
  id: 'transport/http-ignores-launcher',
  rule: 'HTTP-2',
  level: 'SHOULD',
  title: 'over HTTP, never executes a launcher path sent in _meta',
  summary:
    'A codex/sandbox-launcher that arrives over HTTP cannot have been verified on the server host, and anyone who reaches the endpoint could name any binary: the server does not execute it. Source: CONTRACT.md §3 HTTP-2.',
  observes:
    'Over HTTP, one call carries a codex/sandbox-launcher naming a planted trap executable; the check fails if that trap records any invocation, and passes otherwise only when the stdio control shows the tool runs commands. Whether the command then ran some other way is charged to HTTP-1, so executing the named path is seen here whatever else the server does.',
  why: 'Real Codex never sends a launcher over HTTP, so one that arrives was put there by someone else.',
  typicalMistake: 'Using the same "launcher present, so run it" code path for both transports.',
  fix: 'Ignore codex/sandbox-launcher on HTTP requests (and then fail closed as HTTP-1 requires).',
  needs: ['http', 'exec', 'opt-in'],
};

/** HTTP-1: exactly what Codex sends over HTTP (both state keys, no launcher). */
const httpFailsClosedScenario = singleCheckScenario(
  httpFailsClosed,
  async (ctx) => judgeFailClosed(await ctx.execProbe(ctx.codexEntries()), await ctx.observe(), ctx.control()),
  ['http'],
);

/** HTTP-2: a launcher arrives over HTTP anyway, naming an executable trap. */
const httpIgnoresLauncherScenario = singleCheckScenario(
  httpIgnoresLauncher,
  async (ctx) => {
    const trap = await ctx.plantTrap('launcher-over-http');
    const probe = await ctx.execProbe({ ...ctx.codexEntries(), launcher: { codexExecutable: trap } });
    const observations = await ctx.observe();
    // Whether the command then runs some other way is HTTP-1's question; this one is only
    // about the launcher named over HTTP.
    const fired = observations.trapCalls.filter((t) => t.trap === 'launcher-over-http');
    if (fired.length > 0) {
      return fail('the server executed the codexExecutable that arrived over HTTP', {
        expected: { executed: [] },
        actual: { ...(summarizeOutcome(probe.outcome) as object), executed: fired.map((t) => [trap, ...t.argv].join(' ')) },
      });
    }
    const facts = await ctx.control();
    return facts.works
      ? passOnControl('the codexExecutable that arrived over HTTP was not executed', facts)
      : couldNotRun(`not executing proves nothing: the exec tool did not run a command inside a launch even with everything Codex sends (${facts.detail})`);
  },
  ['http'],
);

export const transportScenarios: Scenario[] = [httpFailsClosedScenario, httpIgnoresLauncherScenario].map((scenario) => takingTurns(scenario));
