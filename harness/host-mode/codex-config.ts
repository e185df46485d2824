import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes `$CODEX_HOME/config.toml` for an offline host run (shared/reference/driving-real-codex.md):
 * a scripted model provider on loopback, approvals waived, the workspace trusted, and one MCP
 * server (stdio command or Streamable HTTP url). The TOML is a small subset (quoted keys, JSON
 * strings and arrays, booleans, numbers) so that the broken-host fixture can read it too.
 */
export type McpServerConfig =
  | { transport: 'stdio'; command: string; args: string[]; env: Record<string, string> }
  | { transport: 'http'; url: string };

export interface HostConfig {
  codexHome: string;
  workspace: string;
  modelBaseUrl: string;
  serverName: string;
  server: McpServerConfig;
  sandboxMode: 'read-only' | 'workspace-write' | 'danger-full-access';
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
    '',
    `[model_providers.${PROVIDER}]`,
    `name = "conformance scripted model"`,
    `base_url = ${str(config.modelBaseUrl)}`,
    `wire_api = "responses"`,
    `requires_openai_auth = false`,
    `supports_websockets = false`,
    `request_max_retries = 0`,
    `stream_max_retries = 0`,
    '',
    `[projects.${str(config.workspace)}]`,
    `trust_level = "trusted"`,
    '',
    `[mcp_servers.${key(config.serverName)}]`,
  ];
  if (config.server.transport === 'stdio') {
    lines.push(`command = ${str(config.server.command)}`, `args = [${config.server.args.map(str).join(', ')}]`);
  } else {
    lines.push(`url = ${str(config.server.url)}`);
  }
  // The tool is annotated readOnlyHint (enough for 0.171.0); 0.169.0 needs this as well.
  lines.push(`default_tools_approval_mode = "approve"`, `startup_timeout_sec = 30`);
  if (config.server.transport === 'stdio' && Object.keys(config.server.env).length) {
    lines.push('', `[mcp_servers.${key(config.serverName)}.env]`);
    for (const [name, value] of Object.entries(config.server.env)) lines.push(`${key(name)} = ${str(value)}`);
  }
  return lines.join('\n') + '\n';
}

export function writeConfig(config: HostConfig): string {
  const file = join(config.codexHome, 'config.toml');
  writeFileSync(file, renderConfig(config));
  return file;
}
