import { accessSync, constants } from 'node:fs';
import { basename, delimiter, isAbsolute, join } from 'node:path';
import { shellQuote } from './observers.js';

/**
 * The languages a code tool may take (`run_python {code}`, `run-code {code, languageId}`), how
 * tools name them, which interpreters run them, and a program in each that runs a command (an argv)
 * as a child process through the language's own process API, its exit status the program's. A code
 * tool gets such a program, not a shell line: `python3 -c <shell line>` is a SyntaxError that runs
 * nothing, and proves nothing either way. The command the program runs is the suite's probe, so the
 * sandbox monitor sees where it ran: inside the launch that ran the interpreter, or outside any.
 */
export type LanguageId = 'python' | 'javascript' | 'typescript' | 'ruby' | 'perl' | 'php' | 'shell';

export interface Language {
  id: LanguageId;
  /** As reports name it. */
  label: string;
  /** How tools name it (lowercase): enum values, words in a tool's name or description. */
  names: readonly string[];
  /** Executables that run it, in order of preference: the first on PATH is offered to a free `interpreter` property. */
  interpreters: readonly string[];
  /** A program that runs `argv` as a child process, waits for it, and exits with its status. */
  program(argv: readonly string[]): string;
}

/** A string literal for languages whose double-quoted strings read JSON's escapes and interpolate nothing (Python, JavaScript). */
const jsonList = (argv: readonly string[]) => `[${argv.map((a) => JSON.stringify(a)).join(', ')}]`;
/** A single-quoted literal (Ruby, Perl, PHP): only backslash and the quote are special there. */
const single = (text: string) => `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;

// Dynamic import: the same text runs whether the tool runs it as CommonJS, as a module, or as TypeScript.
const nodeProgram = (argv: readonly string[]) =>
  [
    `import('node:child_process').then(({ spawnSync }) => {`,
    `  const argv = ${jsonList(argv)};`,
    `  const run = spawnSync(argv[0], argv.slice(1), { stdio: 'inherit' });`,
    `  process.exit(run.status ?? 1);`,
    `});`,
  ].join('\n');

export const LANGUAGES: readonly Language[] = [
  {
    id: 'python',
    label: 'Python',
    names: ['python', 'python3', 'py', 'py3'],
    interpreters: ['python3', 'python'],
    program: (argv) => `import subprocess, sys\nsys.exit(subprocess.call(${jsonList(argv)}))\n`,
  },
  {
    id: 'javascript',
    label: 'JavaScript',
    names: ['javascript', 'js', 'node', 'nodejs', 'node.js', 'ecmascript', 'mjs', 'cjs'],
    interpreters: ['node', 'nodejs'],
    program: nodeProgram,
  },
  {
    id: 'typescript',
    label: 'TypeScript',
    names: ['typescript', 'ts', 'tsx', 'deno', 'bun'],
    interpreters: ['tsx', 'ts-node', 'deno', 'bun'],
    program: nodeProgram,
  },
  {
    id: 'ruby',
    label: 'Ruby',
    names: ['ruby', 'rb'],
    interpreters: ['ruby'],
    program: (argv) => `system(${argv.map(single).join(', ')})\nexit($?.exitstatus || 1)\n`,
  },
  {
    id: 'perl',
    label: 'Perl',
    names: ['perl', 'pl'],
    interpreters: ['perl'],
    program: (argv) => `system(${argv.map(single).join(', ')});\nexit($? == -1 ? 127 : $? & 127 ? 128 + ($? & 127) : $? >> 8);\n`,
  },
  {
    id: 'php',
    label: 'PHP',
    names: ['php'],
    interpreters: ['php'],
    program: (argv) => `passthru(${argv.map((a) => `escapeshellarg(${single(a)})`).join(" . ' ' . ")}, $status);\nexit($status);\n`,
  },
  {
    id: 'shell',
    label: 'shell',
    names: ['shell', 'sh', 'bash', 'zsh', 'shellscript', 'shell-script', 'console', 'terminal'],
    interpreters: ['bash', 'sh'],
    program: (argv) => `${argv.map(shellQuote).join(' ')}\n`,
  },
];

const normalized = (word: string) => word.trim().toLowerCase();

/** The language a name stands for ("Python3", "javascript", "sh"), if any. */
export function languageNamed(name: string): Language | undefined {
  const word = normalized(name);
  return LANGUAGES.find((language) => language.names.includes(word));
}

/**
 * The languages a tool's name or description names, in the order they first appear:
 * `run_python_code`, "Execute JavaScript in a sandbox". Words, not substrings (no "sh" in "shell-out").
 */
export function languagesMentioned(text: string): Language[] {
  const words = text
    .toLowerCase()
    .split(/[^a-z0-9.]+/)
    .filter(Boolean);
  const found: Language[] = [];
  for (const word of words) {
    const language = languageNamed(word.replace(/\.$/, ''));
    if (language && !found.includes(language)) found.push(language);
  }
  return found;
}

/** The first interpreter of the language found on `path` (a PATH value), as an absolute path; undefined when none is. */
export function interpreterOn(language: Language, path: string | undefined): string | undefined {
  for (const name of language.interpreters) {
    for (const dir of (path ?? '').split(delimiter)) {
      if (!dir || !isAbsolute(dir)) continue;
      const candidate = join(dir, name);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        /* not here */
      }
    }
  }
  return undefined;
}

/** Where a code tool takes its program, how it names the language, and the languages it offers. */
export interface CodeTool {
  /** The property the program goes in. */
  property: string;
  /** The property that names the language or interpreter (an enum or a free string), if any. */
  languageProperty?: string;
  /** The languages it offers that this machine runs, each with the value its language property gets (none: named by the tool). */
  languages: { language: Language; value?: string }[];
  /** The languages it offers that this machine does not run (for the report). */
  missing: string[];
}

/** A program's property: `code`, `source`, `program`, `python_code`, `jsCode`. */
const CODE_PROPERTY = /^(code|source|source_?code|program|snippet)$|(_c|C)ode$/;
/** The property that names the language: an enum of languages, or a free interpreter name. */
const LANGUAGE_PROPERTY = /^(language|language_?id|lang|runtime|interpreter|kernel)$/i;

const schemaOf = (tool: Record<string, unknown>) => {
  const input = tool.inputSchema;
  const properties = typeof input === 'object' && input !== null && 'properties' in input ? (input as { properties?: unknown }).properties : undefined;
  return (typeof properties === 'object' && properties !== null ? properties : {}) as Record<string, Record<string, unknown> | undefined>;
};

/**
 * How a tool takes code, if it does: a program property beside a language (an enum of languages, a
 * free language or interpreter string, or a language in the tool's name or description) that is not
 * only shell. `path` is the PATH the programs' interpreters are looked up on. Undefined for a tool
 * that takes no code (a shell tool among them: it gets shell lines).
 */
export function codeToolOf(tool: Record<string, unknown>, path: string | undefined): CodeTool | undefined {
  const properties = schemaOf(tool);
  const names = Object.keys(properties);
  const languageProperty = names.find((name) => LANGUAGE_PROPERTY.test(name) && isStringSchema(properties[name]));
  const offered = offeredLanguages(tool, languageProperty ? properties[languageProperty] : undefined, languageProperty, path);
  const property =
    names.find((name) => CODE_PROPERTY.test(name) && isStringSchema(properties[name])) ??
    (offered.some((o) => o.language.id !== 'shell') ? names.find((n) => n === 'script') : undefined);
  if (property === undefined || offered.every((o) => o.language.id === 'shell')) return undefined;
  const runnable = offered.filter((o) => interpreterOn(o.language, path) !== undefined);
  const unknown = languageProperty ? enumValues(properties[languageProperty]).filter((value) => !languageNamed(value)) : [];
  const missing = [...offered.filter((o) => !runnable.includes(o)).map((o) => o.language.label), ...unknown];
  return { property, ...(languageProperty ? { languageProperty } : {}), languages: runnable, missing: [...new Set(missing)] };
}

const enumValues = (schema: Record<string, unknown> | undefined): string[] =>
  schema && Array.isArray(schema.enum) ? schema.enum.filter((v): v is string => typeof v === 'string') : [];

const isStringSchema = (schema: Record<string, unknown> | undefined) =>
  schema !== undefined && (schema.type === 'string' || (Array.isArray(schema.type) && schema.type.includes('string')) || Array.isArray(schema.enum));

/** The languages a tool offers, each with the value its language property takes for it. */
function offeredLanguages(
  tool: Record<string, unknown>,
  schema: Record<string, unknown> | undefined,
  property: string | undefined,
  path: string | undefined,
): { language: Language; value?: string }[] {
  if (schema && Array.isArray(schema.enum)) {
    const seen = new Set<LanguageId>();
    return schema.enum.flatMap((value) => {
      const language = typeof value === 'string' ? languageNamed(value) : undefined;
      if (!language || seen.has(language.id)) return [];
      seen.add(language.id);
      return [{ language, value: value as string }];
    });
  }
  const described = languagesMentioned(`${String(tool.name ?? '')} ${typeof tool.description === 'string' ? tool.description : ''}`);
  // A free language or interpreter string: what the tool names, else every language (the name a model would write).
  if (property !== undefined) {
    const free = described.length > 0 ? described : LANGUAGES.filter((l) => l.id !== 'typescript');
    // An interpreter by the name it has here (python3, not python, where only that exists).
    const interpreterName = (language: Language) => basename(interpreterOn(language, path) ?? language.interpreters[0]!);
    return free.map((language) => ({ language, value: /interpreter|runtime/i.test(property) ? interpreterName(language) : language.id }));
  }
  return described.map((language) => ({ language }));
}
