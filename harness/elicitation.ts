import { isObject } from './json.js';

/**
 * How the fake Codex answers a server's `elicitation/create` (MCP 2025-06-18). Codex 0.171.0
 * advertises form and URL elicitation; who answers depends on how Codex runs: a person in the
 * interactive UI, or `codex exec` with `approval_policy = "never"`, which answers every request
 * `{"action": "decline"}`.
 *
 *  - `accept`: as the person at Codex would who wants the command run: a form is filled from its
 *    requested schema (fillForm) and accepted. A URL-mode request is cancelled: there is no browser.
 *  - `decline`: as `codex exec` with approval `never` does, form and URL alike.
 *  - `cancel`: the person dismisses the dialog.
 */
export const ELICITATION_ANSWERS = ['accept', 'decline', 'cancel'] as const;
export type ElicitationAnswer = (typeof ELICITATION_ANSWERS)[number];

/** One elicitation/create the server sent, and what the host answered. */
export interface Elicitation {
  mode: 'form' | 'url';
  /** The server's message (hostile text: reporters sanitize it). */
  message: string;
  action: ElicitationAnswer;
  /** What an accepted form carried. */
  content?: Record<string, unknown>;
  /** The ids of the host's tools/call requests that were awaiting an answer when it arrived. */
  duringCalls: number[];
}

/** The elicitation's mode: `url` only when the server says so (a request without `mode` is a form, as before URL mode existed). */
export const elicitationMode = (params: unknown): 'form' | 'url' => (isObject(params) && params.mode === 'url' ? 'url' : 'form');

/** The JSON-RPC result for one elicitation/create under a policy. */
export function answerElicitation(params: unknown, policy: ElicitationAnswer): { action: ElicitationAnswer; content?: Record<string, unknown> } {
  if (policy !== 'accept') return { action: policy };
  if (elicitationMode(params) === 'url') return { action: 'cancel' };
  const schema = isObject(params) ? params.requestedSchema : undefined;
  return { action: 'accept', content: fillForm(schema) };
}

/**
 * A form filled as a person who agrees would fill it: every property gets its default when it has
 * one, else the first choice of an enum (or of `oneOf`/`anyOf` consts), `true` for a boolean (the
 * confirmation), and a plausible value of its type within its bounds.
 */
export function fillForm(schema: unknown): Record<string, unknown> {
  const properties = isObject(schema) && isObject(schema.properties) ? schema.properties : {};
  const content: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    const value = plausibleValue(property);
    if (value !== undefined) content[name] = value;
  }
  return content;
}

const firstChoice = (schema: Record<string, unknown>): unknown => {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const key of ['oneOf', 'anyOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options)) {
      const first = options.find((o) => isObject(o) && 'const' in o);
      if (isObject(first)) return first.const;
    }
  }
  return undefined;
};

function plausibleValue(property: unknown): unknown {
  if (!isObject(property)) return undefined;
  if ('default' in property) return property.default;
  const choice = firstChoice(property);
  if (choice !== undefined) return choice;
  switch (property.type) {
    case 'boolean':
      return true;
    case 'number':
    case 'integer': {
      const min = typeof property.minimum === 'number' ? property.minimum : undefined;
      const max = typeof property.maximum === 'number' ? property.maximum : undefined;
      const value = min ?? (max !== undefined ? Math.min(max, 1) : 1);
      return property.type === 'integer' ? Math.ceil(value) : value;
    }
    case 'array': {
      const item = isObject(property.items) ? firstChoice(property.items) : undefined;
      return item === undefined ? [] : [item];
    }
    case 'string':
      return plausibleString(property);
    default:
      return undefined;
  }
}

function plausibleString(property: Record<string, unknown>): string {
  const today = new Date().toISOString();
  const byFormat: Record<string, string> = { email: 'user@example.com', uri: 'https://example.com/', date: today.slice(0, 10), 'date-time': today };
  let text = typeof property.format === 'string' && byFormat[property.format] ? byFormat[property.format]! : 'yes';
  const minLength = typeof property.minLength === 'number' ? property.minLength : 0;
  const maxLength = typeof property.maxLength === 'number' ? property.maxLength : Infinity;
  if (text.length < minLength) text = text.padEnd(minLength, 's');
  return text.slice(0, maxLength);
}
