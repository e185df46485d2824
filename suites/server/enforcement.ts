import { readFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toolArguments } from '../../harness/exec-adapter.js';
import { NO_OPTIONAL_VALUES } from '../engine/tool-calls.js';
import type { RawOutcome } from '../../harness/codex-session.js';
import type { EnforcementRun } from '../../harness/observers.js';
import { makeOutsideDir, scratchBaseOutsideTmp } from '../../harness/real-codex.js';
import { launchesOf, stateInArgv, summarizeOutcome } from '../engine/judge.js';
import {
  couldNotRun,
  fail,
  notApplicable,
  pass,
  singleCheckScenario,
  type CheckDef,
  type Scenario,
  type ScenarioContext,
  type Verdict,
} from '../engine/model.js';
import { isObject } from '../../harness/json.js';

/**
 * The enforcement tier (`--codex PATH`): the fake launcher still records every launch, then hands
 * it to the real `codex sandbox`, so what the server forwarded is really enforced. These checks
 * look at the effect: what the command could and could not do inside the sandbox it got. A server
 * that widens the state (say, to {"type":"disabled"}) is caught here by what its command manages
 * to do, whatever the forwarding checks could or could not see.
 */

const NEEDS: CheckDef['needs'] = ['exec', 'opt-in', 'codex'];
/** The status the exit probe ends with: unusual enough not to be confused with a sandbox error. */
export const PROBE_EXIT_STATUS = 43;

export const writesInsideWorkspace: CheckDef = {
  id: 'enforcement/writes-inside-workspace',
  rule: 'FWD-2',
  level: 'MUST',
  title: 'in the real sandbox, the command can write inside the writable roots',
  summary:
    "Run through the server and the real codex sandbox, the command can create a file in the workspace, which the state sent makes writable (Codex's workspace-write state: an absolute path write entry for the workspace). This is FWD-2 seen from the other side: the write grants Codex sent arrive intact, so the sandbox allows what Codex meant to allow. It is also the positive control for the escape checks: a sandbox that refuses everything would pass those trivially. Source: CONTRACT.md §3 FWD-2 and §5.",
  observes:
    "Through the server, the fake launcher (which records the launch) and the real codex sandbox, the enforcement probe writes a file named after its nonce in the workspace, the state's sandboxCwd; the suite reads that file back on the host and passes only when it holds the nonce. The call is registered with the monitor, so the same launch's argv, state and executable are judged for FWD-1, FWD-2 and LAUNCH-1 as well.",
  why: 'A server that narrows the policy (forwards a read-only state, drops entries, points the command at another cwd) breaks every agent task that edits files, and hides that the policy it enforces is not the one Codex chose.',
  typicalMistake: 'Forwarding a hand-built "safe" state (read-only, or without the cwd entry) instead of the one received.',
  fix: 'Forward the state from _meta exactly as received, and let codex sandbox run the command in the sandboxCwd it names.',
  needs: NEEDS,
};

export const noWritesOutside: CheckDef = {
  id: 'enforcement/no-writes-outside',
  rule: 'FWD-2',
  level: 'MUST',
  title: 'in the real sandbox, the command cannot write outside the writable roots',
  summary:
    'Run through the server and the real codex sandbox, the command tries to create a file in a directory the suite made outside the workspace and outside /tmp and $TMPDIR (which Codex\'s workspace-write state makes writable too); under the state sent the write must fail (codex answers "Read-only file system"). A server that forwards a widened state, or runs the command outside codex sandbox, lets it through: FWD-2 violated in effect. Source: CONTRACT.md §3 FWD-2 (and LAUNCH-1/LAUNCH-2 for a command that never reaches the sandbox) and §5.',
  observes:
    "The probe tries to create a file in a directory the suite made outside the workspace and outside /tmp; the file existing on the host afterwards fails the check, otherwise the probe's own report (marker file or output line) must say the write was refused. The effect is what is judged, so a widened state or a run outside the sandbox shows here whatever the argv looked like.",
  why: 'This is what the sandbox exists for: a model command must not modify files Codex did not make writable.',
  typicalMistake: 'Replacing permissionProfile with {"type":"disabled"} (danger-full-access) "to avoid sandbox errors", or adding write entries.',
  fix: 'Never edit the state: forward it unchanged to codexExecutable sandbox --sandbox-state-json <state> -- <command>.',
  needs: NEEDS,
};

