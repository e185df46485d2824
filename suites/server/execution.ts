import { isRefusal } from '../../harness/codex-session.js';
import { shellQuote } from '../../harness/observers.js';
import { probeRunsOf, summarizeOutcome, waitForControl } from '../engine/judge.js';
import { fail, pass, singleCheckScenario, type CheckDef, type ExecProbe, type ProbeOptions, type ScenarioContext } from '../engine/model.js';

export const executesInsideLaunch: CheckDef = {
  id: 'execution/inside-launch',
  rule: 'EXEC-1',
  level: 'MUST',
  title: 'every execution of every command happens inside a launch of the codexExecutable it was sent with',
  summary:
    'Whatever the command looks like (an everyday `echo`, `git status`, a shell line that starts with `true &&`), it runs inside `codex sandbox` under the state of its own call: never before, after or beside the sandboxed run, never directly because it looks harmless. This check sends commands of several shapes; the sandbox monitor also charges to it every execution, in any scenario of the run, that happened outside a launch. Source: CONTRACT.md §3 EXEC-1.',
  observes:
    "Eight calls on one server, one per command shape (echo, git status, cat, ls -la, pwd, true, sh -c, git then the command), run by the probe installed under everyday names or as a shell line; each execution of the probe appends its own record carrying the call's nonce and the launch id the fake launcher put in its environment. The scenario fails a call that reported success with nothing executed; the monitor, after the servers stop, charges here every execution in any scenario of the run that belongs to a call allowed to run but carries no launch id, or one no recorded launch has, and any execution outside a launch that no call asked for, so running a command before, after or beside its launch shows even when the launch itself is correct.",
  why: 'A command that runs outside the sandbox even once, or only when it looks harmless, is a command the model ran with the full rights of the server.',
  typicalMistake: 'Running "read-only" commands directly for speed, or running the command once unsandboxed to "check" it before the real launch.',
  fix: 'Route every execution through `<codexExecutable> sandbox --sandbox-state-json <state> -- …`, with no allow-list of commands that skip it.',
  needs: ['exec', 'opt-in'],
  monitors: 'exec',
};

/** The command shapes: an everyday name or a shell line that begins with an everyday command, then the probe. */
export async function commandShapes(
  ctx: Pick<ScenarioContext, 'observers'>,
): Promise<{ label: string; command: (nonce: string) => NonNullable<ProbeOptions['command']> }[]> {
  const o = ctx.observers;
  const [echo, git, cat, ls, pwd, yes] = await Promise.all((['echo', 'git', 'cat', 'ls', 'pwd', 'true'] as const).map((name) => o.everydayProbe(name)));
  const probe = shellQuote(o.probePath);
  const q = (path: string) => shellQuote(path);
  return [
    { label: 'echo <text>', command: (n) => ({ argv: [echo!, n, 'two words'], script: `${q(echo!)} ${n} 'two words'` }) },
    { label: 'git status', command: (n) => ({ argv: [git!, 'status', '--short', n], script: `${q(git!)} status --short ${n}` }) },
    { label: 'cat <file>', command: (n) => ({ argv: [cat!, n], script: `cat /dev/null; ${probe} ${n}` }) },
    { label: 'ls -la', command: (n) => ({ argv: [ls!, '-la', n], script: `ls >/dev/null 2>&1; ${q(ls!)} -la ${n}` }) },
    { label: 'pwd', command: (n) => ({ argv: [pwd!, n], script: `pwd >/dev/null && ${probe} ${n}` }) },
    { label: 'true', command: (n) => ({ argv: [yes!, n], script: `true && ${probe} ${n}` }) },
    { label: 'sh -c "echo …; <command>"', command: (n) => ({ argv: ['/bin/sh', '-c', `echo ready; ${probe} ${n}`], script: `echo ready && ${probe} ${n}` }) },
    {
      label: 'git then the command',
      command: (n) => ({ argv: ['/bin/sh', '-c', `git --version >/dev/null 2>&1; ${probe} ${n}`], script: `git --version >/dev/null 2>&1; ${probe} ${n}` }),
    },
  ];
}

/** Every shape, one call each, on one server: each must execute inside a launch (the monitor judges where). */
const commandShapesScenario = singleCheckScenario(executesInsideLaunch, async (ctx) => {
  const probes: { label: string; probe: ExecProbe }[] = [];
  for (const shape of await commandShapes(ctx)) {
    const nonce = ctx.observers.newNonce();
    probes.push({ label: shape.label, probe: await ctx.execProbe(ctx.codexEntries(), { nonce, command: shape.command(nonce) }) });
  }
  const observations = await ctx.observe();
  const inLaunch = (nonce: string) => probeRunsOf(observations, nonce).some((run) => observations.launches.some((l) => l.id === run.launchId));
  // A command that ran outside a launch is the monitor's finding; here: success with no execution at all.
  const silent = probes.filter(({ probe }) => probeRunsOf(observations, probe.nonce).length === 0 && !isRefusal(probe.outcome));
  const ran = probes.filter(({ probe }) => inLaunch(probe.nonce));
  if (ran.length === 0) {
    const blocked = await waitForControl(ctx, 'no command of any shape ran inside a launch');
    if (blocked) return blocked;
  }
  if (silent.length > 0) {
    return fail(`${silent.length} command shape${silent.length === 1 ? '' : 's'} reported success but never executed`, {
      expected: 'each command executed inside a launch of the codexExecutable sent (or the call refused)',
      actual: silent.map(({ label, probe }) => ({
        shape: label,
        response: summarizeOutcome(probe.outcome),
        executions: probeRunsOf(observations, probe.nonce).map((r) => r.launchId || '(outside any launch)'),
      })),
    });
  }
  const refused = probes.filter(({ probe }) => isRefusal(probe.outcome) && !inLaunch(probe.nonce)).map(({ label }) => label);
  return pass(refused.length ? `the server refused these shapes: ${refused.join(', ')}` : undefined);
});

export const executionScenarios = [commandShapesScenario];
