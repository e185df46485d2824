import { shellQuote } from './observers.js';
import { isObject } from './json.js';
import { codeToolOf, LANGUAGES, type LanguageId } from './languages.js';
import type { RawOutcome } from './codex-session.js';

/** How to ask the target to run a command: a tool and an arguments template. */
export interface ExecAdapter {
  tool: string;
  /** JSON with "{{argv}}" (the command as an array) or "{{command}}" (one shell-quoted string). */
  arguments: unknown;
  source: 'flag' | 'config' | 'detected';
  /** Detection's choices for required properties: "timeout_ms: 60000 (a timeout in ms: generous)". */
  chosen?: string[];
  /** Required properties detection could not fill: the server will likely reject the call. */
  unfilled?: string[];
  /** The tool's input schema as listed (what its optional properties are), when the server listed it. */
  inputSchema?: Record<string, unknown>;
  /** A code tool: the languages it offers that this machine runs (the template's {{program}} and {{language}}), and those it does not. */
  code?: CodeShape;
}

/** How a code tool is sent a program: the languages it offers that this machine runs, each with its language property's value. */
export interface CodeShape {
  languages: { id: LanguageId; value?: string }[];
  /** Languages it offers that this machine does not run (for the report). */
  missing: string[];
}

export const EXEC_HINT = 'the suite found no tool that runs a command';

/** Property names that carry a command, in order of preference. */
export const COMMAND_PROPERTIES = ['command', 'cmd', 'argv', 'script', 'code', 'shell', 'program', 'commandLine'] as const;
/** Names of a working-directory property, compared lowercased without "_" and "-". */
const CWD_PROPERTIES = new Set(['cwd', 'workdir', 'workingdirectory', 'dir', 'directory']);
/** A description that says the tool runs something: "Run a shell command", "Executes a script", "Starts a process". */
const RUNS_SOMETHING = /\b(runs?|execut(?:e|es|ing)|starts?|launch(?:es)?|spawns?)\b[^.]{0,60}\b(commands?|shell|scripts?|process(?:es)?|programs?|code)\b/i;
/** A timeout-like property name, and how to read its unit. */
const TIMEOUT_NAME = /time_?out|time_?limit|deadline/i;

/** The JSON types a property schema accepts: its `type` (one or a list) and those of its anyOf/oneOf members. */
export function schemaTypes(schema: unknown): Set<string> {
  const types = new Set<string>();
  if (!isObject(schema)) return types;
  for (const type of Array.isArray(schema.type) ? schema.type : [schema.type]) if (typeof type === 'string') types.add(type);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const members = schema[key];
    if (Array.isArray(members)) for (const member of members) for (const type of schemaTypes(member)) types.add(type);
  }
  return types;
}

export const takesCommand = (schema: unknown): boolean => {
  const types = schemaTypes(schema);
  return types.has('array') || types.has('string');
};

export interface ToolSchema {
  properties: Record<string, unknown>;
  required: string[];
}

export function toolSchema(tool: Record<string, unknown>): ToolSchema {
  const schema = isObject(tool.inputSchema) ? tool.inputSchema : {};
  return {
    properties: isObject(schema.properties) ? schema.properties : {},
    required: Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [],
  };
}

/**
 * The property a tool takes its command in: one of COMMAND_PROPERTIES; else, when its description
 * says it runs something, its only required (or only) string or array property, unless a command is nested one level down.
 */
function commandProperty(tool: Record<string, unknown>, { properties, required }: ToolSchema): string | undefined {
  const named = COMMAND_PROPERTIES.find((n) => takesCommand(properties[n]));
  if (named !== undefined || !describesRunning(tool) || nestedCommand({ properties, required })) return named;
  const candidates = (names: string[]) => names.filter((n) => takesCommand(properties[n]));
  const requiredOnes = candidates(required);
  if (requiredOnes.length === 1) return requiredOnes[0];
  const all = candidates(Object.keys(properties));
  return requiredOnes.length === 0 && all.length === 1 ? all[0] : undefined;
}

/** True when a tool's description says it runs, executes or starts a command, script, process or program. */
export const describesRunning = (tool: Record<string, unknown>): boolean => typeof tool.description === 'string' && RUNS_SOMETHING.test(tool.description);

