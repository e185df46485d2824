import { shellQuote } from './observers.js';
import { isObject } from './json.js';
import type { RawOutcome } from './codex-session.js';

/** How to ask the target to run a command: a tool and an arguments template. */
export interface ExecAdapter {
  tool: string;
  /** JSON with "{{argv}}" (the command as an array) or "{{command}}" (one shell-quoted string). */
  arguments: unknown;
  source: 'flag' | 'config' | 'detected';
}

export const EXEC_HINT = 'the suite found no tool that runs a command';

const COMMAND_PROPERTIES = ['command', 'cmd', 'argv'] as const;
/** Names of a working-directory property, compared lowercased without "_" and "-". */
const CWD_PROPERTIES = new Set(['cwd', 'workdir', 'workingdirectory', 'dir', 'directory']);

/** The JSON types a property schema accepts: its `type` (one or a list) and those of its anyOf/oneOf members. */
function schemaTypes(schema: unknown): Set<string> {
  const types = new Set<string>();
  if (!isObject(schema)) return types;
  for (const type of Array.isArray(schema.type) ? schema.type : [schema.type]) if (typeof type === 'string') types.add(type);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const members = schema[key];
    if (Array.isArray(members)) for (const member of members) for (const type of schemaTypes(member)) types.add(type);
  }
  return types;
}

/**
 * Detects the arguments template from one tool's input schema, or undefined if it has no command
 * property. A command that may be an array is given one ({{argv}}: no quoting to get wrong); a
 * required working directory gets "{{cwd}}", which the runner fills with the scenario's workspace.
 * Other required properties are left out: the server then rejects the call (see adapterRejection).
 */
export function argumentsFromSchema(tool: Record<string, unknown>): unknown | undefined {
  const schema = isObject(tool.inputSchema) ? tool.inputSchema : {};
  const properties = isObject(schema.properties) ? schema.properties : {};
  const name = COMMAND_PROPERTIES.find((n) => {
    const types = schemaTypes(properties[n]);
    return types.has('array') || types.has('string');
  });
  if (name === undefined) return undefined;
  const template: Record<string, unknown> = { [name]: schemaTypes(properties[name]).has('array') ? '{{argv}}' : '{{command}}' };
  const required = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [];
  for (const property of required) {
    if (property === name || !CWD_PROPERTIES.has(property.toLowerCase().replace(/[_-]/g, ''))) continue;
    if (schemaTypes(properties[property]).has('string')) template[property] = '{{cwd}}';
  }
  return template;
}

/** Which of a server's tools the host may call: Codex's `enabled_tools` (an allow-list, when set), then `disabled_tools`. */
export interface ToolFilter {
  enabled?: readonly string[];
  disabled?: readonly string[];
}

/** True when the filter lets the host call tool `name` (no filter: every tool). */
export function toolAllowed(filter: ToolFilter | undefined, name: unknown): boolean {
  if (typeof name !== 'string') return false;
  if (filter?.enabled && !filter.enabled.includes(name)) return false;
  return !filter?.disabled?.includes(name);
}

/**
 * Chooses the exec adapter: the operator's (flag or config) wins; otherwise the first listed tool
 * with a `command`, `cmd` or `argv` property. Only tools the filter allows count: Codex neither
 * offers the others to its model nor calls them. Returns a reason when there is none.
 */
