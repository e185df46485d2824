import { accessSync, constants, existsSync, readFileSync, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { checkResourceReadMeta } from '../harness/app-server-rules.js';
import type { SessionAdapter } from '../harness/exec-adapter.js';
import { ELICITATION_ANSWERS, type ElicitationAnswer } from '../harness/elicitation.js';
import { isObject } from '../harness/json.js';

/** A problem with what the user asked for: exit code 2, one line. */
export class UsageError extends Error {}

/** The longest delay a Node timer holds (2^31-1 ms, about 24.8 days); a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A timeout in seconds, as a flag or the config gives it: a positive finite number a timer can hold. */
export function timeoutSeconds(value: unknown, where: string): number {
  if (typeof value !== 'number' || Number.isNaN(value) || !(value > 0))
    throw new UsageError(`${where} must be a positive number of seconds, not ${String(value)}`);
  if (!Number.isFinite(value) || Math.round(value * 1000) > MAX_TIMER_MS) {
    throw new UsageError(`${where} is too large for a timer: ${String(value)} s (at most ${Math.floor(MAX_TIMER_MS / 1000)} s)`);
  }
  if (Math.round(value * 1000) < 1) throw new UsageError(`${where} is below a millisecond: ${String(value)} s`);
  return value;
}

/** An exec tool the operator names, with its arguments template (none: read from its schema). */
export interface ExecEntry {
  tool: string;
  arguments?: unknown;
}

/** mcp-sandbox-conformance.json: everything a flag can say, for a repository to keep. */
export interface ConfigFile {
  /** One exec tool, or several (the first gets every check, the others the fixed EXEC-1/LAUNCH calls). */
  exec?: ExecEntry | ExecEntry[];
  /** Tools to leave out by name (--skip-tool): every other exec tool is driven, whatever its annotations. */
  skipTools?: string[];
  /** The server's `env` as Codex's config has it: set on top of the environment Codex builds. */
  env?: Record<string, string>;
  /** The server's `env_vars` as Codex's config has it: names passed on from our environment. */
  envVars?: string[];
  cwd?: string;
  startupTimeoutSec?: number;
  callTimeoutSec?: number;
  assumeOptIn?: boolean;
  session?: SessionAdapter;
  /** Caller `_meta` for the resource reads of RES-1; Codex's HOST-3 rule applies to it. */
  resourceReadMeta?: Record<string, unknown>;
  /** Exploration (explore/sequences-hold-contract): false turns it off. */
  explore?: false | { sequences?: number; seed?: number; timeSec?: number };
  /** How the fake Codex answers the server's elicitation/create (--elicitation). */
  elicitation?: ElicitationAnswer;
}

export const DEFAULT_CONFIG = 'mcp-sandbox-conformance.json';
const KNOWN_KEYS = new Set([
  '$schema',
  'exec',
  'skipTools',
  'env',
  'envVars',
  'cwd',
  'startupTimeoutSec',
  'callTimeoutSec',
  'assumeOptIn',
  'session',
  'resourceReadMeta',
  'explore',
  'elicitation',
]);

/** Loads --config FILE, or the default file when present. */
export function loadConfig(path: string | undefined): { config: ConfigFile; path?: string } {
  const file = path ?? (existsSync(DEFAULT_CONFIG) ? DEFAULT_CONFIG : undefined);
  if (!file) return { config: {} };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read config ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`config ${file} is not valid JSON: ${(error as Error).message}`);
  }
  return { config: validateConfig(raw, file), path: resolve(file) };
}