/** A value for a required property from its schema, and why; undefined when detection cannot choose one. */
export function valueFor(name: string, schema: unknown): { value: unknown; why: string } | undefined {
  if (!isObject(schema)) return undefined;
  const types = schemaTypes(schema);
  if (CWD_PROPERTIES.has(name.toLowerCase().replace(/[_-]/g, '')) && types.has('string')) return { value: '{{cwd}}', why: "the scenario's workspace" };
  if (schema.default !== undefined) return { value: schema.default, why: 'its default' };
  if (schema.const !== undefined) return { value: schema.const, why: 'its const' };
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return { value: schema.enum[0], why: 'the first of its enum' };
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return { value: schema.examples[0], why: 'its first example' };
  if (types.has('number') || types.has('integer')) return numberFor(name, schema);
  if (types.has('boolean')) return { value: false, why: 'a boolean: false' };
  return undefined;
}

/** A number within the schema's bounds; for a timeout a generous one, by its unit (ms unless it says seconds). */
function numberFor(name: string, schema: Record<string, unknown>): { value: number; why: string } {
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const low = num(schema.minimum) ?? (num(schema.exclusiveMinimum) !== undefined ? num(schema.exclusiveMinimum)! + 1 : undefined);
  const high = num(schema.maximum) ?? (num(schema.exclusiveMaximum) !== undefined ? num(schema.exclusiveMaximum)! - 1 : undefined);
  const clamp = (v: number) => Math.min(high ?? v, Math.max(low ?? v, v));
  if (TIMEOUT_NAME.test(name)) {
    const text = `${name} ${typeof schema.description === 'string' ? schema.description : ''}`;
    const inSeconds = !/ms\b|millis/i.test(text) && /sec|_s\b|\bs\b/i.test(text);
    const value = clamp(inSeconds ? 60 : 60_000);
    return { value, why: `a timeout in ${inSeconds ? 'seconds' : 'ms'}: generous${value !== (inSeconds ? 60 : 60_000) ? ', within its bounds' : ''}` };
  }
  const value = clamp(1);
  return { value, why: low !== undefined || high !== undefined ? 'a number within its bounds' : 'a number' };
}

/** A detected template and what detection chose or could not choose for the required properties. */
export interface DetectedTemplate {
  arguments: Record<string, unknown>;
  chosen: string[];
  unfilled: string[];
  code?: CodeShape;
}

/** The name of an argv array beside a command string: `{command: "git", args: ["status"]}`. */
const ARGS_PROPERTY = /^(args|arguments|argv|params)$/i;
/** A property that is part of a command (its program, its arguments, its shell or code), never a value a model sets beside it. */
export const isCommandPart = (name: string): boolean => (COMMAND_PROPERTIES as readonly string[]).includes(name) || ARGS_PROPERTY.test(name);
/** Where a server that nests its command (`{request: {command}}`, `{params: {cmd}}`) puts it: names that say command, never a shell's name or code. */
const NESTED_COMMAND_PROPERTIES = ['command', 'cmd', 'argv', 'commandLine', 'script'] as const;

/** An array of strings (or of anything unsaid): what an argv takes. */
const takesArgv = (schema: unknown): boolean => {
  if (!isObject(schema) || !schemaTypes(schema).has('array')) return false;
  const items = schemaTypes(schema.items);
  return items.size === 0 || items.has('string');
};

/** The argv array beside a schema level's command property (`args`, `arguments`, `params`), if there is one. */
function argsBeside({ properties }: ToolSchema, command: string): string | undefined {
  return Object.keys(properties).find((name) => name !== command && ARGS_PROPERTY.test(name) && takesArgv(properties[name]));
}

/**
 * The command's place in one level of a schema: an array gets {{argv}} (no quoting to get wrong), a
 * string {{command}}; a string beside a required argv array gets the program ({{argv0}}) and that
 * array the rest ({{argvRest}}), as such servers spawn them.
 */
function commandTemplate(schema: ToolSchema, property: string): Record<string, unknown> {
  const types = schemaTypes(schema.properties[property]);
  const args = argsBeside(schema, property);
  if (args !== undefined && schema.required.includes(args) && types.has('string')) return { [property]: '{{argv0}}', [args]: '{{argvRest}}' };
  return { [property]: types.has('array') ? '{{argv}}' : '{{command}}' };
}