export function resolveExecAdapter(
  allTools: Record<string, unknown>[],
  configured?: { tool: string; arguments?: unknown; source: 'flag' | 'config' },
  filter?: ToolFilter,
): ExecAdapter | { missing: string } {
  const tools = allTools.filter((t) => toolAllowed(filter, t.name));
  if (configured) {
    if (!toolAllowed(filter, configured.tool)) {
      return {
        missing: `tool "${configured.tool}" is not enabled for this server in the Codex config (enabled_tools, disabled_tools): Codex would not call it`,
      };
    }
    if (configured.arguments !== undefined) return { tool: configured.tool, arguments: configured.arguments, source: configured.source };
    const tool = tools.find((t) => t.name === configured.tool);
    if (!tool) return { missing: `the server lists no tool named "${configured.tool}"` };
    const args = argumentsFromSchema(tool);
    if (args === undefined) {
      return { missing: `tool "${configured.tool}" has no command, cmd or argv property, and no arguments template places the command` };
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
 * shell-quoted command; any other "{{name}}" the value of `vars[name]` (e.g. sessionId, cwd), and
 * stays as it is when vars has no such name.
 */
export function renderArguments(template: unknown, argv: string[], vars: Record<string, string> = {}): unknown {
  if (template === '{{argv}}') return [...argv];
  if (typeof template === 'string') {
    // One pass, so that a substituted value is never itself substituted into.
    return template.replace(/\{\{([A-Za-z0-9_]+)\}\}/g, (whole, name: string) => {
      if (name === 'command') return argv.map(shellQuote).join(' ');
      return Object.hasOwn(vars, name) ? vars[name]! : whole;
    });
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
  /** A dotted path into the open result, e.g. "structuredContent.sessionId" or "content.0.text"; default: see readSessionId. */
  sessionId?: string;
}

/** Reads a dotted path (object keys, array indexes) out of a value; no path reads nothing. */
export function readPath(value: unknown, path: string | undefined): unknown {
  if (path === undefined) return undefined;
  return path.split('.').reduce<unknown>((node, key) => {
    if (Array.isArray(node)) return node[Number(key)];
    return isObject(node) ? node[key] : undefined;
  }, value);
}

const textBlocks = (result: unknown): string[] =>
  isObject(result) && Array.isArray(result.content)
    ? result.content.filter((b): b is Record<string, unknown> => isObject(b) && b.type === 'text' && typeof b.text === 'string').map((b) => b.text as string)
    : [];

/**
 * The session id in a session's open result. With a path, what is there (a string or a number);
 * without one, structuredContent.sessionId, else the only text block (or its "sessionId" when that
 * text is a JSON object).
 */
export function readSessionId(openResult: unknown, path?: string): string | undefined {
  const asId = (value: unknown) => (typeof value === 'string' || typeof value === 'number' ? String(value) : undefined);
  if (path !== undefined) return asId(readPath(openResult, path));
  const structured = isObject(openResult) ? openResult.structuredContent : undefined;
  const fromStructured = isObject(structured) ? asId(structured.sessionId) : undefined;
  if (fromStructured !== undefined) return fromStructured;
  const texts = textBlocks(openResult);
  if (texts.length !== 1) return undefined;
  const text = texts[0]!.trim();
  if (text.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (isObject(parsed)) return asId(parsed.sessionId);
    } catch {
      /* not JSON: the text is the id */
    }
  }
  return text === '' ? undefined : text;
}

// What servers say when the call itself was invalid (unknown tool, arguments that fail the schema),
// e.g. the TypeScript SDK's "MCP error -32602: Tool x not found" and "Input validation error: ...",
// Python's pydantic "validation error for ...\nField required", ajv's "must have required property".
const REJECTION_PATTERNS = [
  /\bMCP error -3260[12]\b/,
  /\bunknown tool\b/i,
  /\bno such tool\b/i,
  /\btool\b[^\n]{0,80}\bnot found\b/i,
  /\b(input|schema|arguments?|parameters?|params)\s+validation\b/i,
  /\bvalidation errors? for\b/i,
  /\binvalid (arguments?|param(eter)?s?|input)\b/i,
  /\bmissing required (property|properties|argument|arguments|parameter|parameters|field|fields)\b/i,
  /\bmust have required property\b/i,
  /\bis a required property\b/i,
  /\bfield required\b/i,
  /"message":\s*"Required"/,
];
// The server's own output failing its schema is the server's fault, not a rejection of our call.
const NOT_REJECTION = /\boutput validation\b/i;

/**
 * The server's message when a tools/call outcome shows that the call itself was rejected as invalid
 * (unknown tool, arguments the schema refuses) rather than judged: the suite's adapter is then at
 * fault, and a refusal proves nothing. Undefined for any other outcome, sandbox refusals included.
 */
export function adapterRejection(outcome: RawOutcome): string | undefined {
  let message: string;
  if (outcome.kind === 'error') {
    message = String(outcome.error.message ?? '');
    if ((outcome.error.code === -32602 || outcome.error.code === -32601) && !NOT_REJECTION.test(message))
      return message || `JSON-RPC error ${outcome.error.code}`;
  } else if (outcome.kind === 'result' && isObject(outcome.result) && outcome.result.isError === true) {
    message = textBlocks(outcome.result).join('\n');
  } else return undefined;
  if (NOT_REJECTION.test(message)) return undefined;
  return REJECTION_PATTERNS.some((pattern) => pattern.test(message)) ? message.trim() : undefined;
}

/** Replaces "{{command}}" in a template with a script, verbatim (for a shell-string tool). */
function withScript(template: unknown, script: string): unknown {
  if (typeof template === 'string') return template.replaceAll('{{command}}', script);
  if (Array.isArray(template)) return template.map((item) => withScript(item, script));
  if (isObject(template)) return Object.fromEntries(Object.entries(template).map(([key, value]) => [key, withScript(value, script)]));
  return template;
}

/** The exec tool's arguments for a command: the argv, or for a shell-string tool the script when one is given. */
export function renderCommand(template: unknown, argv: string[], script: string | undefined, vars: Record<string, string>): unknown {
  return renderArguments(script !== undefined && usesShellString(template) ? withScript(template, script) : template, argv, vars);
}
