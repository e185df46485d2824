import { delimiter } from 'node:path';
import type { Transport as TransportKind } from './codex-wire.js';
import { HostSession, TargetStartError, type Handshake } from './host-session.js';
import { ProcessGroupStdioTransport, type StdioTargetSpec } from './stdio-transport.js';
import { RecordingTransport, Transcript } from './transcript.js';

/** What to test: a stdio server started per scenario. */
export interface StdioTarget {
  kind: 'stdio';
  command: string;
  args: string[];
  /** Extra environment on top of the full environment of the CLI. */
  env: Record<string, string>;
  cwd?: string;
}

export type Target = StdioTarget;

export interface Connection {
  session: HostSession;
  handshake: Handshake;
  transcript: Transcript;
  transport: TransportKind;
}

/** The server's environment: ours in full, the operator's additions, the PATH trap first on PATH. */
export function serverEnvironment(target: StdioTarget, pathTrapDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...target.env };
  env.PATH = [pathTrapDir, env.PATH].filter(Boolean).join(delimiter);
  return env;
}

/** Starts the target and performs Codex's startup; throws TargetStartError with the cause. */
export async function connect(target: Target, pathTrapDir: string, startupTimeoutMs: number): Promise<Connection> {
  const transcript = new Transcript();
  const spec: StdioTargetSpec = { command: target.command, args: target.args, env: serverEnvironment(target, pathTrapDir), cwd: target.cwd };
  const stdio = new ProcessGroupStdioTransport(spec, transcript);
  const describeExit = () => {
    const exit = stdio.exitInfo;
    return exit ? `server exited (${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`})` : 'server closed its stdout';
  };
  const session = new HostSession(new RecordingTransport(stdio, transcript), transcript, 'stdio', describeExit);
  try {
    await session.start();
  } catch (error) {
    throw new TargetStartError(`cannot start ${target.command}: ${(error as Error).message}`, '');
  }
  try {
    const handshake = await session.handshake(startupTimeoutMs);
    return { session, handshake, transcript, transport: 'stdio' };
  } catch (error) {
    await session.close();
    if (error instanceof TargetStartError) throw new TargetStartError(error.message, transcript.stderrTail());
    throw error;
  }
}
