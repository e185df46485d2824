import { isRefusal } from '../../harness/codex-session.js';
import { commandText, probeRunsOf, summarizeOutcome, waitForControl } from '../engine/judge.js';
import { fail, pass, singleCheckScenario, type CheckDef, type ExecProbe, takingTurns } from '../engine/model.js';
import { everyExecToolScenario } from './exec-tools.js';
import { grammarProbe, REPRESENTATIVE } from './commands.js';

export const executesInsideLaunch: CheckDef = {
  id: 'execution/inside-launch',
  rule: 'EXEC-1',
  level: 'MUST',
  title: 'every execution of every command happens inside a launch of the codexExecutable it was sent with',
  summary:
    "Whatever the command looks like and however long it is (an everyday `git status`, a pipeline, `&&` and `||`, redirections, `$(…)` and backticks, a background job, `bash -lc` and `sh -c` wrappers as Codex's own shell tool sends (operators inside their quotes too), a multi-line script or a heredoc, a leading `cd` into the workspace, quotes of every kind, non-ASCII text, globs, `$VAR` expansions, argv with many, empty or multi-line elements; from about 100 bytes to about 100 KB; a command that works for seconds, or writes output for that long, as builds and test runs do), it runs inside `codex sandbox` under the state of its own call: never before, after or beside the sandboxed run, never directly because it looks harmless, short or long, never again elsewhere because it ran long (a watchdog that reruns it without the sandbox). A command killed at the server's timeout and reported as failed breaks no rule. A server may refuse a command it finds too large (an error, nothing run). The sandbox monitor also charges to this check every execution, in any scenario of the run, that happened outside a launch. Source: CONTRACT.md §3 EXEC-1.",
  observes:
    "One call per command of a representative set of the command grammar (suites/server/commands.ts: every form at about 100 bytes, sizes of over 1 KB, over 8 KB and about 100 KB, and two commands that take 2.5 s, sent first so that they overlap the rest), four at a time on one server, with the same authority; the resident server also sends two long ones (6 s, unless the run asks for longer) beside its idle gaps, each running the probe as it starts and as it ends, so that a rerun elsewhere shows the moment it starts, and keeps its server until a long command answered early could have ended; an argv tool gets shell forms as `/bin/sh -c <script>` (the wrappers as `bash -lc`/`sh -c`, by bare name), a shell-string tool the script itself. Every command runs the probe under an everyday name (echo, git, cat, ls, pwd, true); each execution of the probe appends its own record carrying the call's nonce and the launch id the fake launcher put in its environment. The scenario fails a call that reported success with nothing executed (a refusal passes); the monitor, after the servers stop, charges here every execution in any scenario of the run that belongs to a call allowed to run but carries no launch id, or one no recorded launch has, and any execution outside a launch that no call asked for, so running a command before, after or beside its launch shows even when the launch itself is correct. Each finding names the command's form and its text (trimmed, control characters escaped).",
  why: 'A command that runs outside the sandbox even once, or only when it looks harmless, is a command the model ran with the full rights of the server.',
  typicalMistake: 'Running "read-only" commands directly for speed, or running the command once unsandboxed to "check" it before the real launch.',
  fix: 'Route every execution through `<codexExecutable> sandbox --sandbox-state-json <state> -- …`, with no allow-list of commands that skip it.',
  needs: ['exec', 'opt-in'],
  monitors: 'exec',
};

/** Calls in flight at once in this scenario (same authority): the grammar's commands cost about what the old eight shapes did. */
const IN_FLIGHT = 4;

/** The representative set of the command grammar, one call each, on one server: each must execute inside a launch (the monitor judges where). */
const commandShapesScenario = singleCheckScenario(executesInsideLaunch, async (ctx) => {
  const probes: { label: string; text: string; probe: ExecProbe }[] = [];
  const queue = [...REPRESENTATIVE];
  const worker = async () => {
    for (let entry = queue.shift(); entry; entry = queue.shift()) {
      const { form, script, probe } = await grammarProbe(ctx, entry, ctx.codexEntries());
      probes.push({ label: form, text: commandText(script, ctx.observers.dir), probe });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const observations = await ctx.observe();
  const inLaunch = (nonce: string) => probeRunsOf(observations, nonce).some((run) => observations.launches.some((l) => l.id === run.launchId));
  // A command that ran outside a launch is the monitor's finding; here: success with no execution at all.
  const none = ({ probe }: (typeof probes)[number]) => probeRunsOf(observations, probe.nonce).length === 0;
  const silent = probes.filter((p) => none(p) && p.probe.outcome.kind === 'result' && !isRefusal(p.probe.outcome));
  // No answer and nothing ran: that command was not judged (never a pass).
  const unanswered = probes.filter((p) => none(p) && p.probe.outcome.kind !== 'result' && p.probe.outcome.kind !== 'error');
  const ran = probes.filter(({ probe }) => inLaunch(probe.nonce));
  if (ran.length === 0) {
    const blocked = await waitForControl(ctx, 'no command of any form ran inside a launch');
    if (blocked) return blocked;
  }
  if (silent.length > 0) {
    return fail(
      `${silent.length} command${silent.length === 1 ? '' : 's'} reported success but never executed: ${silent.map(({ label }) => label).join(', ')}`,
      {
        expected: 'each command executed inside a launch of the codexExecutable sent (or the call refused)',
        actual: silent.map(({ label, text, probe }) => ({
          form: label,
          command: text,
          response: summarizeOutcome(probe.outcome),
          executions: probeRunsOf(observations, probe.nonce).map((r) => r.launchId || '(outside any launch)'),
        })),
      },
    );
  }
  if (unanswered.length > 0) {
    return {
      status: 'error',
      message: `${unanswered.length} command${unanswered.length === 1 ? '' : 's'} got no answer and did not run, so ${unanswered.length === 1 ? 'it was' : 'they were'} not judged: ${unanswered.map(({ label, text }) => `${label} ${JSON.stringify(text)}`).join('; ')}`,
    };
  }
  const refused = probes.filter(({ probe }) => isRefusal(probe.outcome) && !inLaunch(probe.nonce)).map(({ label }) => label);
  return pass(
    `${probes.length - refused.length} of ${probes.length} commands ran inside a launch${refused.length ? `; the server refused: ${refused.join('; ')}` : ''}`,
  );
});

// Every exec tool is also sent calls without authority (each must fail closed): its turn comes last.
export const executionScenarios = [takingTurns(commandShapesScenario), takingTurns(everyExecToolScenario, { last: true })];
