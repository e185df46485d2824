import { randomBytes } from 'node:crypto';
import type { ExecAdapter, ToolAccount } from '../harness/exec-adapter.js';
import type { TranscriptEntry } from '../harness/transcript.js';

/**
 * Everything a report repeats from the server under test is hostile input: its serverInfo, its
 * capabilities, its tool results, its stderr. Before any of it reaches a terminal, the GitHub
 * Actions log, a step summary or a file, it goes through two functions here:
 *
 * - `neutralize` (and `neutralizeMultiline`) strips C0/C1 control characters and terminal escape
 *   sequences, so a server cannot hide or repaint our output (`ESC[8m`, cursor moves, OSC titles),
 *   and makes CR (and, on one line, LF) visible, so it cannot overwrite or forge a line;
 * - `redact` replaces secrets (credentials in command lines, URLs, stderr, tool results, and the
 *   exact values the user gave us in secret-looking `--env` variables or a `--url` password).
 *
 * `defuseWorkflowCommands` and `githubSafe` keep server text from being read as a GitHub Actions
 * workflow command (`::error::`, `::add-mask::`, `::stop-commands::`, `##[error]`).
 */

/** What a redacted secret becomes. */
export const REDACTED = '[redacted]';

/** Flag, variable and parameter names that usually carry a credential. */
export const SECRET_NAME =
  '[\\w.-]*(?:token|secret|passw(?:or)?d|api[-_]?key|apikey|auth(?!or(?:ity|s)?\\b)|credential|private[-_]?key|access[-_]?key)[\\w.-]*';
const SECRET_NAME_RE = new RegExp(`^${SECRET_NAME}$`, 'i');

/** True for a name (an environment variable, a flag, a JSON key) that usually carries a credential. */
export const looksSecret = (name: string): boolean => SECRET_NAME_RE.test(name.replace(/^-+/, ''));

// ------------------------------------------------------------------------------------------------
// Control characters and escape sequences
// ------------------------------------------------------------------------------------------------

/**
 * Terminal escape sequences, 7-bit (ESC ...) and 8-bit (C1 introducers):
 *   CSI  ESC [ / 0x9b  params intermediates final
 *   OSC  ESC ] / 0x9d  ... BEL or ST (ESC \ or 0x9c)
 *   DCS, SOS, PM, APC  ESC P X ^ _ / 0x90 0x98 0x9e 0x9f  ... ST
 *   other two- and three-byte ESC sequences (charset selection, keypad modes, RIS, ...)
 */
const ESCAPE_SEQUENCE = new RegExp(
  [
    '(?:\\x1b\\[|\\x9b)[\\x30-\\x3f]*[\\x20-\\x2f]*[\\x40-\\x7e]',
    '(?:\\x1b\\]|\\x9d)[^\\x07\\x1b\\x9c]*(?:\\x07|\\x1b\\\\|\\x9c)',
    '(?:\\x1b[PX^_]|[\\x90\\x98\\x9e\\x9f])[^\\x1b\\x9c]*(?:\\x1b\\\\|\\x9c)',
    '\\x1b[\\x20-\\x2f]*[\\x30-\\x7e]',
  ].join('|'),
  'g',
);
/** C0 controls but TAB, LF and CR (handled apart), DEL, C1 controls. */
const CONTROL = /[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]/g;
/** Bidirectional overrides and isolates: they reorder what a reader sees ("Trojan Source"). */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function stripControls(text: string): string {
  return text.replace(ESCAPE_SEQUENCE, '').replace(CONTROL, '').replace(BIDI, '');
}

/**
 * Text that must stay on one line: escape sequences and control characters removed (TAB kept),
 * CR and LF (and the Unicode line and paragraph separators) shown as the two characters `\r`, `\n`.
 */
