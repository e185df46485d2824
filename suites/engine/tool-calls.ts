import type { SandboxEntries } from '../../harness/codex-wire.js';
import { isRefusal, type RawOutcome } from '../../harness/codex-session.js';
import {
  argumentsShape,
  commandShapes,
  isCommandPart,
  readSessionId,
  toolArguments,
  schemaTypes,
  valueFor,
  type CommandShape,
  type ExecAdapter,
  type SessionAdapter,
  type ToolAccount,
} from '../../harness/exec-adapter.js';
import { isObject } from '../../harness/json.js';
import { LANGUAGES, type LanguageId } from '../../harness/languages.js';
import { commandText } from './judge.js';
import { authorityOf } from './monitor.js';
import type { CallOptions, IsolatedContext } from './model.js';

/**
 * The suites' side of the one seam that builds a tool call's arguments (harness/exec-adapter.ts
 * toolArguments): which optional values a call sets, as a model would choose them. Every check,
 * the resident, exploration and the soak build their calls through execProbe (server-calls.ts) and
 * the session calls below, so a choice made here reaches them all.
 */

/** Optional properties of a tool's schema set on a call, by name (a working directory, a timeout, a boolean, an enum…). */
export type OptionalValues = Readonly<Record<string, unknown>>;

/** No optional property set: what every call sends today (the template's own properties only). */
export const NO_OPTIONAL_VALUES: OptionalValues = Object.freeze({});

/** A working directory's name (compared lowercased, without "_" and "-"). */
const CWD_NAMES = new Set(['cwd', 'workdir', 'workingdirectory', 'workingdir', 'dir', 'directory']);
const TIMEOUT = /time_?out|time_?limit|deadline/i;
const ENV = /^(env|environment|env_?vars|environment_?variables)$/i;
const STDIN = /^(stdin|stdin_?text|input_?text)$/i;
const JUSTIFICATION = /^(justification|reason|rationale|explanation)$/i;
/** A property that asks for more permission (Codex's own shell tools take `sandbox_permissions`, `with_escalated_permissions`). */
export const ASKS_PERMISSION =
  /escalat|sudo|unsandbox|sandbox_?permission|danger|bypass|elevat|privileg|no_?sandbox|allow_?all|yolo|full_?access|unrestricted/i;
/** Enum values beyond which a long enum is sampled (its first ones and any that ask for permission). */
const ENUM_BUDGET = 12;

/** A large number where the schema sets no maximum: a timeout of an hour (in its unit), else a million. */
const LARGE = { ms: 3_600_000, s: 3_600, other: 1_000_000 } as const;
/** A string for a property with a `format`: one a model would give. */
const FORMATTED: Record<string, string> = {
  uri: 'https://example.com/',
  url: 'https://example.com/',
  email: 'dev@example.com',
  'date-time': '2026-01-01T00:00:00Z',
  date: '2026-01-01',
  time: '00:00:00Z',
  uuid: '00000000-0000-4000-8000-000000000000',
  hostname: 'example.com',
  ipv4: '127.0.0.1',
};
/** A string that names what runs the command or as whom (a shell, an interpreter, a user, an encoding): a plain word there runs nothing, so it gets only what its schema gives. */
const RUNS_WITH = /^(shell|interpreter|executable|exe|runtime|binary|lang|language|user|user_?name|uid|gid|group|encoding|charset|locale)$/i;
/** A plain word for a string property the suite knows nothing about. */
const PLAIN_WORD = 'notes';

/**
 * The values a model may set an optional property to, from its name and schema (`values`, what
 * exploration draws from), and the ones every fixed check sends (`fixed`, one per property, or
 * those the checks always sent: every enum value within budget, a boolean both ways, a working
 * directory at the workspace and at a subdirectory). Enums in full within ENUM_BUDGET (a value that
 * asks for permission always); numbers at the schema's minimum, maximum and a typical value, and a
 * large one when it sets no maximum (a timeout of an hour: fixed, since a server's other path is the
 * long one); strings from their default, examples, enum or format, else a plain word; objects and
 * arrays with one entry. None for a property the suite cannot fill sensibly.
 */
