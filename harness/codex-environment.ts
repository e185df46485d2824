/**
 * The environment a server starts with, built as the one who starts it in real life builds it.
 *
 * A stdio server is started by Codex, and Codex 0.171.0 does not hand it its own environment: it
 * builds one (codex-rs/rmcp-client/src/utils.rs, `create_env_for_mcp_server`; CONTRACT.md §2).
 * Only the variables below, each where Codex's own environment has it, then the names the server's
 * `env_vars` lists (values from Codex's environment, where set), then its `env` table on top.
 * Measured against real Codex 0.171.0 by test/codex-environment.test.ts: the same names.
 *
 * A server over Streamable HTTP (`--http-command`) is started by its user, not by Codex: it keeps
 * the user's whole environment. Neither ever gets a variable of the suite's own.
 */

/** What Codex passes on from its own environment to every stdio server (Unix; each only where set). */
export const CODEX_DEFAULT_ENV_VARS: readonly string[] = [
  'HOME',
  'LOGNAME',
  'PATH',
  'SHELL',
  'USER',
  '__CF_USER_TEXT_ENCODING',
  'LANG',
  'LC_ALL',
  'TERM',
  'TMPDIR',
  'TZ',
];

/** The CA-bundle variables Codex passes on too (each only where set). */
export const CODEX_CA_ENV_VARS: readonly string[] = [
  'CURL_CA_BUNDLE',
  'GIT_SSL_CAINFO',
  'NODE_EXTRA_CA_CERTS',
  'PIP_CERT',
  'REQUESTS_CA_BUNDLE',
  'SSL_CERT_FILE',
];

/** How a server's configuration adds to its environment: Codex's `env` table and `env_vars` list. */
export interface ServerEnvironmentConfig {
  /** Codex's `env`: set on top of everything else (`--env NAME=VALUE`). */
  env?: Record<string, string>;
  /** Codex's `env_vars`: names copied from the parent environment, where set (`--env-var NAME`). */
  envVars?: readonly string[];
}

/**
 * True for a variable of the suite's own (its run marker, its switches, the Action's inputs):
 * `MCP_SANDBOX_CONFORMANCE_*` and `MSC_*`. None reaches a server, whoever starts it.
 */
export const isSuiteVariable = (name: string): boolean => /^(MCP_SANDBOX_CONFORMANCE_|MSC_)/.test(name);

function copy(into: Record<string, string>, parent: NodeJS.ProcessEnv, name: string): void {
  const value = parent[name];
  if (value !== undefined && Object.hasOwn(parent, name)) into[name] = value;
}

/**
 * The environment Codex 0.171.0 gives a stdio server, from `parent` (the environment Codex runs
 * in; for the suite, its own): the default and CA variables where set, then `envVars` where set,
 * then `env`. Pure: `parent` is read, never changed. A variable of the suite's own is left out even
 * when named, as it would not exist where Codex runs.
 */
export function codexServerEnvironment(parent: NodeJS.ProcessEnv, config: ServerEnvironmentConfig = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of [...CODEX_DEFAULT_ENV_VARS, ...CODEX_CA_ENV_VARS, ...(config.envVars ?? [])]) {
    if (!isSuiteVariable(name)) copy(env, parent, name);
  }
  for (const [name, value] of Object.entries(config.env ?? {})) env[name] = value;
  return env;
}

/**
 * The environment of a server its user starts (`--http-command`), or the suite's full environment
 * for diagnosis: all of `parent` but the suite's own variables, then `env` on top.
 */
export function userServerEnvironment(parent: NodeJS.ProcessEnv, env: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) if (value !== undefined && !isSuiteVariable(name)) out[name] = value;
  for (const [name, value] of Object.entries(env)) out[name] = value;
  return out;
}