export function neutralize(text: string): string {
  return stripControls(String(text))
    .replace(/\r/g, '\\r')
    .replace(/\n/g, '\\n')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/**
 * Text that may span lines: escape sequences and control characters removed (TAB kept), LF and
 * CRLF kept, a lone CR (which would return to the start of the line and overwrite it) shown as
 * `\r`, the Unicode line and paragraph separators made LF. `lines: true` also turns CRLF into LF,
 * for a terminal or a file that should hold no CR at all.
 */
export function neutralizeMultiline(text: string, options: { lines?: boolean } = {}): string {
  const out = stripControls(String(text))
    .replace(/\r(?!\n)/g, '\\r')
    .replace(/[\u2028\u2029]/g, '\n');
  return options.lines ? out.replace(/\r\n/g, '\n') : out;
}

/** True when the text holds a raw control character other than TAB and LF (what the tests look for). */
export const hasControl = (text: string): boolean => /[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(text);

// ------------------------------------------------------------------------------------------------
// Secrets
// ------------------------------------------------------------------------------------------------

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Exact secrets shorter than this are not searched for: replacing every "1" in a report helps nobody. */
export const MIN_SECRET_LENGTH = 4;

// Secret-named values (built once: redact runs on every string of every transcript).
const SECRET_QUERY = new RegExp(`([?&;]${SECRET_NAME}=)[^&#\\s"']*`, 'gi');
const SECRET_OPTION = new RegExp(`((?:^|[\\s"'\`(\\[{,;])--?${SECRET_NAME})(=|\\s+)(?!-)("[^"]*"|'[^']*'|[^\\s"'\`]+)`, 'gi');
const SECRET_ASSIGNMENT = new RegExp(`((?:^|[^\\w.-])${SECRET_NAME})=("[^"]*"|'[^']*'|[^\\s"'\`]+)`, 'gi');
const SECRET_JSON_FIELD = new RegExp(`("${SECRET_NAME}"\\s*:\\s*")((?:[^"\\\\]|\\\\.)*)"`, 'gi');

/** Common credential shapes, whatever they are called. */
const TOKEN_SHAPES = [
  /\bgh[pousr]_[A-Za-z0-9]{16,}/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{16,}/g,
  /\bsk-[A-Za-z0-9_-]{12,}/g, // OpenAI, Stripe (sk-live-..., sk-proj-...)
  /\b[rp]k_(?:live|test)_[A-Za-z0-9]{8,}/g, // Stripe
  /\bxox[abposr]-[A-Za-z0-9-]{8,}/g, // Slack
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key ids
  /\bAIza[0-9A-Za-z_-]{30,}/g, // Google API keys
  /\bglpat-[A-Za-z0-9_-]{16,}/g, // GitLab
  /\bnpm_[A-Za-z0-9]{30,}/g,
  /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, // JWTs
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
];

/**
 * Replaces every secret in free text with `[redacted]`, in one pass of these rules:
 * - each exact string of `extraSecrets` (what the user gave us as secrets; at least 4 characters);
 * - `Authorization: ...`, `Cookie: ...` headers (the rest of the line), `Bearer x` and `Basic x`;
 * - the password in a URL's userinfo (`http://user:[redacted]@host`) and key-like query parameters;
 * - `--token x`, `--password=x`, `API_KEY=x`, `"apiKey": "x"`, for names that look secret;
 * - common token shapes (`ghp_…`, `sk-…`, `xoxb-…`, JWTs, AWS key ids, private-key blocks).
 */
export function redact(text: string, extraSecrets: readonly string[] = []): string {
  let out = String(text);
  const exact = [...new Set(extraSecrets)].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  if (exact.length) out = out.replace(new RegExp(exact.map(escapeRegExp).join('|'), 'g'), REDACTED);
  out = out
    .replace(/\b((?:proxy-)?authorization|cookie|set-cookie|x-api-key)(\s*[:=]\s*)(?!\[redacted\])[^\r\n"]*/gi, `$1$2${REDACTED}`)
    .replace(/\b(Bearer)(\s+)(?!\[redacted\])[\w.~+/=-]{3,}/gi, `$1$2${REDACTED}`)
    .replace(/\b(Basic)(\s+)(?!\[redacted\])[A-Za-z0-9+/]{6,}={0,2}/g, `$1$2${REDACTED}`)
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi, `$1${REDACTED}@`)
    .replace(SECRET_QUERY, `$1${REDACTED}`)
    .replace(SECRET_OPTION, `$1$2${REDACTED}`)
    .replace(SECRET_ASSIGNMENT, (match, name: string, value: string) => (value.startsWith(REDACTED) ? match : `${name}=${REDACTED}`))
    .replace(SECRET_JSON_FIELD, (match, head: string, value: string) => (value === '' || value === REDACTED ? match : `${head}${REDACTED}"`));
  for (const shape of TOKEN_SHAPES) out = out.replace(shape, REDACTED);
  return out;
}

/** Secrets the user gave us: values of `--env NAME=VALUE` (and config env) whose names look secret. */
export function envSecrets(env: Record<string, string>): string[] {
  return Object.entries(env)
    .filter(([name, value]) => looksSecret(name) && value.length > 0)
    .map(([, value]) => value);
}

/** The password (and user:password in Basic form) of a URL given with credentials. */
export function urlSecrets(text: string | undefined): string[] {
  if (!text) return [];
  try {
    const url = new URL(text);
    if (!url.password) return [];
    const password = decodeURIComponent(url.password);
    const user = decodeURIComponent(url.username);
    return [url.password, password, Buffer.from(`${user}:${password}`).toString('base64')];
  } catch {
    const match = /:\/\/[^\s:/@]*:([^\s@/]+)@/.exec(text);
    return match ? [match[1]!] : [];
  }
}

// ------------------------------------------------------------------------------------------------
// Structured values
// ------------------------------------------------------------------------------------------------

/**
 * Applies `fix` to every string in a JSON-like value, keys included, and redacts the string value
 * of any key that looks secret. Returns a new value; the input is not changed.
 */
export function mapStrings(value: unknown, fix: (text: string) => string, secretKeys = true): unknown {
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return fix(v);
    if (depth > 64 || typeof v !== 'object' || v === null) return v;
    if (Array.isArray(v)) return v.map((item) => walk(item, depth + 1));
    return Object.fromEntries(
      Object.entries(v).map(([key, inner]) => [
        fix(key),
        secretKeys && typeof inner === 'string' && inner !== '' && looksSecret(key) ? REDACTED : walk(inner, depth + 1),
      ]),
    );
  };
  return walk(value, 0);
}

// ------------------------------------------------------------------------------------------------
// GitHub Actions workflow commands
// ------------------------------------------------------------------------------------------------

/**
 * Server text that cannot be read as a workflow command wherever it lands: a line that starts
 * (after blanks, which the runner trims) with `::` gets a backslash before it, and every `##[`
 * (the runner's older syntax, found anywhere in a line) becomes `#\#[`. Applied after neutralizing.
 */
export function defuseWorkflowCommands(text: string): string {
  return text.replace(/##\[/g, '#\\#[').replace(/(^|\n)([ \t]*)::/g, '$1$2\\::');
}

/** The whole sanitation of one piece of server-derived, possibly multi-line text. */
export function sanitizeText(text: string, extraSecrets: readonly string[] = []): string {
  return defuseWorkflowCommands(redact(neutralizeMultiline(text), extraSecrets));
}

/** A token for `::stop-commands::`, not found in `text`. */
export function stopToken(text: string): string {
  for (;;) {
    const token = `msc-${randomBytes(16).toString('hex')}`;
    if (!text.includes(token)) return token;
  }
}

/**
 * Wraps untrusted multi-line text in GitHub's own `::stop-commands::<token>` … `::<token>::`, so the
 * runner processes no workflow command inside it. Lines inside are still defused, should the text
 * ever be read without the wrapper.
 */
export function githubSafe(block: string): string {
  const body = defuseWorkflowCommands(block.replace(/\n$/, ''));
  const token = stopToken(body);
  return `::stop-commands::${token}\n${body}\n::${token}::\n`;
}

/** True when running as a GitHub Actions step. */
export const inGithubActions = (env: NodeJS.ProcessEnv = process.env): boolean => env.GITHUB_ACTIONS === 'true';

/**
 * Escapes JSON text further, keeping it the same JSON value: raw C1 controls, DEL and the line
 * separators become \u escapes, and the `#` of `##[` (a workflow command anywhere in a line, should
 * the file ever be printed in an Actions log) becomes \u0023. `#` and those characters only occur
 * inside JSON strings, where the escapes mean the same characters.
 */
export const jsonSafe = (json: string): string =>
  json.replace(/[\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).replace(/##\[/g, '#\\u0023[');

// ------------------------------------------------------------------------------------------------
// A whole run, before any reporter sees it
// ------------------------------------------------------------------------------------------------

/** Fields of a check result and a run that carry server-derived text. */
interface SanitizableResult {
  message?: string;
  expected?: unknown;
  actual?: unknown;
  diff?: string[];
  counterexample?: unknown;
  control?: unknown;
}
interface SanitizableRun<R extends SanitizableResult> {
  results: R[];
  scenarios: { transcript: TranscriptEntry[] }[];
  startFailure?: { message: string; stderrTail: string };
  serverInfo?: unknown;
  capabilities?: unknown;
  exec?: ExecAdapter;
  tools?: ToolAccount[];
  elicitation?: { requests: { message: string }[] };
}

/** A transcript with its secrets redacted; control characters kept (the JSONL escapes them, displays neutralize them). */
export function redactTranscript(entries: TranscriptEntry[], secrets: readonly string[]): TranscriptEntry[] {
  const fix = (text: string) => redact(text, secrets);
  return entries.map((entry): TranscriptEntry => {
    switch (entry.dir) {
      case 'host->server':
      case 'server->host':
        return { ...entry, message: mapStrings(entry.message, fix) };
      case 'server-stdout-garbage':
        return { ...entry, line: fix(entry.line) };
      case 'server-stderr':
      case 'note':
        return { ...entry, text: fix(entry.text) };
      default:
        return mapStrings(entry, fix) as TranscriptEntry;
    }
  });
}

/**
 * The run as every reporter gets it: each piece of server-derived text neutralized (multi-line
 * form), redacted and defused; transcripts redacted. One pass, so no reporter can forget one.
 */
export function sanitizeRun<R extends SanitizableResult, T extends SanitizableRun<R>>(run: T, secrets: readonly string[]): T {
  const text = (value: string) => sanitizeText(value, secrets);
  const deep = (value: unknown) => mapStrings(value, text);
  // The tool name, the template and the chosen values come from the server's tool list.
  const sanitizeExec = (exec: ExecAdapter): ExecAdapter => ({
    ...exec,
    tool: text(exec.tool),
    arguments: deep(exec.arguments),
    ...(exec.chosen ? { chosen: exec.chosen.map(text) } : {}),
    ...(exec.unfilled ? { unfilled: exec.unfilled.map(text) } : {}),
  });
  const results = run.results.map((r) => ({
    ...r,
    ...(r.message !== undefined ? { message: text(r.message) } : {}),
    ...(r.expected !== undefined ? { expected: deep(r.expected) } : {}),
    ...(r.actual !== undefined ? { actual: deep(r.actual) } : {}),
    ...(r.diff !== undefined ? { diff: r.diff.map(text) } : {}),
    ...(r.counterexample !== undefined ? { counterexample: deep(r.counterexample) } : {}),
    // A control's call holds the server's answer.
    ...(r.control !== undefined ? { control: deep(r.control) } : {}),
  }));
  return {
    ...run,
    results,
    scenarios: run.scenarios.map((s) => ({ ...s, transcript: redactTranscript(s.transcript, secrets) })),
    ...(run.startFailure ? { startFailure: { message: text(run.startFailure.message), stderrTail: text(run.startFailure.stderrTail) } } : {}),
    ...(run.serverInfo !== undefined ? { serverInfo: deep(run.serverInfo) } : {}),
    ...(run.capabilities !== undefined ? { capabilities: deep(run.capabilities) } : {}),
    ...(run.exec ? { exec: sanitizeExec(run.exec) } : {}),
    ...(run.tools
      ? {
          tools: run.tools.map((t) => ({
            ...t,
            name: text(t.name),
            ...(t.adapter ? { adapter: sanitizeExec(t.adapter) } : {}),
            ...(t.why ? { why: text(t.why) } : {}),
          })),
        }
      : {}),
    ...(run.elicitation ? { elicitation: { ...run.elicitation, requests: run.elicitation.requests.map((r) => ({ ...r, message: text(r.message) })) } } : {}),
  };
}
