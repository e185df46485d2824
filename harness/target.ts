import { delimiter } from 'node:path';
import type { ConnectionPurpose, Transport as TransportKind } from './codex-wire.js';
import { CodexSession, TargetStartError, type Handshake } from './codex-session.js';
import { CodexHttpTransport, startHttpCommand, type StartedHttpServer } from './http-target.js';
import { DEFAULT_MAX_MESSAGE_BYTES, ProcessGroupStdioTransport, type StdioTargetSpec } from './stdio-transport.js';
import { RecordingTransport, Transcript } from './transcript.js';

/** A stdio server, started per scenario. */
export interface StdioTarget {
  kind: 'stdio';
  command: string;
  args: string[];
  /**
   * The server's whole environment, exactly (the PATH trap is put first on its PATH at connect
   * time): as Codex builds it (harness/codex-environment.ts codexServerEnvironment), or, for a
   * diagnosis, another one.
   */
  environment: Record<string, string>;
  cwd?: string;
  /** Largest message accepted from the server, in bytes; a bigger one ends the connection (default DEFAULT_MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
}

/** A Streamable HTTP server: one already running (`url`), or a command the suite starts per scenario. */
export type HttpTarget = (
  | /** `url` may carry `user:password@`: sent as `Authorization: Basic` on every request, never in the URL. */
    { kind: 'http-url'; url: string }
    /** `environment`: the whole environment of the command (its user's: userServerEnvironment), the PATH trap added. */
  | { kind: 'http-command'; command: string; path: string; environment: Record<string, string>; cwd?: string }
) & {
  /** Headers sent on every request besides Codex's own (a Codex config's http_headers, env_http_headers and bearer token). */
  headers?: Record<string, string>;
};

export type Target = StdioTarget | HttpTarget;

export interface Connection {
  session: CodexSession;
  handshake: Handshake;
  transcript: Transcript;
  transport: TransportKind;
  /** Whether the PATH trap is on the server's PATH (not for a server the suite did not start). */
  pathTrapped: boolean;
  close(): Promise<void>;
}

/** The environment a target carries, the PATH trap first on its PATH; nothing else is added. */
export function withPathTrap(environment: Record<string, string>, pathTrapDir: string): Record<string, string> {
  return { ...environment, PATH: [pathTrapDir, environment.PATH].filter(Boolean).join(delimiter) };
}

/** Starts the target and performs Codex's startup; throws TargetStartError with the cause. */
export async function connect(target: Target, pathTrapDir: string, startupTimeoutMs: number, purpose: ConnectionPurpose = 'model'): Promise<Connection> {
  return target.kind === 'stdio' ? connectStdio(target, pathTrapDir, startupTimeoutMs, purpose) : connectHttp(target, pathTrapDir, startupTimeoutMs, purpose);
}

async function handshakeOrThrow(
  session: CodexSession,
  transcript: Transcript,
  startupTimeoutMs: number,
  cleanup: () => Promise<void>,
  ended: () => boolean = () => false,
) {
  try {
    return await session.handshake(startupTimeoutMs);
  } catch (error) {
    const endedBeforeInitialize =
      error instanceof TargetStartError && error.message.startsWith('initialize failed:') && !error.message.includes('the result is not an object') && ended();
    await cleanup();
    // A target that does not speak MCP is not diagnosed further: no environment makes it (harness/codex-session.ts notMcp).
    if (error instanceof TargetStartError)
      throw new TargetStartError(error.message, transcript.stderrTail(), endedBeforeInitialize && !error.notMcp, error.notMcp);
    throw error;
  }
}

async function connectStdio(target: StdioTarget, pathTrapDir: string, startupTimeoutMs: number, purpose: ConnectionPurpose): Promise<Connection> {
  const transcript = new Transcript();
  const spec: StdioTargetSpec = {
    command: target.command,
    args: target.args,
    env: withPathTrap(target.environment, pathTrapDir),
    cwd: target.cwd,
    maxMessageBytes: target.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
  };
  const stdio = new ProcessGroupStdioTransport(spec, transcript);
  const describeExit = () => {
    const exit = stdio.exitInfo;
    return exit ? `server exited (${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`})` : 'server closed its stdout';
  };
  const session = new CodexSession(new RecordingTransport(stdio, transcript), transcript, 'stdio', describeExit, purpose);
  try {
    await session.start();
  } catch (error) {
    throw new TargetStartError(`cannot start ${target.command}: ${(error as Error).message}`, '');
  }
  const handshake = await handshakeOrThrow(
    session,
    transcript,
    startupTimeoutMs,
    () => session.close(),
    () => stdio.exitInfo !== undefined,
  );
  return { session, handshake, transcript, transport: 'stdio', pathTrapped: true, close: () => session.close() };
}

async function connectHttp(target: HttpTarget, pathTrapDir: string, startupTimeoutMs: number, purpose: ConnectionPurpose): Promise<Connection> {
  // Our own module loading is not the target's startup time.
  await CodexHttpTransport.load();
  const transcript = new Transcript();
  const started = Date.now();
  let server: StartedHttpServer | undefined;
  if (target.kind === 'http-command') {
    try {
      server = await startHttpCommand(target.command, target.path, withPathTrap(target.environment, pathTrapDir), target.cwd, startupTimeoutMs, transcript);
    } catch (error) {
      throw new TargetStartError((error as Error).message, transcript.stderrTail());
    }
  }
  const http = await CodexHttpTransport.create(server?.url ?? (target as { url: string }).url, target.headers);
  const session = new CodexSession(new RecordingTransport(http, transcript), transcript, 'http', () => `HTTP connection to ${http.url} closed`, purpose);
  const close = async () => {
    await http.terminateSession().catch(() => undefined);
    await session.close();
    await server?.stop();
  };
  await session.start();
  const handshake = await handshakeOrThrow(session, transcript, Math.max(1, startupTimeoutMs - (Date.now() - started)), close);
  return { session, handshake, transcript, transport: 'http', pathTrapped: Boolean(server), close };
}