export function validateConfig(raw: unknown, file: string): ConfigFile {
  const where = (key: string) => `config ${file}: "${key}"`;
  if (!isObject(raw)) throw new UsageError(`config ${file} must hold a JSON object`);
  for (const key of Object.keys(raw)) {
    if (!KNOWN_KEYS.has(key))
      throw new UsageError(`${where(key)} is not a known setting (known: ${[...KNOWN_KEYS].filter((k) => k !== '$schema').join(', ')})`);
  }
  const config: ConfigFile = {};
  if (raw.exec !== undefined) {
    const entries = Array.isArray(raw.exec) ? raw.exec : [raw.exec];
    const valid = entries.length > 0 && entries.every((e) => isObject(e) && typeof e.tool === 'string' && e.tool !== '');
    if (!valid) throw new UsageError(`${where('exec')} must be {"tool": "<name>", "arguments": {...}}, or a list of them`);
    const parsed = entries.map((e: Record<string, unknown>) => ({ tool: e.tool as string, arguments: e.arguments }));
    config.exec = Array.isArray(raw.exec) ? parsed : parsed[0];
  }
  if (raw.skipTools !== undefined) {
    if (!Array.isArray(raw.skipTools) || raw.skipTools.some((v) => typeof v !== 'string' || v === ''))
      throw new UsageError(`${where('skipTools')} must be a list of tool names`);
    config.skipTools = raw.skipTools as string[];
  }
  if (raw.env !== undefined) {
    if (!isObject(raw.env) || Object.values(raw.env).some((v) => typeof v !== 'string')) {
      throw new UsageError(`${where('env')} must map names to strings`);
    }
    config.env = raw.env as Record<string, string>;
  }
  if (raw.envVars !== undefined) {
    if (!Array.isArray(raw.envVars) || raw.envVars.some((v) => typeof v !== 'string'))
      throw new UsageError(`${where('envVars')} must be a list of variable names`);
    config.envVars = envVarNames(raw.envVars as string[], where('envVars'));
  }
  if (raw.cwd !== undefined) {
    if (typeof raw.cwd !== 'string') throw new UsageError(`${where('cwd')} must be a string`);
    config.cwd = raw.cwd;
  }
  for (const key of ['startupTimeoutSec', 'callTimeoutSec'] as const) {
    const value = raw[key];
    if (value === undefined) continue;
    config[key] = timeoutSeconds(value, where(key));
  }
  if (raw.session !== undefined) config.session = validateSession(raw.session, where('session'));
  if (raw.resourceReadMeta !== undefined) {
    // Answered as Codex's app-server would answer it, before anything is sent to the server.
    const verdict = checkResourceReadMeta(raw.resourceReadMeta, 'target', 0);
    if (!verdict.ok) throw new UsageError(`${where('resourceReadMeta')}: Codex would refuse this read with ${verdict.code} "${verdict.message}"`);
    config.resourceReadMeta = raw.resourceReadMeta === null ? undefined : (raw.resourceReadMeta as Record<string, unknown>);
  }
  if (raw.assumeOptIn !== undefined) {
    if (typeof raw.assumeOptIn !== 'boolean') throw new UsageError(`${where('assumeOptIn')} must be true or false`);
    config.assumeOptIn = raw.assumeOptIn;
  }
  if (raw.explore !== undefined) config.explore = validateExplore(raw.explore, where('explore'));
  if (raw.elicitation !== undefined) {
    if (!(ELICITATION_ANSWERS as readonly unknown[]).includes(raw.elicitation))
      throw new UsageError(`${where('elicitation')} must be one of ${ELICITATION_ANSWERS.map((a) => JSON.stringify(a)).join(', ')}`);
    config.elicitation = raw.elicitation as ElicitationAnswer;
  }
  return config;
}

const EXPLORE_SHAPE = 'false or {"sequences": N, "seed": S, "timeSec": T} (each optional)';

function validateExplore(raw: unknown, where: string): ConfigFile['explore'] {
  if (raw === false) return false;
  if (!isObject(raw)) throw new UsageError(`${where} must be ${EXPLORE_SHAPE}`);
  for (const key of Object.keys(raw))
    if (!['sequences', 'seed', 'timeSec'].includes(key)) throw new UsageError(`${where}: "${key}" is not known; ${where} must be ${EXPLORE_SHAPE}`);
  const explore: NonNullable<Exclude<ConfigFile['explore'], false>> = {};
  if (raw.sequences !== undefined) explore.sequences = exploreSequences(raw.sequences, `${where}.sequences`);
  if (raw.seed !== undefined) explore.seed = exploreSeed(raw.seed, `${where}.seed`);
  if (raw.timeSec !== undefined) explore.timeSec = timeoutSeconds(raw.timeSec, `${where}.timeSec`);
  return explore;
}

/** How many sequences to explore: a whole number, 0 turning exploration off. */
export function exploreSequences(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 1_000_000)
    throw new UsageError(`${where} must be a whole number from 0 to 1000000, not ${JSON.stringify(value)}`);
  return value;
}

/** A fast-check seed: a 32-bit integer. */
export function exploreSeed(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31)
    throw new UsageError(`${where} must be a 32-bit whole number, not ${JSON.stringify(value)}`);
  return value;
}

