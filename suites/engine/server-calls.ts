import { chmod } from 'node:fs/promises';
import { codexSandboxEntries, codexState, type SandboxEntries } from '../../harness/codex-wire.js';
import { isRefusal, type RawOutcome } from '../../harness/codex-session.js';
import { toolArguments, type ExecAdapter } from '../../harness/exec-adapter.js';
import type { ScenarioObservers } from '../../harness/observers.js';
import type { Connection } from '../../harness/target.js';
import type { CheckIndex } from './checks.js';
import type { CallOptions, Finding, IsolatedContext, MonitoredCall } from './model.js';
import { authorityOf, monitor } from './monitor.js';
import { commandText } from './judge.js';
import { NO_OPTIONAL_VALUES } from './tool-calls.js';

/** What one server of a scenario was asked to do, for the sandbox monitor: its calls, its traps, what it found. */
export class MonitorLog {
  readonly calls: MonitoredCall[] = [];
  /** The check that planted each named trap. */
  readonly trapOwners = new Map<string, string>();
  findings: Finding[] = [];
  exec?: ExecAdapter;
  /** How long the scenario's servers stay up after it ends (ScenarioContext.lingerAfter). */
  lingerMs = 0;

  constructor(public observers?: ScenarioObservers) {}

  /** Judges every call against everything the observers recorded: once the servers are gone. */
  async judge(checks: CheckIndex): Promise<Finding[]> {
    if (this.calls.length + this.trapOwners.size === 0) return this.findings;
    this.findings = (await this.findingsSoFar(checks)) ?? this.findings;
    return this.findings;
  }

  /** What the monitor finds in what was recorded so far; undefined without records. */
  async findingsSoFar(checks: CheckIndex): Promise<Finding[] | undefined> {
    const observers = this.observers;
    const observations = await observers?.read().catch(() => undefined);
    if (!observers || !observations) return undefined;
    const { calls, trapOwners } = this;
    return monitor({ calls, observations, launcherName: (path) => observers.launcherName(path), trapOwners, checks });
  }
}

/** Where a scenario's calls go and who watches them. */
export interface CallSite {
  scenario: { id: string; firstCheck: string };
  connection: Connection;
  observers: ScenarioObservers;
  exec: ExecAdapter | undefined;
  /** The server's other exec tools (ExecTools.extra). */
  execTools: readonly ExecAdapter[];
  optedIn: boolean;
  log: MonitorLog;
  callTimeoutMs: number;
  /** Told of a call that should have run and was refused after the host declined or cancelled the server's elicitation (verdict.ts). */
  refusedAfterElicitation?: (detail: string) => void;
  /** When the server was started (epoch ms). */
  startedAt: number;
  /** The run's checks, where the monitor charges what it finds. */
  checks: CheckIndex;
  /** A long-lived server's calls record their time since then (MonitoredCall.atMs), which findings show. */
  timed?: boolean;
  /** Told the length of each slow command sent (CallOptions.runsForMs): the report says the longest. */
  slowCommandSent?: (ms: number) => void;
}