export const noNetwork: CheckDef = {
  id: 'enforcement/no-network',
  rule: 'FWD-2',
  level: 'MUST',
  title: 'in the real sandbox, the command has no network when the state restricts it',
  summary:
    'The state sent has network "restricted". Run through the server and the real codex sandbox, the command tries to connect to a TCP listener the suite holds on 127.0.0.1; the connection must fail (codex denies the socket) and the listener must see nothing. A widened state that enables network, or a command run outside codex sandbox, reaches it: FWD-2 violated in effect. Source: CONTRACT.md §3 FWD-2 and §5.',
  observes:
    "The suite listens on a TCP port on 127.0.0.1 and the probe tries to connect to it; any connection the listener accepts, or a probe report of success, fails the check, and a report of refusal passes. Not applicable when the scenario's state does not restrict the network.",
  why: 'Network access lets a command exfiltrate the workspace or fetch and run code; Codex decides when it is allowed, not the server.',
  typicalMistake: 'Setting permissionProfile.network to "enabled" (or dropping the profile) so that package installs work.',
  fix: 'Forward the state unchanged; if the user wants network, that is a Codex setting that arrives in the state.',
  needs: NEEDS,
};

export const exitStatus: CheckDef = {
  id: 'enforcement/exit-status',
  rule: 'FWD-1',
  level: 'MUST',
  title: 'a failing command is reported as failing',
  summary: `Run through the server and the real codex sandbox, the command exits with status ${PROBE_EXIT_STATUS}; codex sandbox passes that status through, so a server that runs the command as FWD-1 prescribes sees it, and its tool result must report the failure (isError: true, or the status in the result). Source: CONTRACT.md §3 FWD-1 and §5.`,
  observes:
    "The probe exits with status 43 inside the real sandbox; the tool result must be a JSON-RPC error, have isError: true, or name the status 43 after exit, status or code in text other than the probe's own output line.",
  why: 'The model decides what to do next from the result; a failed command reported as a success leads it astray, and hides sandbox denials from it.',
  typicalMistake: 'Returning only stdout, or isError: false whenever the launcher could be started.',
  fix: 'Wait for the launcher process and report its exit status: isError: true when it is not 0, with the status in the text.',
  needs: NEEDS,
};

/** One run of the enforcement probe through the server, and everything seen of it. */
interface EnforcementProbe {
  nonce: string;
  command: string[];
  outcome: RawOutcome;
  /** The probe's own account: its marker, else its stdout line in the tool result. */
  report: EnforcementRun | undefined;
  /** The argv of each launch that carried the nonce. */
  launches: string[][];
}

const resultText = (outcome: RawOutcome): string => {
  if (outcome.kind !== 'result' || !isObject(outcome.result)) return '';
  const content = Array.isArray(outcome.result.content) ? outcome.result.content : [];
  return content.map((item) => (isObject(item) && typeof item.text === 'string' ? item.text : '')).join('\n');
};

const PROBE_LINE = 'mcp-sandbox-conformance enforce ';

/** The probe's stdout line, when its marker could not be written but the server returned stdout. */
function reportFromText(outcome: RawOutcome, nonce: string): EnforcementRun | undefined {
  for (const line of resultText(outcome).split('\n')) {
    const m = line.match(/mcp-sandbox-conformance enforce nonce=(\S+) action=(\S*) result=(\S*) launch=(\S*) detail=(.*)$/);
    if (m && m[1] === nonce) {
      return { nonce, action: m[2]!, result: m[3]!, launchId: m[4] === 'none' ? '' : m[4]!, detail: m[5]!, cwd: '', source: 'stdout' };
    }
  }
  return undefined;
}