/** --replay <seed:path>, as the report prints it (fast-check's seed and shrink path). */
export function parseReplay(text: string): { seed: number; path: string } {
  // The path is fast-check's, then "@" and the record of which commands ran (fc.commands' replayPath).
  const match = /^(-?\d+):(\d+(?::\d+)*(?:@[A-Za-z0-9+/]*:[A-Za-z0-9+/]*)?)$/.exec(text.trim());
  if (!match) throw new UsageError(`--replay expects <seed:path> as a report prints it, e.g. 20261201:3:1:0@CA:AA, not "${text}"`);
  return { seed: exploreSeed(Number(match[1]), '--replay seed'), path: match[2]! };
}

/** --env K=V, repeatable. */
export function parseEnvPairs(pairs: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--env expects NAME=VALUE, got "${pair}"`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

/** Names of variables to pass on (--env-var NAME, "envVars", Codex's env_vars): each a name, without "=". */
export function envVarNames(names: string[], where: string): string[] {
  for (const name of names) {
    if (name === '' || name.includes('=') || name.includes('\0')) throw new UsageError(`${where} expects a variable name, got ${JSON.stringify(name)}`);
  }
  return names;
}

/** --exec-args: a JSON object that places the command somewhere, as "{{argv}}" or "{{command}}". */
export function parseExecArgs(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--exec-args is not valid JSON: ${(error as Error).message}`);
  }
  if (!isObject(value)) throw new UsageError(`--exec-args must be a JSON object (the tool's arguments), e.g. '{"command":"{{argv}}"}'`);
  if (!hasCommandPlaceholder(value))
    throw new UsageError(
      `--exec-args must place the command with "{{argv}}" or "{{command}}" (or "{{argv0}}" and "{{argvRest}}"), e.g. '{"command":"{{argv}}"}'`,
    );
  return value;
}

/**
 * Repeated --exec-tool with its --exec-args: one template per tool, in order, or none at all (each
 * tool's template then comes from its schema).
 */
export function execFlags(tools: string[], args: string[]): { tool: string; arguments?: unknown; source: 'flag' }[] {
  if (args.length > 0 && tools.length === 0) throw new UsageError('--exec-args needs --exec-tool');
  if (args.length > 0 && args.length !== tools.length) {
    throw new UsageError(`give one --exec-args per --exec-tool, in the same order, or none (${tools.length} tools, ${args.length} templates)`);
  }
  const names = new Set<string>();
  return tools.map((tool, i) => {
    if (names.has(tool)) throw new UsageError(`--exec-tool ${tool} given more than once`);
    names.add(tool);
    return { tool, arguments: parseExecArgs(args[i]), source: 'flag' };
  });
}

/** The tools to leave out (config "skipTools", then --skip-tool), each once; a tool also named as an exec tool is a contradiction. */
export function skippedTools(names: readonly string[], execs: readonly ExecEntry[]): string[] {
  const skipped = [...new Set(names)];
  const empty = skipped.find((name) => name.trim() === '');
  if (empty !== undefined) throw new UsageError('--skip-tool needs a tool name');
  const both = skipped.find((name) => execs.some((e) => e.tool === name));
  if (both !== undefined) throw new UsageError(`tool "${both}" is named both to drive (--exec-tool, "exec") and to leave out (--skip-tool, "skipTools")`);
  return skipped;
}

/** Config "exec" as a list (one entry or several). */
export const execEntries = (exec: ConfigFile['exec']): ExecEntry[] => (exec === undefined ? [] : Array.isArray(exec) ? exec : [exec]);

/**
 * True when the template places the command: a string that is "{{argv}}" (the array) or holds
 * "{{command}}", or the program ("{{argv0}}") with the rest of the argv ("{{argvRest}}") beside it (see renderArguments).
 */
function hasCommandPlaceholder(value: unknown): boolean {
  const text = JSON.stringify(value);
  return placesCommand(value) || (text.includes('{{argv0}}') && text.includes('"{{argvRest}}"'));
}

function placesCommand(value: unknown): boolean {
  if (typeof value === 'string') return value === '{{argv}}' || value.includes('{{command}}');
  if (Array.isArray(value)) return value.some(placesCommand);
  if (isObject(value)) return Object.values(value).some(placesCommand);
  return false;
}

/** Glob over check ids: `*` matches anything (slashes included), `?` one character. */
export function globMatcher(patterns: string[]): (id: string) => boolean {
  const regexes = patterns.map(
    (p) =>
      new RegExp(
        `^${p
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.')}$`,
      ),
  );
  return (id) => regexes.some((r) => r.test(id));
}

