import {
  COMMAND_PROPERTIES,
  schemaTypes,
  takesCommand,
  toolAllowed,
  toolSchema,
  valueFor,
  type SessionAdapter,
  type ToolFilter,
  type ToolSchema,
} from './exec-adapter.js';
import { isObject } from './json.js';

/**
 * Session pairs found in a tool list: an *open* tool that starts a session, shell, terminal or
 * process and answers with its id, and a *send* tool that takes that id and a command (Codex's
 * exec_command / write_stdin, Desktop Commander's start_process / interact_with_process, a
 * terminal server's terminal_id). The suite drives them as a session adapter the operator wrote.
 */

/** Names of a send tool's id property. `id` counts only when its description says what it is the id of. */
const ID_NAMES = ['session', 'sessionId', 'session_id', 'terminal_id', 'terminalId', 'process_id', 'processId', 'pid'];
const ID_OF_SESSION = /\b(session|terminal|process|shell|pty)\b/i;
/** Besides COMMAND_PROPERTIES, where a send tool takes what it writes to the session (Codex's write_stdin: chars). */
const SEND_INPUTS = ['input', 'chars', 'line', 'keys', 'stdin'];
/** A pair sending through SEND_INPUTS must say it runs things somewhere in its names or descriptions (not a chat's "input"). */
const RUNS_THINGS = /shell|terminal|process|command|stdin|pty|repl|console|bash|exec/i;
/** What a session is called: in an open tool's name or description, and in a pair's shared words. */
const SESSION_NOUN = /^(sessions?|shells?|terminals?|term|process(es)?|pty|repl|console)$/i;
const OPEN_VERB = /^(open|start|create|new|spawn|launch|begin)s?$/i;
const OPENS_SESSION = /\b(opens?|starts?|creates?|spawns?|launch(es)?|begins?)\b[^.]{0,60}?\b(sessions?|shells?|terminals?|process(es)?|pty|repl|console)\b/i;

/** A send tool: its id property and where the command goes. */
interface SendShape {
  idProperty: string;
  numericId: boolean;
  arguments: Record<string, unknown>;
  /** It takes what it sends in one of SEND_INPUTS, not a command property. */
  viaInput: boolean;
}

const words = (name: string) => name.split(/[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])/).filter(Boolean);
const description = (tool: Record<string, unknown>) => (typeof tool.description === 'string' ? tool.description : '');

/** The id property of a would-be send tool: a required one named as a session id, or an `id` whose description says so. */
function idPropertyOf(tool: Record<string, unknown>, { properties, required }: ToolSchema): string | undefined {
  const named = required.find((name) => ID_NAMES.includes(name));
  if (named !== undefined) return named;
  if (!required.includes('id')) return undefined;
  const schema = properties.id;
  const said = `${isObject(schema) && typeof schema.description === 'string' ? schema.description : ''} ${description(tool)}`;
  return ID_OF_SESSION.test(said) ? 'id' : undefined;
}

/** A tool that sends a command to a session: a command-like input beside a required session id; its arguments template. */
export function sendShape(tool: Record<string, unknown>): SendShape | undefined {
  const schema = toolSchema(tool);
  const idProperty = idPropertyOf(tool, schema);
  if (idProperty === undefined) return undefined;
  const command = [...COMMAND_PROPERTIES, ...SEND_INPUTS].find((name) => name !== idProperty && takesCommand(schema.properties[name]));
  if (command === undefined) return undefined;
  const types = schemaTypes(schema.properties[idProperty]);
  const numericId = !types.has('string') && (types.has('integer') || types.has('number'));
  const template: Record<string, unknown> = {
    [idProperty]: '{{sessionId}}',
    [command]: schemaTypes(schema.properties[command]).has('array') ? '{{argv}}' : '{{command}}',
  };
  const viaInput = SEND_INPUTS.includes(command);
  return fillRequired(template, schema) ? { idProperty, numericId, arguments: template, viaInput } : undefined;
}

/** Fills the template's other required properties from the schema; false when one cannot be filled. */
function fillRequired(template: Record<string, unknown>, schema: ToolSchema): boolean {
  for (const property of schema.required) {
    if (property in template) continue;
    const filled = valueFor(property, schema.properties[property]);
    if (!filled) return false;
    template[property] = filled.value;
  }
  return true;
}