/** A command one level down, where a tool with none at the top nests it: a (required first) object property holding a command property. */
function nestedCommand({ properties, required }: ToolSchema): { parent: string; level: ToolSchema; property: string } | undefined {
  for (const parent of [...new Set([...required, ...Object.keys(properties)])]) {
    const level = toolSchema({ inputSchema: properties[parent] });
    const property = NESTED_COMMAND_PROPERTIES.find((n) => takesCommand(level.properties[n]));
    if (property !== undefined) return { parent, level, property };
  }
  return undefined;
}

/** Fills a schema level's required properties the template leaves open (valueFor), noting each choice, or that it could not. */
function fillRequired(template: Record<string, unknown>, schema: ToolSchema, notes: { chosen: string[]; unfilled: string[] }, prefix = ''): void {
  for (const property of schema.required) {
    if (property in template) continue;
    const filled = valueFor(property, schema.properties[property]);
    if (!filled) notes.unfilled.push(`${prefix}${property}`);
    else {
      template[property] = filled.value;
      if (filled.value !== '{{cwd}}') notes.chosen.push(`${prefix}${property}: ${JSON.stringify(filled.value)} (${filled.why})`);
    }
  }
}

/**
 * Detects the arguments template from one tool's input schema and description, or undefined if it
 * has nowhere to put a command: at the top level (commandTemplate), or one level down where a
 * server nests it. Every other required property, at either level, gets a value from its schema
 * (valueFor), and those it cannot fill are named (the server then rejects the call: see adapterRejection).
 */
export function detectTemplate(tool: Record<string, unknown>, path?: string): DetectedTemplate | undefined {
  const schema = toolSchema(tool);
  // A code tool gets a program in a language it offers ({{program}}), not a shell line: see harness/languages.ts.
  const code = codeToolOf(tool, path ?? process.env.PATH);
  const name = code?.property ?? commandProperty(tool, schema);
  const nested = name === undefined ? nestedCommand(schema) : undefined;
  if (name === undefined && nested === undefined) return undefined;
  const notes = { chosen: [] as string[], unfilled: [] as string[] };
  let template: Record<string, unknown>;
  if (code) template = { [code.property]: '{{program}}', ...(code.languageProperty ? { [code.languageProperty]: '{{language}}' } : {}) };
  else if (nested) {
    const inner = commandTemplate(nested.level, nested.property);
    fillRequired(inner, nested.level, notes, `${nested.parent}.`);
    template = { [nested.parent]: inner };
  } else template = commandTemplate(schema, name!);
  fillRequired(template, schema, notes);
  const shape = code
    ? { code: { languages: code.languages.map((l) => ({ id: l.language.id, ...(l.value !== undefined ? { value: l.value } : {}) })), missing: code.missing } }
    : {};
  return { arguments: template, ...notes, ...shape };
}

/** Another shape of a tool's command than its template's, as a model may send it: the template to send instead, and how findings name it. */
export interface CommandShape {
  arguments: unknown;
  /** "command as a shell string", "the program in command, its arguments in args". */
  label: string;
}

const COMMAND_SLOTS = new Set(['{{argv}}', '{{command}}', '{{argv0}}']);

/** Where a template holds its command as a whole value: the property's path, at the top level or one level down. */
function commandSlot(template: unknown): string[] | undefined {
  if (!isObject(template)) return undefined;
  const top = Object.keys(template).find((key) => COMMAND_SLOTS.has(template[key] as string));
  if (top !== undefined) return [top];
  for (const [key, value] of Object.entries(template)) {
    const inner = isObject(value) ? Object.keys(value).find((k) => COMMAND_SLOTS.has(value[k] as string)) : undefined;
    if (inner !== undefined) return [key, inner];
  }
  return undefined;
}

/**
 * The other shapes the tool's schema lets its command take, each an argument choice
 * (suites/engine/tool-calls.ts): a string where the template sends an argv array, or an array
 * where it sends a string (a property that takes both, `anyOf`), and the program with the rest of
 * the argv in an `args` array beside a command string. None for a tool whose schema allows no other.
 */
