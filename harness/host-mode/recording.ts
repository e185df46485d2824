import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Transport } from '../codex-wire.js';
import { fixturesDir } from '../paths.js';
import { spawnTracked } from '../process-registry.js';
import type { McpServerConfig } from './codex-config.js';

/** The recording MCP server fixture (fixtures/servers/recording.mjs): what it offers. */
export const RECORDING_SERVER = join(fixturesDir(), 'servers', 'recording.mjs');
export const RECORDING_TOOL = 'record';
export const RECORDING_RESOURCE = 'recording://note';

/** Which opt-in the recording server advertises under `capabilities.experimental`. */
export type Capability = 'current' | 'deprecated' | 'both' | 'none';

/** One line of the recording server's log. */
export interface RecordedMessage {
  t: number;
  pid: number;
  transport: Transport;
  /** Per server process: one per stdio process, one per MCP session over HTTP. */
  connection: number;
  message: { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown; [key: string]: unknown };
}

export function readRecording(logFile: string): RecordedMessage[] {
  if (!existsSync(logFile)) return [];
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as RecordedMessage];
      } catch {
        return []; // a line cut short by a kill: nothing to judge
      }
    });
}

/** One HTTP request a recording server got (written to `<log>.http`), as a host sent it. */
export interface HttpRequestRecord {
  t: number;
  http: string;
  /** user-agent, accept, content-type, mcp-protocol-version, when sent. */
  headers: Record<string, string>;
  /** Whether it carried an Mcp-Session-Id. */
  session: boolean;
  /** The JSON-RPC methods in its body ("response" for a response); none for a GET or DELETE. */
  rpc: string[];
}

export function readHttpRequests(logFile: string): HttpRequestRecord[] {
  return readRecording(`${logFile}.http`) as unknown as HttpRequestRecord[];
}

/** Requests (and notifications) of one method, in arrival order. */
export const withMethod = (records: RecordedMessage[], method: string): RecordedMessage[] => records.filter((r) => r.message.method === method);

/** A running recording server, as the host's config names it. */
export interface RecordingServer {
  config: McpServerConfig;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * A recording server for one host run. Over stdio the host starts it from its config (command +
 * args); over HTTP host mode starts it here, on a free loopback port, in its own process group.
 */
export async function startRecordingServer(transport: Transport, logFile: string, capability: Capability, timeoutMs = 15_000): Promise<RecordingServer> {
  const args = [RECORDING_SERVER, '--log', logFile, '--capability', capability];
  if (transport === 'stdio') {
    return { config: { transport: 'stdio', command: process.execPath, args, env: {} }, logFile, stop: async () => undefined };
  }
  // Port 0: the server takes a free port as it listens and prints it (a port picked here first
  // could be taken by another process before the server listens: EADDRINUSE under load).
  const tracked = spawnTracked(process.execPath, [...args, '--http', '--port', '0', '--host', '127.0.0.1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const child = tracked.child;
  const stop = () => tracked.stop();
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the recording server did not listen within ${timeoutMs} ms: ${stderr.trim()}`)), timeoutMs);
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the recording server exited (${signal ?? code}) before listening: ${stderr.trim()}`));
    });
  }).catch(async (error: Error) => {
    await stop();
    throw error;
  });
  return { config: { transport: 'http', url }, logFile, stop };
}
