import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes `$CODEX_HOME/config.toml` for an offline host run (README.md, "Host mode"):
 * a scripted model provider on loopback, approvals waived, the workspace trusted, and one MCP
 * server (stdio command or Streamable HTTP url). The TOML is a small subset (quoted keys, JSON
 * strings and arrays, booleans, numbers) so that the broken-host fixture can read it too.
 */
export type McpServerConfig =
  /** `envVars`: Codex's env_vars, names passed on from the host's environment. */
  { transport: 'stdio'; command: string; args: string[]; env: Record<string, string>; envVars?: string[] } | { transport: 'http'; url: string };

export interface HostConfig {
  codexHome: string;
  workspace: string;
  /** More workspaces a thread or turn may use, trusted like the first. */
  trusted?: string[];
  modelBaseUrl: string;
  /** The MCP servers, by name (the name is the model's namespace `mcp__<name>`). */
  servers: Record<string, McpServerConfig>;
  sandboxMode: 'read-only' | 'workspace-write' | 'danger-full-access';
  /** `[sandbox_workspace_write] network_access` (default: left out, so off). */
  networkAccess?: boolean;
}

export const PROVIDER = 'conformance_scripted';
export const MODEL = 'scripted-model';

const str = (value: string) => JSON.stringify(value);
const key = (value: string) => (/^[A-Za-z0-9_-]+$/.test(value) ? value : JSON.stringify(value));

export function renderConfig(config: HostConfig): string {
  const lines = [
    `model = ${str(MODEL)}`,
    `model_provider = ${str(PROVIDER)}`,
    `approval_policy = "never"`,
    `sandbox_mode = ${str(config.sandboxMode)}`,
    // Offline: no update check, analytics, plugin or connector sync (Codex otherwise resolves
    // api.github.com, chatgpt.com and ab.chatgpt.com at startup).
    `check_for_update_on_startup = false`,
    '',
    `[analytics]`,
    `enabled = false`,
    '',
    `[features]`,
    `plugins = false`,
    `remote_plugin = false`,
    `apps = false`,
    `in_app_updates = false`,
    '',
    `[model_providers.${PROVIDER}]`,
    `name = "conformance scripted model"`,
    `base_url = ${str(config.modelBaseUrl)}`,
    `wire_api = "responses"`,
    `requires_openai_auth = false`,
    `supports_websockets = false`,
    `request_max_retries = 0`,
    `stream_max_retries = 0`,
    ...[config.workspace, ...(config.trusted ?? [])].flatMap((dir) => ['', `[projects.${str(dir)}]`, `trust_level = "trusted"`]),
  ];
  if (config.networkAccess !== undefined) lines.push('', `[sandbox_workspace_write]`, `network_access = ${config.networkAccess}`);
  for (const [name, server] of Object.entries(config.servers)) {
    lines.push('', `[mcp_servers.${key(name)}]`);
    if (server.transport === 'stdio') lines.push(`command = ${str(server.command)}`, `args = [${server.args.map(str).join(', ')}]`);
    else lines.push(`url = ${str(server.url)}`);
    if (server.transport === 'stdio' && server.envVars) lines.push(`env_vars = [${server.envVars.map(str).join(', ')}]`);
    // The recording tool is annotated readOnlyHint (enough for 0.171.0); 0.169.0 needs this too.
    lines.push(`default_tools_approval_mode = "approve"`, `startup_timeout_sec = 30`, `required = true`);
    if (server.transport === 'stdio' && Object.keys(server.env).length) {
      lines.push('', `[mcp_servers.${key(name)}.env]`);
      for (const [envName, value] of Object.entries(server.env)) lines.push(`${key(envName)} = ${str(value)}`);
    }
  }
  return lines.join('\n') + '\n';
}

export function writeConfig(config: HostConfig): string {
  const file = join(config.codexHome, 'config.toml');
  writeFileSync(file, renderConfig(config));
  return file;
}