export function choicesOf(name: string, schema: unknown): { values: unknown[]; fixed: unknown[] } {
  const both = (values: unknown[], fixed: unknown[] = values) => ({ values: [...new Set(values)], fixed: [...new Set(fixed)] });
  if (!isObject(schema)) return both([]);
  const types = new Set((Array.isArray(schema.type) ? schema.type : [schema.type]).filter((t): t is string => typeof t === 'string'));
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    const values = schema.enum.filter((v) => ['string', 'number', 'boolean'].includes(typeof v));
    const permissive = values.filter((v) => typeof v === 'string' && ASKS_PERMISSION.test(v));
    return both([...values.slice(0, ENUM_BUDGET), ...permissive]);
  }
  if (types.has('boolean')) return both([true, false]);
  if (CWD_NAMES.has(name.toLowerCase().replace(/[_-]/g, '')) && types.has('string')) return both(['{{cwd}}', '{{subdir}}']);
  if (types.has('number') || types.has('integer')) return numbersOf(name, schema);
  if (ENV.test(name) && types.has('object')) return both([{ TZ: 'UTC' }]);
  if (types.has('string')) {
    if (STDIN.test(name)) return both(['y\n']);
    if (JUSTIFICATION.test(name)) return both(['The build needs to write outside the workspace.']);
    if (ASKS_PERMISSION.test(name)) return both(['require_escalated']);
    const given = [schema.default, ...(Array.isArray(schema.examples) ? schema.examples : [])].filter((v) => typeof v === 'string');
    const formatted = typeof schema.format === 'string' ? FORMATTED[schema.format] : undefined;
    const values = given.length ? given : formatted ? [formatted] : RUNS_WITH.test(name) ? [] : [PLAIN_WORD];
    return both(values, values.slice(0, 1));
  }
  if (types.has('array')) {
    const items = isObject(schema.items) ? schema.items : {};
    const item = choicesOf(name, items).fixed[0] ?? PLAIN_WORD;
    return both([[item]]);
  }
  if (types.has('object')) {
    const properties = isObject(schema.properties) ? Object.entries(schema.properties) : [];
    const [key, property] = properties[0] ?? ['name', { type: 'string' }];
    const value = choicesOf(key, property).fixed[0] ?? PLAIN_WORD;
    return both([{ [key]: value }]);
  }
  return both([]);
}

/** The values of an optional property a model may set (choicesOf's `values`). */
export const valuesOf = (name: string, schema: unknown): unknown[] => choicesOf(name, schema).values;

/** A number's values: its minimum, a typical value (a timeout's generous one), its maximum or, unbounded, a large one (fixed). */
function numbersOf(name: string, schema: Record<string, unknown>): { values: unknown[]; fixed: unknown[] } {
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const integer = schemaTypes(schema).has('integer') && !schemaTypes(schema).has('number');
  const low = num(schema.minimum) ?? (num(schema.exclusiveMinimum) !== undefined ? num(schema.exclusiveMinimum)! + (integer ? 1 : 0.001) : undefined);
  const high = num(schema.maximum) ?? (num(schema.exclusiveMaximum) !== undefined ? num(schema.exclusiveMaximum)! - (integer ? 1 : 0.001) : undefined);
  const typical = num(schema.default) ?? valueFor(name, schema)?.value;
  const timeout = TIMEOUT.test(name);
  const seconds = timeout && valueFor(name, schema)?.why.includes('seconds');
  const large = high ?? (timeout ? (seconds ? LARGE.s : LARGE.ms) : LARGE.other);
  const values = [low, typical, large].filter((v): v is number => typeof v === 'number');
  return { values: [...new Set(values)], fixed: [large] };
}

/** An optional property the suite sets: every value a model may give it, and those the fixed checks send. */
export interface OptionalProperty {
  name: string;
  values: unknown[];
  fixed: unknown[];
}

/**
 * A tool's optional properties the suite sets, each with the values a model may give it (the
 * command's and the template's own left out). Where the command sits one level down
 * (`{request: {command, cwd?}}`), that object's optional properties too, named by their path
 * (`request.cwd`; toolArguments sets them there).
 */