/** The calls a scenario (or one isolated run of it) makes on a connection, each registered with the monitor. */
export function callSurface(site: CallSite): IsolatedContext {
  const { connection, observers, exec, log } = site;
  // Codex's workspace-write state. Its codexLinuxSandboxExe is a helper path as Codex normally sends
  // it, not the launcher: a trap, except that the real codex sandbox (--codex) gets it served.
  const state = codexState('workspace-write', observers.workspaceDir, { linuxSandboxExe: observers.linuxSandboxHelper });
  const monitoredCall = (tool: string, args: unknown, sandbox: SandboxEntries, options: CallOptions) => callMonitored(site, tool, args, sandbox, options);
  return {
    transport: connection.transport,
    session: connection.session,
    handshake: connection.handshake,
    observers,
    exec,
    execTools: site.execTools,
    state,
    serverStartedAt: site.startedAt,
    observe: () => observers.read(),
    codexEntries: (s: unknown = state) => (site.optedIn ? codexSandboxEntries(s, connection.transport, observers.launcherPath) : {}),
    callTool: (tool, args, sandbox, options = {}) => monitoredCall(tool, args, sandbox, options),
    findingsSoFar: async () => (await log.findingsSoFar(site.checks)) ?? [],
    plantTrap: async (name, where = {}, check = site.scenario.firstCheck) => {
      log.trapOwners.set(name, check);
      const path = await observers.trap(name, where);
      if (where.executable === false) await chmod(path, 0o644);
      return path;
    },
    execProbe: async (sandbox, options = {}) => {
      const adapter = options.adapter ?? exec;
      if (!adapter) throw new Error('execProbe called without an exec adapter');
      const nonce = options.nonce ?? observers.newNonce();
      const command = options.command?.argv ?? observers.probeCommand(nonce);
      const optional = options.optional ?? NO_OPTIONAL_VALUES;
      // A working directory set to a subdirectory of the workspace: it exists, as a model's would.
      const subdir: Record<string, string> = JSON.stringify(optional).includes('{{subdir}}') ? { subdir: await observers.workspaceSubdir('src dir') } : {};
      const built = toolArguments(
        adapter,
        { argv: command, script: options.command?.script },
        { vars: { cwd: observers.workspaceDir, ...subdir }, optional, extra: options.extraArguments, language: options.language, shape: options.shape },
      );
      const said = [
        options.command?.form ?? 'simple',
        ...(built.language ? [`in ${built.language}`] : []),
        ...(options.shape ? [`with ${options.shape.label}`] : []),
        ...optionalText(optional),
      ].join(', ');
      const shown = { form: said, text: commandText(built.line, observers.dir) };
      // An optional property may change what runs (a login shell around the argv): FWD-1's exact argv is judged on calls without them.
      const argv = Object.keys(optional).length === 0 ? built.argv : undefined;
      const outcome = await monitoredCall(adapter.tool, built.arguments, sandbox, { ...options, nonce, argv, command: shown });
      return { nonce, command, arguments: built.arguments, outcome, shown };
    },
  };
}

/** The optional values a call set, as a finding names them: "with workdir \"{{subdir}}\"". */
const optionalText = (optional: Readonly<Record<string, unknown>>): string[] =>
  Object.keys(optional).length
    ? [
        `with ${Object.entries(optional)
          .map(([name, value]) => `${name} ${JSON.stringify(value)}`)
          .join(', ')}`,
      ]
    : [];

async function callMonitored(site: CallSite, tool: string, args: unknown, sandbox: SandboxEntries, options: CallOptions): Promise<RawOutcome> {
  const { connection, log } = site;
  const authority = authorityOf(sandbox, connection.transport);
  const call: MonitoredCall = {
    index: log.calls.length + 1,
    scenario: site.scenario.id,
    transport: connection.transport,
    check: options.check ?? site.scenario.firstCheck,
    nonce: options.nonce,
    tool,
    argv: options.argv,
    command: options.command,
    sent: sandbox,
    authority,
    expect: options.expect ?? (authority.kind === 'valid' ? 'run' : 'refuse'),
    concurrent: options.concurrent,
    decoy: options.decoy,
    authorityCheck: options.authorityCheck,
    ...(site.timed ? { atMs: Date.now() - site.startedAt } : {}),
  };
  log.calls.push(call);
  if (options.runsForMs) site.slowCommandSent?.(options.runsForMs);
  call.window = { sent: Date.now() };
  // A slow command takes its own length on top of what any call may take.
  call.outcome = await connection.session.callTool(tool, args, sandbox, site.callTimeoutMs + (options.runsForMs ?? 0));
  call.window.answered = Date.now();
  // A call that should have run, refused once the host said no to the server's question: the
  // server was never given the go-ahead, so the calls it fed say nothing (verdict.ts).
  const unconfirmed = call.outcome.elicitations?.find((e) => e.action !== 'accept');
  if (unconfirmed && call.expect === 'run' && isRefusal(call.outcome)) {
    const question = unconfirmed.message.length > 120 ? `${unconfirmed.message.slice(0, 120)}…` : unconfirmed.message;
    site.refusedAfterElicitation?.(
      `the server asked for confirmation (elicitation/create, ${unconfirmed.mode} mode: ${JSON.stringify(question)}) and the suite answered ${unconfirmed.action}; it then refused ${call.scenario} call #${call.index}`,
    );
  }
  return call.outcome;
}