async function runProbe(ctx: ScenarioContext, nonce: string, action: string[]): Promise<EnforcementProbe> {
  if (!ctx.exec) throw new Error('enforcement probe without an exec adapter');
  const command = [await ctx.observers.enforcementProbe(), nonce, ...action];
  const built = toolArguments(ctx.exec, { argv: command }, { optional: NO_OPTIONAL_VALUES });
  const outcome = await ctx.callTool(ctx.exec.tool, built.arguments, ctx.codexEntries(), { nonce, argv: built.argv });
  const observations = await ctx.observe();
  const report = (await ctx.observers.readEnforcement(nonce)) ?? reportFromText(outcome, nonce);
  return { nonce, command, outcome, report, launches: launchesOf(observations, nonce).map((l) => l.argv) };
}

/** What the server did with the call, for `actual`: the tool result, what it forwarded, what the probe said. */
function account(probe: EnforcementProbe, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const forwarded = probe.launches.map((argv) => {
    const state = stateInArgv(argv);
    return isObject(state) ? { permissionProfile: state.permissionProfile } : { argv };
  });
  return {
    ...(summarizeOutcome(probe.outcome) as object),
    ...extra,
    forwardedToCodex: probe.launches.length ? forwarded : 'no launch of the given codexExecutable carried the command',
    probe: probe.report
      ? { result: probe.report.result, detail: probe.report.detail, ranUnder: probe.report.launchId || '(no launcher)' }
      : 'left no marker and no output line',
  };
}

/** The verdict when the probe left no trace: nothing to judge, and why. */
function noTrace(probe: EnforcementProbe, what: string): Verdict {
  if (probe.outcome.kind === 'timeout' || probe.outcome.kind === 'closed') {
    return { status: 'error', message: `the call got no answer: ${JSON.stringify(summarizeOutcome(probe.outcome))}` };
  }
  const result = JSON.stringify(account(probe));
  if (probe.launches.length === 0) {
    return couldNotRun(
      `the server did not launch the probe through the given codexExecutable, so ${what} is unknown (see forwarding/codex-call checks): ${result}`,
    );
  }
  return couldNotRun(`the probe left no marker and no output line, so ${what} is unknown (did the real codex sandbox refuse the state?): ${result}`);
}

const readText = async (path: string): Promise<string | undefined> => {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
};

function workspaceOf(ctx: ScenarioContext): string {
  const cwd = ctx.state.sandboxCwd;
  if (typeof cwd === 'string' && cwd.startsWith('file:')) return fileURLToPath(cwd);
  return ctx.observers.workspaceDir;
}

async function judgeWritesInside(ctx: ScenarioContext): Promise<Verdict> {
  const nonce = ctx.observers.newNonce();
  const target = join(workspaceOf(ctx), `enforce-inside-${nonce}`);
  const probe = await runProbe(ctx, nonce, ['write', target]);
  const written = await readText(target);
  if (written?.trim() === probe.nonce) return pass(`the probe wrote ${target}`);
  if (!probe.report) return noTrace(probe, 'whether it can write in the workspace');
  const expected = { fileInWorkspace: target, written: true };
  if (probe.report.result === 'done') {
    return fail('the probe reported its write inside the workspace as done, yet the file is not in the workspace', {
      expected,
      actual: account(probe, { written: false }),
    });
  }
  return fail(`the probe could not write inside the workspace, which the state makes writable: ${probe.report.detail || probe.report.result}`, {
    expected,
    actual: account(probe, { written: false }),
  });
}

async function judgeNoWritesOutside(ctx: ScenarioContext): Promise<Verdict> {
  // Codex's workspace-write state makes /tmp and $TMPDIR writable: a target there proves nothing.
  if (scratchBaseOutsideTmp() === undefined)
    return couldNotRun('no writable directory outside /tmp and the temp dir (tried /var/tmp and the home directory) to aim the write at');
  const outside = makeOutsideDir(ctx.observers.dir);
  try {
    const nonce = ctx.observers.newNonce();
    const target = join(outside.path, `enforce-outside-${nonce}`);
    const probe = await runProbe(ctx, nonce, ['write', target]);
    const written = await readText(target);
    const expected = { fileOutsideWritableRoots: target, written: false, error: 'Read-only file system' };
    if (written !== undefined) {
      return fail('the command wrote outside the writable roots of the state Codex sent: the sandbox was widened or bypassed', {
        expected,
        actual: account(probe, { written: true }),
      });
    }
    if (!probe.report) return noTrace(probe, 'whether it can write outside the workspace');
    if (probe.report.result === 'refused') return pass(`refused: ${probe.report.detail}`);
    return {
      status: 'error',
      message: `the probe reported ${JSON.stringify(probe.report.result)} but ${target} does not exist: ${JSON.stringify(account(probe))}`,
    };
  } finally {
    outside.remove();
  }
}

