import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import type { ToolFilter } from '../harness/exec-adapter.js';
import { isObject } from '../harness/json.js';
import { assertDirectory, envVarNames, timeoutSeconds, UsageError } from './config.js';
import { envSecrets } from './sanitize.js';
import { assertLoopbackUrl } from './target.js';

/**
 * `--codex-config [FILE] --server NAME`: the server as Codex is configured to start it, from an
 * `[mcp_servers.NAME]` table of Codex's own config.toml. Honoured: how it starts (command, args,
 * env, env_vars, cwd; or url, bearer_token_env_var, http_headers, env_http_headers), its budgets
 * (startup_timeout_sec, tool_timeout_sec) and which tools may be called (enabled_tools,
 * disabled_tools). Every problem is a usage error of one line (exit 2).
 */

export interface CodexServerEntry {
  /** The config file, absolute. */
  file: string;
  name: string;
  /** A stdio server: how Codex spawns it (the command exactly as given: no .js-to-node rewrite). */
  stdio?: { command: string; args: string[] };
  /** A Streamable HTTP server: its URL and the headers Codex adds (values are secrets). */
  http?: { url: string; headers: Record<string, string> };
  env: Record<string, string>;
  envVars: string[];
  cwd?: string;
  startupTimeoutSec?: number;
  toolTimeoutSec?: number;
  tools: ToolFilter;
  /** Values no report may repeat: header values (the bearer token), secret-looking env values. */
  secrets: string[];
}

/** Codex's own config: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`. */
export function defaultCodexConfigPath(env: NodeJS.ProcessEnv): string {
  return env.CODEX_HOME ? join(env.CODEX_HOME, 'config.toml') : join(homedir(), '.codex', 'config.toml');
}

/** smol-toml's message, on one line, without its code excerpt (the line and column say where). */
const tomlReason = (error: TomlError): string =>
  error.message
    .split('\n')[0]!
    .replace(/^Invalid TOML document: /, '')
    .trim();

export function loadCodexServer(path: string, name: string, env: NodeJS.ProcessEnv): CodexServerEntry {
  const file = resolve(path);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read Codex config ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let toml: Record<string, unknown>;
  try {
    toml = parse(text);
  } catch (error) {
    if (error instanceof TomlError)
      throw new UsageError(`Codex config ${path} is not valid TOML: line ${error.line}, column ${error.column}: ${tomlReason(error)}`);
    throw new UsageError(`Codex config ${path} is not valid TOML: ${(error as Error).message.split('\n')[0]}`);
  }
  const servers = isObject(toml.mcp_servers) ? toml.mcp_servers : {};
  const table = `[mcp_servers.${/^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name)}]`;
  const raw = Object.hasOwn(servers, name) ? servers[name] : undefined;
  if (raw === undefined) {
    const names = Object.keys(servers);
    throw new UsageError(
      `Codex config ${path} has no ${table}: ${names.length ? `its servers are ${names.map((n) => JSON.stringify(n)).join(', ')}` : 'it configures no MCP server'}`,
    );
  }
  const where = (key?: string) => `${table}${key ? ` ${key}` : ''} in ${path}`;
  if (!isObject(raw)) throw new UsageError(`${where()} is not a table`);
  if (raw.enabled === false) throw new UsageError(`${where()} has enabled = false: Codex does not start it (set enabled = true to test it)`);
  if (raw.enabled !== undefined && typeof raw.enabled !== 'boolean') throw new UsageError(`${where('enabled')} must be true or false`);

  const string = (key: string): string | undefined => {
    const value = raw[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value === '') throw new UsageError(`${where(key)} must be a non-empty string`);
    return value;
  };
  const strings = (key: string): string[] | undefined => {
    const value = raw[key];
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw new UsageError(`${where(key)} must be a list of strings`);
    return value as string[];
  };
  const stringTable = (key: string): Record<string, string> => {
    const value = raw[key];
    if (value === undefined) return {};
    if (!isObject(value) || Object.values(value).some((v) => typeof v !== 'string')) throw new UsageError(`${where(key)} must map names to strings`);
    return { ...(value as Record<string, string>) };
  };
  const seconds = (key: string, scale = 1): number | undefined => {
    const value = raw[key];
    if (value === undefined) return undefined;
    return timeoutSeconds(typeof value === 'number' ? value / scale : value, where(key));
  };

  const command = string('command');
  const url = string('url');
  if (command && url) throw new UsageError(`${where()} has both command and url: give one (stdio or Streamable HTTP)`);
  if (!command && !url) throw new UsageError(`${where()} has neither command (stdio) nor url (Streamable HTTP)`);
  if (raw.bearer_token !== undefined) {
    throw new UsageError(`${where('bearer_token')}: Codex does not read a token from its config; export it and name the variable in bearer_token_env_var`);
  }

  const entry: CodexServerEntry = {
    file,
    name,
    env: stringTable('env'),
    envVars: envVarNames(strings('env_vars') ?? [], where('env_vars')),
    tools: {},
    secrets: [],
  };
  entry.secrets.push(...envSecrets(entry.env));
  const cwd = string('cwd');
  if (cwd !== undefined) {
    assertDirectory(cwd, where('cwd'));
    entry.cwd = cwd;
  }
  // startup_timeout_ms is the older spelling Codex still reads.
  entry.startupTimeoutSec = seconds('startup_timeout_sec') ?? seconds('startup_timeout_ms', 1000);
  entry.toolTimeoutSec = seconds('tool_timeout_sec');
  const enabled = strings('enabled_tools');
  const disabled = strings('disabled_tools');
  if (enabled) entry.tools.enabled = enabled;
  if (disabled) entry.tools.disabled = disabled;

  if (command) {
    entry.stdio = { command, args: strings('args') ?? [] };
    return entry;
  }
  assertLoopbackUrl(url!, where('url'));
  const headers: Record<string, string> = stringTable('http_headers');
  for (const [header, variable] of Object.entries(stringTable('env_http_headers'))) {
    // As Codex: a header whose variable is unset or empty is not sent.
    const value = env[variable];
    if (value) headers[header] = value;
  }
  const tokenVariable = string('bearer_token_env_var');
  if (tokenVariable !== undefined) {
    const token = env[tokenVariable];
    if (!token) throw new UsageError(`${where('bearer_token_env_var')} names ${tokenVariable}, which is not set in this environment`);
    headers.authorization = `Bearer ${token}`;
    entry.secrets.push(token);
  }
  // Every header value is treated as a secret: an API key travels in a header of any name.
  entry.secrets.push(...Object.values(headers));
  entry.http = { url: url!, headers };
  return entry;
}
