import { sanitizeText } from './sanitize.js';
import { accessSync, constants, statSync } from 'node:fs';
import { UsageError } from './config.js';
import { resolve } from 'node:path';
import { isObject } from '../harness/json.js';
import type { StdioTarget } from '../harness/target.js';
import type { RunReport } from '../suites/engine/runner.js';

/** Why the target cannot even be started: exit code 4. */
export class TargetNotFound extends Error {}

/** A stdio target, and the interpreter the CLI chose for a server file (said in the report's header). */
export type CliStdioTarget = StdioTarget & { runWith?: string };

/**
 * `<server> [args...]`: a .js/.mjs/.cjs file runs with this node; a .py file that is not executable
 * with `python3` (found on the server's PATH), an executable one by its own `#!` line; a path must
 * be an executable file; a bare name is looked up on PATH when spawned. `environment` is the
 * server's whole environment (as Codex builds it: harness/codex-environment.ts).
 */
export function stdioTarget(command: string[], environment: Record<string, string>, cwd: string | undefined): CliStdioTarget {
  const [server, ...args] = command;
  if (!server) throw new TargetNotFound('no server given');
  const base = process.cwd();
  if (/\.(m|c)?js$/.test(server)) {
    const file = resolve(base, server);
    assertFile(file, server, false);
    return { kind: 'stdio', command: process.execPath, args: [file, ...args], environment, cwd, runWith: 'node' };
  }
  if (/\.py$/.test(server) && !isExecutable(resolve(base, server))) {
    const file = resolve(base, server);
    assertFile(file, server, false);
    return { kind: 'stdio', command: 'python3', args: [file, ...args], environment, cwd, runWith: 'python3 (the file is not executable)' };
  }
  if (server.includes('/')) {
    const file = resolve(base, server);
    assertFile(file, server, true);
    return { kind: 'stdio', command: file, args, environment, cwd };
  }
  return { kind: 'stdio', command: server, args, environment, cwd };
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function assertFile(file: string, given: string, executable: boolean): void {
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch {
    throw new TargetNotFound(`server not found: ${given} (no such file: ${file})`);
  }
  if (!isFile) throw new TargetNotFound(`server is not a file: ${given}`);
  if (executable && !isExecutable(file)) throw new TargetNotFound(`server is not executable: ${given} (chmod +x it, or run it with its interpreter after --)`);
}

/** The suite only ever talks to loopback: a non-loopback URL is a usage error. Credentials (`user:pw@`) become an Authorization header (harness/http-target.ts). */
export function assertLoopbackUrl(text: string, label = '--url'): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`${label} is not a URL: ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${label} must be http(s): ${text}`);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
    throw new UsageError(`${label} must be a loopback address (127.0.0.1, localhost or [::1]), not ${url.hostname}`);
  }
}

/** --codex PATH: an absolute path to an executable real Codex CLI. */
export function realCodexPath(given: string): string {
  const file = resolve(given);
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
    accessSync(file, constants.X_OK);
  } catch {
    throw new UsageError(`--codex ${given}: not an executable file`);
  }
  if (!isFile) throw new UsageError(`--codex ${given}: a directory, not the Codex CLI executable (give the path of the codex binary)`);
  return file;
}

/**
 * `--exec-tool NAME` that no tools/list of the run listed: a mistake in the command line, not a
 * finding about the server. Read from the transcripts (every page of every tools/list the run saw);
 * undefined when the tool was listed, or when no tools/list answer was seen at all.
 */
export function unlistedExecTool(tool: string, report: RunReport): string | undefined {
  const requests = new Set<unknown>();
  const listed = new Set<string>();
  let answered = false;
  for (const scenario of report.scenarios) {
    for (const entry of scenario.transcript) {
      if (!('message' in entry) || !isObject(entry.message)) continue;
      const message = entry.message;
      if (entry.dir === 'host->server' && message.method === 'tools/list') requests.add(message.id);
      if (entry.dir === 'server->host' && requests.has(message.id) && isObject(message.result) && Array.isArray(message.result.tools)) {
        answered = true;
        for (const t of message.result.tools) if (isObject(t) && typeof t.name === 'string') listed.add(t.name);
      }
    }
    requests.clear();
  }
  if (!answered || listed.has(tool)) return undefined;
  // Server text: one neutralising and redacting pass, the one every reporter uses.
  const quote = (n: string) => sanitizeText(JSON.stringify(n));
  const names = [...listed].slice(0, 10).map(quote);
  return `--exec-tool ${quote(tool)}: the server lists no tool by that name (it lists ${names.length ? names.join(', ') : 'no tool'}${listed.size > 10 ? ', …' : ''})`;
}