/** A tool that opens a session, by its name or description, and its arguments template (the session shell as its command, if it takes one). */
export function openShape(tool: Record<string, unknown>): Record<string, unknown> | undefined {
  const name = typeof tool.name === 'string' ? tool.name : '';
  const parts = words(name);
  const byName = parts.some((w) => OPEN_VERB.test(w)) && parts.some((w) => SESSION_NOUN.test(w));
  if ((!byName && !OPENS_SESSION.test(description(tool))) || sendShape(tool)) return undefined;
  const schema = toolSchema(tool);
  const command = COMMAND_PROPERTIES.find((n) => takesCommand(schema.properties[n]));
  const template: Record<string, unknown> =
    command === undefined ? {} : { [command]: schemaTypes(schema.properties[command]).has('array') ? '{{argv}}' : '{{command}}' };
  return fillRequired(template, schema) ? template : undefined;
}

/** How well an open tool matches a send tool: shared words in their names, and each naming the other or the id. */
function affinity(open: Record<string, unknown>, send: Record<string, unknown>, idProperty: string): number {
  const nouns = (tool: Record<string, unknown>) => new Set(words(String(tool.name)).map((w) => w.toLowerCase()));
  const openNouns = nouns(open);
  const shared = [...nouns(send)].filter((w) => openNouns.has(w) && !OPEN_VERB.test(w)).length;
  const mentions = (text: string, word: string) =>
    word !== '' && new RegExp(`(^|[^A-Za-z0-9_])${word.replace(/[^A-Za-z0-9_]/g, '\\$&')}($|[^A-Za-z0-9_])`, 'i').test(text);
  return (
    2 * shared +
    (mentions(description(send), String(open.name)) ? 3 : 0) +
    (mentions(description(open), idProperty) ? 1 : 0) +
    (mentions(description(open), String(send.name)) ? 1 : 0)
  );
}

/** How a detected pair's id is read from the open result, in words. */
const readsOf = (idProperty: string) =>
  `its id read from the open result: structuredContent.${idProperty} (or sessionId, session_id, pid…), a JSON text's, "${idProperty}: <id>"-like text, or a bare id or number`;

/**
 * Every session pair in a tool list, each send tool with its best-matching open tool (shared name
 * words, descriptions naming the other tool or the id; with no such sign, only a lone open tool
 * beside a lone send tool).
 * Only tools the filter allows count, as for exec tools.
 */
export function detectSessionPairs(allTools: readonly Record<string, unknown>[], filter?: ToolFilter): SessionAdapter[] {
  const tools = allTools.filter((t) => typeof t.name === 'string' && toolAllowed(filter, t.name));
  const opens = tools.flatMap((tool) => {
    const template = openShape(tool);
    return template ? [{ tool, template }] : [];
  });
  const sends = tools.flatMap((tool) => {
    const send = sendShape(tool);
    return send ? [{ tool, send }] : [];
  });
  const pairs: SessionAdapter[] = [];
  for (const { tool, send } of sends) {
    if (opens.length === 0) continue;
    const ranked = opens.map((open) => ({ open, score: affinity(open.tool, tool, send.idProperty) })).sort((a, b) => b.score - a.score);
    const best = ranked[0]!;
    // Nothing ties them: a guess only when there is nothing else to pair.
    if (best.score === 0 && (opens.length > 1 || sends.length > 1)) continue;
    const said = [best.open.tool, tool].map((t) => `${String(t.name)} ${description(t)}`).join(' ');
    if (send.viaInput && !RUNS_THINGS.test(said)) continue;
    pairs.push({
      open: { tool: String(best.open.tool.name), arguments: best.open.template },
      send: { tool: String(tool.name), arguments: send.arguments },
      detected: { idProperty: send.idProperty, numericId: send.numericId, reads: readsOf(send.idProperty) },
    });
  }
  return pairs;
}

/** The send tools of these pairs, by name: not exec tools of their own (a command needs the session). */
export const sendTools = (pairs: readonly SessionAdapter[]): Set<string> => new Set(pairs.map((pair) => pair.send.tool));