export function optionalProperties(adapter: ExecAdapter): OptionalProperty[] {
  const top = optionalOf(adapter.inputSchema, adapter.arguments);
  const template = isObject(adapter.arguments) ? adapter.arguments : {};
  const parent = Object.keys(template).find((key) => isObject(template[key]) && /\{\{(command|argv|argv0|program)\}\}/.test(JSON.stringify(template[key])));
  const level = parent !== undefined && isObject(adapter.inputSchema?.properties) ? adapter.inputSchema.properties[parent] : undefined;
  const nested = parent !== undefined && isObject(level) ? optionalOf(level, template[parent]).map((p) => ({ ...p, name: `${parent}.${p.name}` })) : [];
  return [...top, ...nested];
}

/** The optional properties of one level of a schema that its template does not set, with their values (a command's parts, say an `args` array or a `shell`, are its shapes', not values). */
function optionalOf(schema: Record<string, unknown> | undefined, template: unknown): OptionalProperty[] {
  const properties = schema && isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
  const inTemplate = isObject(template) ? new Set(Object.keys(template)) : new Set<string>();
  return Object.entries(properties)
    .filter(([name]) => !required.has(name) && !inTemplate.has(name) && !isCommandPart(name))
    .map(([name, property]) => ({ name, ...choicesOf(name, property) }))
    .filter((p) => p.values.length > 0);
}

/** Which values a call may set: the fixed checks' (one per property, or those they always sent), or every one a model may give (exploration's). */
export type ValueScope = 'fixed' | 'all';

/**
 * The choices of optional values a tool's calls are sent with, as a model fills them: none, each
 * property alone at each of its values (`scope`: the fixed checks' or all of them), and all of them
 * together (the permissive value of each that asks for permission: it must change nothing, AUTH-1;
 * else its fixed one).
 */
export function optionalChoices(adapter: ExecAdapter, scope: ValueScope = 'fixed'): OptionalValues[] {
  const properties = optionalProperties(adapter);
  if (properties.length === 0) return [NO_OPTIONAL_VALUES];
  const alone = properties.flatMap((p) => (scope === 'all' ? p.values : p.fixed).map((value) => ({ [p.name]: value })));
  const together = Object.fromEntries(
    properties.map(({ name, fixed }) => [
      name,
      fixed.find((v) => v === true || (typeof v === 'string' && (ASKS_PERMISSION.test(v) || v === '{{subdir}}'))) ?? fixed[0],
    ]),
  );
  return [NO_OPTIONAL_VALUES, ...alone, ...(properties.length > 1 ? [together] : [])];
}

/** One way of calling a tool: the optional values, language or shape of its command a call sets, and how a finding names them. */
export interface ArgumentChoice {
  values: { optional?: OptionalValues; language?: LanguageId; shape?: CommandShape };
  label: string;
}

/**
 * Every way the suite calls a tool, the template alone first: then each other language a code tool
 * offers that this machine runs, each other shape its command takes (commandShapes: a shell string
 * where the template sends an argv, the program and an `args` array), then each choice of optional
 * values (optionalChoices: the fixed checks' by default, exploration's with scope 'all'). A tool
 * gets a choice only where its schema offers one.
 */
export function argumentChoices(adapter: ExecAdapter, scope: ValueScope = 'fixed'): ArgumentChoice[] {
  const languages = (adapter.code?.languages ?? []).slice(1).map((l): ArgumentChoice => ({ values: { language: l.id }, label: `in ${labelOf(l.id)}` }));
  const shapes = commandShapes(adapter).map((shape): ArgumentChoice => ({ values: { shape }, label: `with ${shape.label}` }));
  const optional = optionalChoices(adapter, scope)
    .slice(1)
    .map((values): ArgumentChoice => ({
      values: { optional: values },
      label: `with ${Object.entries(values)
        .map(([k, v]) => `${k} ${JSON.stringify(v)}`)
        .join(', ')}`,
    }));
  return [{ values: {}, label: 'its template' }, ...languages, ...shapes, ...optional];
}

const labelOf = (id: LanguageId) => LANGUAGES.find((l) => l.id === id)!.label;