async function listen(): Promise<{ server: Server; port: number; connections: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return { server, port: (server.address() as AddressInfo).port, connections: () => count };
}

async function judgeNoNetwork(ctx: ScenarioContext): Promise<Verdict> {
  const profile = ctx.state.permissionProfile;
  if (!isObject(profile) || profile.network !== 'restricted') return notApplicable('the state sent does not restrict the network');
  const listener = await listen();
  try {
    const probe = await runProbe(ctx, ctx.observers.newNonce(), ['connect', '127.0.0.1', String(listener.port)]);
    // A connection the listener accepted is the ground truth; let it land before counting.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const expected = { connectionsToListener: 0, probe: 'connection refused (codex denies the socket)' };
    if (listener.connections() > 0 || probe.report?.result === 'done') {
      return fail(`the command reached a TCP listener on 127.0.0.1:${listener.port} although the state restricts the network`, {
        expected,
        actual: account(probe, { connectionsToListener: listener.connections() }),
      });
    }
    if (!probe.report) return noTrace(probe, 'whether it has network');
    if (probe.report.result === 'refused') return pass(`refused: ${probe.report.detail}`);
    return { status: 'error', message: `unexpected probe report: ${JSON.stringify(account(probe))}` };
  } finally {
    await new Promise((resolve) => listener.server.close(resolve));
  }
}

/** The tool result says the command failed: isError, a JSON-RPC error, or the status in its text. */
function reportsFailure(outcome: RawOutcome): { reported: boolean; how: string } {
  if (outcome.kind === 'error') return { reported: true, how: 'a JSON-RPC error' };
  if (outcome.kind !== 'result') return { reported: false, how: outcome.kind };
  if (isObject(outcome.result) && outcome.result.isError === true) return { reported: true, how: 'isError: true' };
  // The probe's own line names the status too: only the server's words count.
  const text = resultText(outcome)
    .split('\n')
    .filter((line) => !line.includes(PROBE_LINE))
    .join('\n');
  const status = new RegExp(`\\b(exit|exited|status|code)\\b[^\\n]{0,24}\\b${PROBE_EXIT_STATUS}\\b`, 'i');
  if (status.test(text)) return { reported: true, how: `the status ${PROBE_EXIT_STATUS} in the text (but isError is not true)` };
  return { reported: false, how: 'isError not true and no exit status in the text' };
}

async function judgeExitStatus(ctx: ScenarioContext): Promise<Verdict> {
  const probe = await runProbe(ctx, ctx.observers.newNonce(), ['exit', String(PROBE_EXIT_STATUS)]);
  if (!probe.report) return noTrace(probe, 'how its exit status comes back');
  const { reported, how } = reportsFailure(probe.outcome);
  if (probe.outcome.kind === 'timeout' || probe.outcome.kind === 'closed') {
    return { status: 'error', message: `the call got no answer: ${JSON.stringify(summarizeOutcome(probe.outcome))}` };
  }
  if (reported) return pass(`reported through ${how}`);
  return fail(`the command exited with status ${PROBE_EXIT_STATUS}, but the tool result reports success`, {
    expected: { isError: true, text: `mentions the exit status ${PROBE_EXIT_STATUS}` },
    actual: account(probe),
  });
}

export const enforcementScenarios: Scenario[] = [
  singleCheckScenario(writesInsideWorkspace, judgeWritesInside),
  singleCheckScenario(noWritesOutside, judgeNoWritesOutside),
  singleCheckScenario(noNetwork, judgeNoNetwork),
  singleCheckScenario(exitStatus, judgeExitStatus),
];