/**
 * A queue pair: a *submit* tool that takes a command and answers with a job id (submit, enqueue,
 * start_job, spawn…), and a *collect* tool that takes only that id (result, wait, output, status…)
 * and may be the call that runs it. Found as session pairs are: by names, shared words, and the id.
 */
export interface QueuePair {
  submit: { tool: string; arguments: Record<string, unknown> };
  collect: { tool: string; arguments: Record<string, unknown> };
  /** The collect tool's id property: also the first name looked for in the submit result. */
  idProperty: string;
  numericId: boolean;
}

const SUBMIT_VERB = /^(submit|enqueue|queue|schedule|spawn|start|dispatch|launch|run)s?$/i;
const JOB_NOUN = /^(jobs?|tasks?|work|batch|commands?|runs?|builds?)$/i;
const COLLECT_WORD = /^(results?|wait|await|output|outputs|status|collect|poll|get|fetch|join|retrieve)$/i;
/** A collect tool's id: a job's, a task's or a run's, or a plain `id`. */
const JOB_ID = /^(id|job|task|run|ticket|handle)$|^(job|task|run|ticket|handle)_?id$/i;

/** A tool that queues a command: a submit verb in its name (beside a job noun, unless the verb says queueing), and a command property. */
function submitShape(tool: Record<string, unknown>): Record<string, unknown> | undefined {
  const parts = words(String(tool.name ?? ''));
  const verb = parts.find((w) => SUBMIT_VERB.test(w));
  if (!verb || (!/^(submit|enqueue|queue|schedule)/i.test(verb) && !parts.some((w) => JOB_NOUN.test(w)))) return undefined;
  const schema = toolSchema(tool);
  const command = COMMAND_PROPERTIES.find((n) => takesCommand(schema.properties[n]));
  if (command === undefined || sendShape(tool)) return undefined;
  const template: Record<string, unknown> = { [command]: schemaTypes(schema.properties[command]).has('array') ? '{{argv}}' : '{{command}}' };
  return fillRequired(template, schema) ? template : undefined;
}

/** A tool that collects a queued command by its id: a collect word in its name, a required job id, and no command of its own. */
function collectShape(tool: Record<string, unknown>): { idProperty: string; numericId: boolean; arguments: Record<string, unknown> } | undefined {
  if (!words(String(tool.name ?? '')).some((w) => COLLECT_WORD.test(w))) return undefined;
  const schema = toolSchema(tool);
  if (COMMAND_PROPERTIES.some((n) => takesCommand(schema.properties[n]))) return undefined;
  const idProperty = schema.required.find((name) => JOB_ID.test(name));
  if (idProperty === undefined) return undefined;
  const types = schemaTypes(schema.properties[idProperty]);
  const template: Record<string, unknown> = { [idProperty]: '{{jobId}}' };
  if (!fillRequired(template, schema)) return undefined;
  return { idProperty, numericId: !types.has('string') && (types.has('integer') || types.has('number')), arguments: template };
}

/** Every queue pair in a tool list: each collect tool with its best-matching submit tool (shared name words; alone, a lone pair). */
export function detectQueuePairs(allTools: readonly Record<string, unknown>[], filter?: ToolFilter): QueuePair[] {
  const tools = allTools.filter((t) => typeof t.name === 'string' && toolAllowed(filter, t.name));
  const submits = tools.flatMap((tool) => {
    const template = submitShape(tool);
    return template ? [{ tool, template }] : [];
  });
  const collects = tools.flatMap((tool) => {
    const shape = collectShape(tool);
    return shape ? [{ tool, shape }] : [];
  });
  const pairs: QueuePair[] = [];
  for (const { tool, shape } of collects) {
    if (submits.length === 0) continue;
    const ranked = submits.map((submit) => ({ submit, score: affinity(submit.tool, tool, shape.idProperty) })).sort((a, b) => b.score - a.score);
    const best = ranked[0]!;
    if (best.score === 0 && (submits.length > 1 || collects.length > 1)) continue;
    pairs.push({
      submit: { tool: String(best.submit.tool.name), arguments: best.submit.template },
      collect: { tool: String(tool.name), arguments: shape.arguments },
      idProperty: shape.idProperty,
      numericId: shape.numericId,
    });
  }
  return pairs;
}