/** A listed tool's account with the shapes of its command, optional properties and languages its calls are sent, where there are any (the report header). */
export function withShapes(account: ToolAccount): ToolAccount {
  const adapter = account.adapter;
  if (!adapter) return account;
  const choices = optionalChoices(adapter);
  const commands = commandShapes(adapter);
  const shapes = [...commands.map((shape) => shape.arguments), ...(choices.length > 1 ? [argumentsShape(adapter, choices.at(-1))] : [])];
  const properties = optionalProperties(adapter);
  const marked = properties.some((p) => p.fixed.length < p.values.length);
  const optional = properties.map(
    ({ name, values, fixed }) =>
      `${name}: ${values.map((v) => `${JSON.stringify(v)}${fixed.includes(v) && fixed.length < values.length ? '*' : ''}`).join(' | ')}`,
  );
  const languages = adapter.code ? adapter.code.languages.map((l) => labelOf(l.id)) : [];
  const sent = [
    ...commands.map((shape) => `${shape.label} ${JSON.stringify(shape.arguments)}`),
    ...(optional.length
      ? [`each optional property alone and all together (${optional.join('; ')}${marked ? '; the fixed checks send those marked *' : ''})`]
      : []),
    ...(adapter.code ? [`programs in ${languages.join(', ')}${adapter.code.missing.length ? ` (not run here: ${adapter.code.missing.join(', ')})` : ''}`] : []),
  ];
  return { ...account, ...(shapes.length ? { shapes } : {}), ...(sent.length ? { sent } : {}) };
}

/**
 * Opens a session through the session adapter's open tool (it runs the session shell); the id read
 * from the result, when there is one. An open that must run nothing (over HTTP, without valid
 * authority) gets a session shell that runs the probe first, under the call's nonce: a worker the
 * server starts anyway, even one it then refuses to hand out, is the monitor's finding (HTTP-1, EXEC-1).
 */
export async function openSession(
  ctx: Pick<IsolatedContext, 'callTool' | 'observers' | 'transport'>,
  adapter: SessionAdapter,
  sandbox: SandboxEntries,
  options: CallOptions,
): Promise<{ outcome: RawOutcome; id?: string }> {
  const nonce = authorityOf(sandbox, ctx.transport).kind === 'valid' ? undefined : ctx.observers.newNonce();
  const shell = nonce ? await ctx.observers.sessionShellRunningProbe(nonce) : ctx.observers.sessionShellPath;
  const built = toolArguments(adapter.open, { argv: [shell] });
  const command = { form: `a session's worker, to ${adapter.open.tool}`, text: commandText(built.line, ctx.observers.dir) };
  const outcome = await ctx.callTool(adapter.open.tool, built.arguments, sandbox, { ...options, command, ...(nonce ? { nonce } : {}) });
  const names = adapter.detected ? [adapter.detected.idProperty] : [];
  const id = outcome.kind === 'result' && !isRefusal(outcome) ? readSessionId(outcome.result, adapter.sessionId, names) : undefined;
  return { outcome, ...(id !== undefined ? { id } : {}) };
}

/** Sends the probe (with a fresh nonce) to session `id` through the session adapter's send tool; its findings name the session and its open tool. */
export async function sendToSession(
  ctx: Pick<IsolatedContext, 'callTool' | 'observers'>,
  adapter: SessionAdapter,
  id: string,
  sandbox: SandboxEntries,
  options: Omit<CallOptions, 'nonce'>,
): Promise<{ nonce: string; outcome: RawOutcome }> {
  const nonce = ctx.observers.newNonce();
  const built = toolArguments(adapter.send, { argv: ctx.observers.probeCommand(nonce) }, { vars: { sessionId: id } });
  // A send template that is a bare string gets the command line itself; a detected pid-like id goes as a number.
  const numeric = adapter.detected?.numericId && /^\d+$/.test(id) && isObject(built.arguments);
  const args =
    typeof built.arguments === 'string'
      ? built.line
      : numeric
        ? { ...(built.arguments as object), [adapter.detected!.idProperty]: Number(id) }
        : built.arguments;
  // The id is the server's text: a finding shows at most 80 characters of it.
  const command = { form: `simple, to session ${JSON.stringify(id).slice(0, 80)} of ${adapter.open.tool}`, text: commandText(built.line, ctx.observers.dir) };
  return { nonce, outcome: await ctx.callTool(adapter.send.tool, args, sandbox, { ...options, nonce, command }) };
}
