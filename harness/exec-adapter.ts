import { shellQuote } from './observers.js';
import { isObject } from './json.js';

/** How to ask the target to run a command: a tool and an arguments template. */
export interface ExecAdapter {
  tool: string;
  /** JSON with "{{argv}}" (the command as an array) or "{{command}}" (one shell-quoted string). */
  arguments: unknown;
  source: 'flag' | 'config' | 'detected';
}

export const EXEC_HINT =
  'the suite found no tool that runs a command; name one with --exec-tool NAME --exec-args \'{"command":"{{argv}}"}\' (or "exec" in mcp-sandbox-conformance.json)';

const COMMAND_PROPERTIES = ['command', 'cmd', 'argv'] as const;


function schemaType(schema: unknown): string | undefined {
  if (!isObject(schema)) return undefined;
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  return typeof type === 'string' ? type : undefined;
}

/** Detects the arguments template from one tool's input schema, or undefined if it has no command property. */
export function argumentsFromSchema(tool: Record<string, unknown>): unknown | undefined {
  const properties = isObject(tool.inputSchema) && isObject(tool.inputSchema.properties) ? tool.inputSchema.properties : {};
  for (const name of COMMAND_PROPERTIES) {
    const type = schemaType(properties[name]);
    if (type === 'array') return { [name]: '{{argv}}' };
    if (type === 'string') return { [name]: '{{command}}' };
  }
  return undefined;
}

/**
 * Chooses the exec adapter: the operator's (flag or config) wins; otherwise the first listed tool
 * with a `command`, `cmd` or `argv` property. Returns a reason when there is none.
 */
export function resolveExecAdapter(
  tools: Record<string, unknown>[],
  configured?: { tool: string; arguments?: unknown; source: 'flag' | 'config' },
): ExecAdapter | { missing: string } {
  if (configured) {
    if (configured.arguments !== undefined) return { tool: configured.tool, arguments: configured.arguments, source: configured.source };
    const tool = tools.find((t) => t.name === configured.tool);
    if (!tool) return { missing: `the server lists no tool named "${configured.tool}" (--exec-tool)` };
    const args = argumentsFromSchema(tool);
    if (args === undefined) {
      return { missing: `tool "${configured.tool}" has no command, cmd or argv property; give --exec-args with "{{argv}}" or "{{command}}"` };
    }
    return { tool: configured.tool, arguments: args, source: configured.source };
  }
  for (const tool of tools) {
    const args = argumentsFromSchema(tool);
    if (args !== undefined && typeof tool.name === 'string') return { tool: tool.name, arguments: args, source: 'detected' };
  }
  return { missing: EXEC_HINT };
}

/** True when the template passes the command as one shell string rather than an argv array. */
export function usesShellString(template: unknown): boolean {
  return JSON.stringify(template).includes('{{command}}');
}

/**
 * Fills a template: "{{argv}}" (a whole string) becomes the argv array; "{{command}}" the
 * shell-quoted command; any other "{{name}}" the value of `vars[name]` (e.g. sessionId).
 */
export function renderArguments(template: unknown, argv: string[], vars: Record<string, string> = {}): unknown {
  if (template === '{{argv}}') return [...argv];
  if (typeof template === 'string') {
    let text = template.replaceAll('{{command}}', argv.map(shellQuote).join(' '));
    for (const [name, value] of Object.entries(vars)) text = text.replaceAll(`{{${name}}}`, value);
    return text;
  }
  if (Array.isArray(template)) return template.map((item) => renderArguments(item, argv, vars));
  if (isObject(template)) {
    return Object.fromEntries(Object.entries(template).map(([key, value]) => [key, renderArguments(value, argv, vars)]));
  }
  return template;
}

/** How to drive a long-lived session: open it, send it commands, and where its id is in the open result. */
export interface SessionAdapter {
  open: { tool: string; arguments: unknown };
  send: { tool: string; arguments: unknown };
  /** A dotted path into the open result, e.g. "structuredContent.sessionId" or "content.0.text". */
  sessionId: string;
}

/** Reads a dotted path (object keys, array indexes) out of a value. */
export function readPath(value: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((node, key) => {
    if (Array.isArray(node)) return node[Number(key)];
    return isObject(node) ? node[key] : undefined;
  }, value);
}