/** The session adapter, from the config file or --session JSON. */
export function validateSession(raw: unknown, where: string): SessionAdapter {
  const shape = `${where} must be {"open": {"tool": ..., "arguments": {...}}, "send": {"tool": ..., "arguments": {... "{{sessionId}}" ... "{{command}}" ...}}, "sessionId": "<optional dotted path in the open result>"}`;
  if (!isObject(raw) || (raw.sessionId !== undefined && typeof raw.sessionId !== 'string')) throw new UsageError(shape);
  const step = (value: unknown) => {
    if (!isObject(value) || typeof value.tool !== 'string' || value.tool === '') throw new UsageError(shape);
    return { tool: value.tool, arguments: value.arguments ?? {} };
  };
  // Without sessionId, readSessionId's defaults apply (structuredContent.sessionId, else the only text block).
  const adapter: SessionAdapter = { open: step(raw.open), send: step(raw.send), ...(raw.sessionId !== undefined ? { sessionId: raw.sessionId } : {}) };
  if (!JSON.stringify(adapter.send.arguments).includes('{{sessionId}}')) throw new UsageError(`${where}: send.arguments must use "{{sessionId}}"`);
  return adapter;
}

export function parseSessionFlag(text: string | undefined): SessionAdapter | undefined {
  if (text === undefined) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--session is not valid JSON: ${(error as Error).message}`);
  }
  return validateSession(raw, '--session');
}

/**
 * A file the run will write (a --reporter's FILE, the --baseline that --update-baseline rewrites):
 * checked before anything starts, so that a bad path costs no run. Its directory must exist; the
 * path must not be a directory, and must be writable (or creatable).
 */
/** `label` names the flag and the path as the user wrote them, e.g. `--reporter json=out/r.json`. */
export function assertWritableFile(label: string, path: string): void {
  const file = resolve(path);
  const existing = statOrCode(file);
  if (typeof existing !== 'string') {
    if (existing.isDirectory()) throw new UsageError(`${label}: is a directory, not a file`);
    if (!accessible(file, constants.W_OK)) throw new UsageError(`${label}: the file is not writable`);
    return;
  }
  if (existing !== 'ENOENT') throw new UsageError(`${label}: ${existing === 'ENOTDIR' ? 'a part of its directory is not a directory' : existing}`);
  assertWritableDirectory(label, dirname(file), 'its directory ');
}

/** --transcripts DIR: an existing writable directory, or one that can be created in an existing writable directory. */
export function assertOutputDirectory(label: string, path: string): void {
  const dir = resolve(path);
  const existing = statOrCode(dir);
  if (typeof existing !== 'string') {
    if (!existing.isDirectory()) throw new UsageError(`${label}: is not a directory`);
    if (!accessible(dir, constants.W_OK | constants.X_OK)) throw new UsageError(`${label}: the directory is not writable`);
    return;
  }
  if (existing !== 'ENOENT') throw new UsageError(`${label}: ${existing === 'ENOTDIR' ? 'a part of it is not a directory' : existing}`);
  assertWritableDirectory(label, dirname(dir), 'its parent directory ');
}

function assertWritableDirectory(label: string, dir: string, what: string): void {
  const stat = statOrCode(dir);
  if (stat === 'ENOENT') throw new UsageError(`${label}: ${what}${dir} does not exist`);
  if (typeof stat === 'string') throw new UsageError(`${label}: ${what}${dir}: ${stat === 'ENOTDIR' ? 'a part of it is not a directory' : stat}`);
  if (!stat.isDirectory()) throw new UsageError(`${label}: ${what}${dir} is not a directory`);
  if (!accessible(dir, constants.W_OK | constants.X_OK)) throw new UsageError(`${label}: ${what}${dir} is not writable`);
}

function statOrCode(path: string): Stats | string {
  try {
    return statSync(path);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  }
}

function accessible(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** A directory the server runs in (--cwd, the config's "cwd"): it must exist. */
export function assertDirectory(path: string, where: string): void {
  const stat = statOrCode(resolve(path));
  if (typeof stat === 'string') throw new UsageError(`${where} ${path}: ${stat === 'ENOENT' ? 'no such directory' : stat}`);
  if (!stat.isDirectory()) throw new UsageError(`${where} ${path}: not a directory`);
}