export function commandShapes(tool: { arguments: unknown; inputSchema?: Record<string, unknown> }): CommandShape[] {
  const slot = commandSlot(tool.arguments);
  if (slot === undefined || tool.inputSchema === undefined) return [];
  const [parent, property] = slot.length === 2 ? slot : [undefined, slot[0]!];
  const top = toolSchema({ inputSchema: tool.inputSchema });
  const level = parent === undefined ? top : toolSchema({ inputSchema: top.properties[parent] });
  const template = tool.arguments as Record<string, unknown>;
  const levelTemplate = (parent === undefined ? template : template[parent]) as Record<string, unknown>;
  const current = levelTemplate[property!];
  const types = schemaTypes(level.properties[property!]);
  const at = (values: Record<string, unknown>) =>
    parent === undefined ? { ...template, ...values } : { ...template, [parent]: { ...levelTemplate, ...values } };
  const name = slot.join('.');
  const shapes: CommandShape[] = [];
  if (current === '{{argv}}' && types.has('string')) shapes.push({ arguments: at({ [property!]: '{{command}}' }), label: `${name} as a shell string` });
  if (current === '{{command}}' && types.has('array')) shapes.push({ arguments: at({ [property!]: '{{argv}}' }), label: `${name} as an argv array` });
  const args = argsBeside(level, property!);
  if (current !== '{{argv0}}' && args !== undefined && !(args in levelTemplate) && types.has('string')) {
    const where = parent === undefined ? args : `${parent}.${args}`;
    shapes.push({ arguments: at({ [property!]: '{{argv0}}', [args]: '{{argvRest}}' }), label: `the program in ${name}, its arguments in ${where}` });
  }
  return shapes;
}

/** The detected arguments template alone (detectTemplate), or undefined. */
export function argumentsFromSchema(tool: Record<string, unknown>): unknown | undefined {
  return detectTemplate(tool)?.arguments;
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

/** An exec tool the operator named (flag or config), with or without an arguments template. */
export interface ConfiguredExec {
  tool: string;
  arguments?: unknown;
  source: 'flag' | 'config';
}

const detected = (listed: Record<string, unknown>, found: DetectedTemplate, source: ExecAdapter['source']): ExecAdapter => ({
  tool: String(listed.name),
  arguments: found.arguments,
  source,
  ...(found.chosen.length ? { chosen: found.chosen } : {}),
  ...(found.unfilled.length ? { unfilled: found.unfilled } : {}),
  ...(isObject(listed.inputSchema) ? { inputSchema: listed.inputSchema } : {}),
  ...(found.code ? { code: found.code } : {}),
});

/** One named exec tool as an adapter: its template, or the schema's; a reason when it cannot be driven. */
function configuredAdapter(
  configured: ConfiguredExec,
  tools: Record<string, unknown>[],
  filter?: ToolFilter,
  path?: string,
): ExecAdapter | { missing: string } {
  if (!toolAllowed(filter, configured.tool)) {
    return {
      missing: `tool "${configured.tool}" is not enabled for this server in the Codex config (enabled_tools, disabled_tools): Codex would not call it`,
    };
  }
  const tool = tools.find((t) => t.name === configured.tool);
  if (configured.arguments !== undefined) {
    const inputSchema = tool && isObject(tool.inputSchema) ? { inputSchema: tool.inputSchema } : {};
    return { tool: configured.tool, arguments: configured.arguments, source: configured.source, ...inputSchema };
  }
  if (!tool) return { missing: `the server lists no tool named "${configured.tool}"` };
  const found = detectTemplate(tool, path);
  if (found === undefined) {
    return {
      missing: `tool "${configured.tool}" has no property that takes a command (${COMMAND_PROPERTIES.join(', ')}), and no arguments template places the command`,
    };
  }
  return detected(tool, found, configured.source);
}

/**
 * Chooses the exec adapter: the operator's first (flag or config) wins; otherwise the first listed
 * tool that takes a command. Only tools the filter allows count: Codex neither offers the others
 * to its model nor calls them. Returns a reason when there is none.
 */
export function resolveExecAdapter(
  allTools: Record<string, unknown>[],
  configured?: ConfiguredExec | readonly ConfiguredExec[],
  filter?: ToolFilter,
): ExecAdapter | { missing: string } {
  return resolveExecTools(allTools, {
    configured: configured === undefined ? [] : Array.isArray(configured) ? configured : [configured as ConfiguredExec],
    filter,
  }).primary;
}

/** What the suite does with one listed tool: drives it (and how), or not, and why. */
export interface ToolAccount {
  name: string;
  /** 'primary': the fixed checks' exec tool; 'extra': another exec tool, given the fixed EXEC-1/LAUNCH calls. */
  role?: 'primary' | 'extra';
  adapter?: ExecAdapter;
  /** Why it is not exercised. */
  why?: string;
  /** Set when the operator left it out by name (--skip-tool, "skipTools"): an exec tool no check drove. */
  skipped?: boolean;
  /** Listed only later on a long-lived server: when (e.g. "after notifications/tools/list_changed"). */
  late?: string;
  /** The shapes of the arguments its calls are sent (argumentsShape), set only where they say more than its template. */
  shapes?: unknown[];
  /** What its calls are sent beyond the template, in words: optional properties and their values, a code tool's languages. */
  sent?: string[];
}

/** Every exec tool of a server: the primary (the fixed checks'), the others, and an account of every listed tool. */
export interface ExecTools {
  primary: ExecAdapter | { missing: string };
  extra: ExecAdapter[];
  accounts: ToolAccount[];
}

/** What the operator said about the tools: how to call some (the first named is the primary), and which to leave out. */
export interface ToolChoices {
  configured?: readonly ConfiguredExec[];
  filter?: ToolFilter;
  /** Tools left out by name (--skip-tool, "skipTools"): the only way an exec tool is not driven. */
  skip?: readonly string[];
  /** The PATH the server runs with: a code tool's languages are those whose interpreter is on it. */
  path?: string;
  /** Send tools of session pairs (harness/session-pairs.ts), each with why it is not driven alone: a command needs its session. */
  sessionSends?: ReadonlyMap<string, string>;
}

export const SKIPPED_BY_OPERATOR = 'left out by the operator, by name';

/**
 * Resolves every tool that can run a command. The tools the operator named come first, called as
 * they said (the first is the primary); detection still runs over every other allowed tool, in
 * listing order, since naming how to call one tool says nothing about the others, and a model calls
 * them all. Annotations keep no tool out (MCP's defaults call any tool destructive and open-world):
 * only a name in `skip` does, and its account says so; a session pair's send tool is driven through
 * its pair instead (`sessionSends`). Every listed tool gets an account.
 */
export function resolveExecTools(allTools: Record<string, unknown>[], { configured = [], filter, skip = [], path, sessionSends }: ToolChoices = {}): ExecTools {
  const tools = allTools.filter((t) => toolAllowed(filter, t.name));
  const adapters: ExecAdapter[] = [];
  const accounts = new Map<string, ToolAccount>();
  let missing: string | undefined;
  for (const [i, named] of configured.entries()) {
    const adapter = configuredAdapter(named, tools, filter, path);
    if ('missing' in adapter) {
      if (i === 0) missing = adapter.missing;
      accounts.set(named.tool, { name: named.tool, why: adapter.missing });
    } else adapters.push(adapter);
  }
  for (const tool of allTools) {
    const name = typeof tool.name === 'string' ? tool.name : undefined;
    if (name === undefined || accounts.has(name) || adapters.some((a) => a.tool === name)) continue;
    const inSession = sessionSends?.get(name);
    const account = skip.includes(name)
      ? { name, why: SKIPPED_BY_OPERATOR, skipped: true }
      : inSession !== undefined
        ? { name, why: inSession }
        : accountOf(tool, name, filter, path);
    if ('tool' in account) adapters.push(account);
    else accounts.set(name, account);
  }
  const primary = missing !== undefined ? { missing } : (adapters[0] ?? { missing: EXEC_HINT });
  const ordered = [
    ...adapters.map((adapter, i): ToolAccount => ({ name: adapter.tool, role: i === 0 && !missing ? 'primary' : 'extra', adapter })),
    ...[...accounts.values()],
  ];
  return { primary, extra: missing !== undefined ? adapters : adapters.slice(1), accounts: ordered };
}

/** Detection's verdict on one listed tool: an adapter, or why it is not exercised. */
function accountOf(tool: Record<string, unknown>, name: string, filter: ToolFilter | undefined, path: string | undefined): ExecAdapter | ToolAccount {
  const found = detectTemplate(tool, path);
  if (!toolAllowed(filter, name))
    return { name, why: 'not enabled for this server in the Codex config (enabled_tools, disabled_tools): Codex would not call it' };
  if (found === undefined) {
    return {
      name,
      why: describesRunning(tool) ? 'its description says it runs something, but it has no property the suite can place a command in' : 'no command-like input',
    };
  }
  if (found.code && found.code.languages.length === 0)
    return {
      name,
      why: `it takes code in ${found.code.missing.join(', ')}, and this machine runs none of them: install one (on the server's PATH) to drive it`,
    };
  return detected(tool, found, 'detected');
}

/** True when the template passes the command as one shell string rather than an argv array. */
export function usesShellString(template: unknown): boolean {
  return JSON.stringify(template).includes('{{command}}');
}

/**
 * Fills a template: "{{argv}}" (a whole string) becomes the argv array, "{{argvRest}}" all of it but
 * the program; "{{command}}" the shell-quoted command, "{{argv0}}" the program as it is; any other
 * "{{name}}" the value of `vars[name]` (e.g. sessionId, cwd), and stays as it is when vars has no such name.
 */
export function renderArguments(template: unknown, argv: string[], vars: Record<string, string> = {}): unknown {
  if (template === '{{argv}}') return [...argv];
  if (template === '{{argvRest}}') return argv.slice(1);
  if (typeof template === 'string') {
    // One pass, so that a substituted value is never itself substituted into.
    return template.replace(/\{\{([A-Za-z0-9_]+)\}\}/g, (whole, name: string) => {
      if (name === 'command') return argv.map(shellQuote).join(' ');
      if (name === 'argv0') return argv[0] ?? '';
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
  /** Detected from tools/list (harness/session-pairs.ts) rather than given by the operator. */
  detected?: DetectedPair;
}

/** What detection found out about a session pair: the send tool's id property, and how the id is read. */
export interface DetectedPair {
  /** The send tool's id property (session, sessionId, terminal_id, pid…): also the first name looked for in the open result. */
  idProperty: string;
  /** The id property takes a number (a pid): the id read is sent as one. */
  numericId: boolean;
  /** How the id is read from the open result, in words (the report header). */
  reads: string;
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

/** Names a session id goes by in an open result, after the send tool's own id property. */
export const SESSION_ID_NAMES = ['sessionId', 'session_id', 'session', 'terminal_id', 'terminalId', 'process_id', 'processId', 'pid', 'id'] as const;
/** "session: abc", "Session ID = 12", "terminal_id: t-3", "pid=1234", "PID 1234": the id after a word that names it. */
const NAMED_ID = /\b(?:session|terminal|process|pid|id)(?:[ _-]?id)?\s*[:=#]\s*([A-Za-z0-9](?:[\w.:-]*\w)?)|\b(?:pid|process)\s+(\d+)\b/i;

/**
 * The session id in a session's open result. With a path, what is there (a string or a number);
 * without one, the first of `names` (then SESSION_ID_NAMES) in structuredContent; else, of the only
 * text block: that name in a JSON object, the id after a word naming it ("session: abc", "pid
 * 1234"), or the whole text (a bare id or number).
 */
export function readSessionId(openResult: unknown, path?: string, names: readonly string[] = []): string | undefined {
  const asId = (value: unknown) => (typeof value === 'string' || typeof value === 'number' ? String(value) : undefined);
  if (path !== undefined) return asId(readPath(openResult, path));
  const keys = [...new Set([...names, ...SESSION_ID_NAMES])];
  const named = (object: Record<string, unknown>) => keys.map((key) => asId(object[key])).find((id) => id !== undefined && id !== '');
  const structured = isObject(openResult) ? openResult.structuredContent : undefined;
  const fromStructured = isObject(structured) ? named(structured) : undefined;
  if (fromStructured !== undefined) return fromStructured;
  const texts = textBlocks(openResult);
  if (texts.length !== 1) return undefined;
  const text = texts[0]!.trim();
  if (text.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (isObject(parsed)) return named(parsed);
    } catch {
      /* not JSON: the text is the id */
    }
  }
  const match = NAMED_ID.exec(text);
  if (match) return match[1] ?? match[2];
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

// ---- the one place a tool call's arguments are built ----

/** A tool and its arguments template: an exec adapter, or a session adapter's open or send. */
export interface ToolTemplate {
  tool: string;
  arguments: unknown;
  /** A code tool's languages: its {{program}} is the command as a program in one of them. */
  code?: CodeShape;
}

/**
 * The command a call asks a tool to run: an argv (for a shell-string tool it is shell-quoted), and
 * for a shell-string tool optionally a script sent as it is (the command grammar's shell forms).
 */
export interface ToolCommand {
  argv: string[];
  script?: string;
}

/**
 * What a call sets besides its command, as a model would choose it (the suites choose: see
 * suites/engine/tool-calls.ts). The fields are the places for a model's choices: `optional` is
 * where a working directory, a timeout, booleans, enums, an env map, stdin or a permission request
 * go, by property name; today every call sends the template's own properties only.
 */
export interface ArgumentValues {
  /** The template's variables: {{cwd}} (the scenario's workspace), {{sessionId}} (a session adapter's send). */
  vars?: Record<string, string>;
  /** Optional properties of the tool's schema, set by name (over the template's, never over the command's). */
  optional?: Readonly<Record<string, unknown>>;
  /** Properties added to the arguments whatever the schema says (AUTH-1's authority smuggled in them); an object template only. */
  extra?: Readonly<Record<string, unknown>>;
  /** A code tool's language for this call (default: the first it offers that this machine runs). */
  language?: LanguageId;
  /** Another shape of the command than the template's (commandShapes): its template is sent instead. */
  shape?: CommandShape;
}

/** A tool call's arguments, and its command as the server gets it. */
export interface BuiltArguments {
  arguments: unknown;
  /** A code tool's call: the language its program is in. */
  language?: string;
  /** For an argv tool the argv sent (it must follow `--` exactly when launched directly); undefined for a shell-string tool. */
  argv?: string[];
  /** The command as one line: the script, or the argv shell-quoted. */
  line: string;
}

/** Whether a template's arguments are an object, so that properties can be set on them (optional values, smuggled ones). */
export const takesProperties = (template: unknown): boolean => isObject(renderArguments(template, []));

/**
 * Builds the arguments of a call of `tool` that runs `command`, with `values`: the template's (or
 * the chosen shape's) {{argv}} / {{command}} (the script verbatim, for a shell-string tool given
 * one) and variables filled, then the chosen optional properties and any extra ones set on an object.
 */
export function toolArguments(tool: ToolTemplate, command: ToolCommand, values: ArgumentValues = {}): BuiltArguments {
  const base = values.shape?.arguments ?? tool.arguments;
  const shellString = usesShellString(base);
  const template = command.script !== undefined && shellString ? withScript(base, command.script) : base;
  const program = programFor(tool, command.argv, values.language);
  const vars = { ...values.vars, ...program?.vars };
  const rendered = renderArguments(template, command.argv, vars);
  // Optional values may name the template's variables too ({{cwd}}, a subdirectory).
  const added = renderArguments({ ...values.optional, ...values.extra }, command.argv, vars) as Record<string, unknown>;
  const args = isObject(rendered) && Object.keys(added).length > 0 ? withValues(rendered, added) : rendered;
  const quoted = command.argv.map(shellQuote).join(' ');
  if (program) return { arguments: args, line: program.vars.program, language: program.label };
  return { arguments: args, ...(shellString ? {} : { argv: command.argv }), line: shellString ? (command.script ?? quoted) : quoted };
}

/** Arguments with values set over them: a name with a path (`request.cwd`) inside the object the template puts there. */
function withValues(rendered: Record<string, unknown>, values: Record<string, unknown>): Record<string, unknown> {
  const out = { ...rendered };
  for (const [name, value] of Object.entries(values)) {
    const dot = name.indexOf('.');
    const parent = dot > 0 && !(name in rendered) ? name.slice(0, dot) : undefined;
    const level = parent !== undefined ? out[parent] : undefined;
    if (parent !== undefined && isObject(level)) out[parent] = { ...level, [name.slice(dot + 1)]: value };
    else out[name] = value;
  }
  return out;
}

/** For a code tool ({{program}} in its template): the command as a program in the call's language, and that language's value. */
function programFor(
  tool: ToolTemplate,
  argv: string[],
  chosen: LanguageId | undefined,
): { vars: { program: string; language: string }; label: string } | undefined {
  if (!JSON.stringify(tool.arguments).includes('{{program}}')) return undefined;
  const offered = tool.code?.languages ?? [];
  const pick = offered.find((l) => l.id === chosen) ?? offered[0];
  const language = LANGUAGES.find((l) => l.id === (pick?.id ?? 'shell'))!;
  return { vars: { program: language.program(argv), language: pick?.value ?? language.id }, label: language.label };
}

/**
 * The shape of the arguments a tool is sent with `optional` set: its template, with the optional
 * properties' values in place. The report header shows it where it differs from the template.
 */
export function argumentsShape(tool: ToolTemplate, optional: Readonly<Record<string, unknown>> = {}): unknown {
  return isObject(tool.arguments) && Object.keys(optional).length > 0 ? { ...tool.arguments, ...optional } : tool.arguments;
}
