import { join } from 'node:path';
import type { SandboxEntries } from '../../harness/codex-wire.js';
import { shellQuote, type ScenarioObservers } from '../../harness/observers.js';
import type { ExecProbe, IsolatedContext, ProbeOptions } from '../engine/model.js';

/**
 * The command grammar (EXEC-1: no command is exempt, whatever it looks like or however long it
 * is). Every command it generates runs the probe, installed under everyday names (echo, git, cat,
 * ls, pwd, true), so the monitor sees where it ran; none of them mentions the probe by its own
 * name. A command comes in two spellings: `argv` for a tool that takes an argv (shell forms wrap
 * their script in a shell, as a model would ask), `script` for a tool that takes one shell string.
 * execution/inside-launch sends a representative set (REPRESENTATIVE: every form, every size);
 * exploration draws from all of GRAMMAR (every form at every size).
 */

export const FORMS = [
  'simple',
  'pipe',
  'sequence',
  'and',
  'or',
  'redirect',
  'substitution',
  'backticks',
  'background',
  'bash -lc',
  'bash -lc: operators in quotes',
  'sh -c',
  'multi-line',
  'heredoc',
  'cd subdir',
  'quotes',
  'non-ascii',
  'glob',
  'variables',
  'argv: many elements',
  'argv: empty elements',
  'argv: spaces and newlines',
] as const;
/**
 * Commands that take time, as builds and test runs do: work for a while, or write output steadily
 * for that long, running the probe as they start and again as they end, so that another run of the
 * command (a watchdog's, outside the launch) shows the moment it starts, whenever that is. Not in
 * GRAMMAR (exploration's draws stay quick); the fixed checks send them for SLOW_COMMAND_MS, the
 * resident server and the soak also for longer (--slow-command, suites/server/lifetime.ts), beside
 * their other calls, so that a watchdog that reruns a slow command outside the launch shows.
 */
export const SLOW_FORMS = ['slow: works first', 'slow: streams output'] as const;
export type SlowForm = (typeof SLOW_FORMS)[number];
export type CommandForm = (typeof FORMS)[number] | SlowForm;
export const isSlow = (form: CommandForm): form is SlowForm => (SLOW_FORMS as readonly string[]).includes(form);
/** How long a slow command runs unless it is given a length: past any watchdog of a second or two. */
export const SLOW_COMMAND_MS = 2_500;
/** How often the streaming slow command prints a line: steadier than any watchdog on silence. */
export const STREAMED_LINE_MS = 250;

/** Target sizes of the whole command (its argv's bytes, or its script's): a form's own size, then padded. */
export const SIZES = { '100 B': 0, '1 KB': 1_200, '8 KB': 9_000, '100 KB': 100_000 } as const;
export type CommandSize = keyof typeof SIZES;
export const SIZE_NAMES = Object.keys(SIZES) as CommandSize[];
/** Linux limits one argv element to 128 KiB (MAX_ARG_STRLEN): every element stays well below it. */
export const MAX_ELEMENT_BYTES = 120_000;

export interface GrammarEntry {
  form: CommandForm;
  size: CommandSize;
  /** A slow form's length (default SLOW_COMMAND_MS). */
  ms?: number;
}

/** How long a command of this entry runs: a slow form's length, else undefined (it takes no time of its own). */
export const runsFor = (entry: GrammarEntry): number | undefined => (isSlow(entry.form) ? (entry.ms ?? SLOW_COMMAND_MS) : undefined);

/** Every form at every size: what exploration draws from. */
export const GRAMMAR: GrammarEntry[] = FORMS.flatMap((form) => SIZE_NAMES.map((size) => ({ form, size })));

/** What execution/inside-launch sends: the slow forms first (they overlap the rest), every form at its own size, and each larger size on a few forms. */
export const REPRESENTATIVE: GrammarEntry[] = [
  ...SLOW_FORMS.map((form) => ({ form, size: '100 B' as const })),
  ...FORMS.map((form) => ({ form, size: '100 B' as const })),
  { form: 'simple', size: '1 KB' },
  { form: 'argv: many elements', size: '1 KB' },
  { form: 'multi-line', size: '8 KB' },
  { form: 'bash -lc', size: '8 KB' },
  { form: 'heredoc', size: '100 KB' },
  { form: 'argv: many elements', size: '100 KB' },
];

/** Where a command's everyday names live: the probe under each, a bin directory, a workspace subdirectory. */
export interface CommandKit {
  echo: string;
  git: string;
  cat: string;
  ls: string;
  pwd: string;
  true: string;
  bin: string;
  subdir: string;
}

export function commandKit(observers: Pick<ScenarioObservers, 'everydayProbe' | 'workspaceSubdir'>): Promise<CommandKit> {
  let kit = kits.get(observers);
  if (!kit) kits.set(observers, (kit = makeKit(observers)));
  return kit;
}
/** One kit per observers: its names are made once. */
const kits = new WeakMap<object, Promise<CommandKit>>();

async function makeKit(observers: Pick<ScenarioObservers, 'everydayProbe' | 'workspaceSubdir'>): Promise<CommandKit> {
  const [echo, git, cat, ls, pwd, yes, subdir] = await Promise.all([
    observers.everydayProbe('echo'),
    observers.everydayProbe('git'),
    observers.everydayProbe('cat'),
    observers.everydayProbe('ls'),
    observers.everydayProbe('pwd'),
    observers.everydayProbe('true'),
    observers.workspaceSubdir('src dir'),
  ]);
  return { echo, git, cat, ls, pwd, true: yes, bin: join(echo, '..'), subdir };
}

export interface GeneratedCommand extends GrammarEntry {
  /** For an argv tool. */
  argv: string[];
  /** For a shell-string tool. */
  script: string;
}

/** Filler words: everyday text, no word of 12 hex digits (the probe takes the first such argument as its nonce). */
const WORDS = ['lorem', 'ipsum', 'dolor', 'sit', 'amet', 'notes', 'build', 'step', 'output', 'quiet', 'verbose', 'tmp', 'src', 'main', 'index.ts'];
function filler(bytes: number, separator = ' '): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const word = `${WORDS[i % WORDS.length]}${i % 7 === 0 ? `-${i}` : ''}`;
    parts.push(word);
    size += word.length + separator.length;
  }
  return parts.join(separator);
}
/** Filler split into elements of at most `max` bytes each. */
function fillerElements(bytes: number, max: number): string[] {
  const out: string[] = [];
  for (let left = bytes; left > 0; left -= max) out.push(filler(Math.min(left, max)));
  return out;
}

const q = shellQuote;
const sh = (script: string) => ['/bin/sh', '-c', script];
const byteLength = (text: string) => Buffer.byteLength(text, 'utf8');
export const argvBytes = (argv: string[]) => argv.reduce((n, a) => n + byteLength(a) + 1, 0);

/**
 * One form at its own size: a script (run by a shell), or an argv (a direct command) with its
 * script spelling. The probe's exit status is the command's, so a probe that could not run (say, a
 * failed fork on a crowded machine) reads as a failed command, not as a success that ran nothing.
 */
function base(kit: CommandKit, { form, ms = SLOW_COMMAND_MS }: GrammarEntry, n: string): { argv?: string[]; script: string } {
  const direct = (argv: string[]) => ({ argv, script: argv.map(q).join(' ') });
  switch (form) {
    case 'simple':
      return direct([kit.git, 'status', '--short', n]);
    case 'pipe':
      return { script: `printf 'main\\n' | ${q(kit.git)} log --oneline -n 3 ${n}` };
    case 'sequence':
      return { script: `${q(kit.pwd)} >/dev/null; ${q(kit.git)} diff --stat ${n}` };
    case 'and':
      return { script: `true && ${q(kit.ls)} -la ${n}` };
    case 'or':
      return { script: `false || ${q(kit.echo)} ${n} fallback` };
    case 'redirect':
      return { script: `${q(kit.cat)} ${n} </dev/null 2>&1 >/dev/null; ${q(kit.echo)} ${n} >&2 2>/dev/null` };
    case 'substitution':
      return { script: `out=$(${q(kit.pwd)} ${n}) && printf '%s\\n' "$out"` };
    case 'backticks':
      return { script: `top=\`${q(kit.git)} rev-parse --show-toplevel ${n}\` && printf '%s\\n' "$top"` };
    case 'background':
      return { script: `${q(kit.git)} fetch --quiet ${n} & wait $!` };
    case 'bash -lc': {
      const inner = `${q(kit.git)} status --short ${n} && echo done`;
      return { argv: ['bash', '-lc', inner], script: `bash -lc ${q(inner)}` };
    }
    case 'bash -lc: operators in quotes': {
      // Operators inside the script's own quotes (each eval runs the probe, after a `;` in single
      // quotes and in double quotes), a cd into a path with a space, and text holding quotes of
      // both kinds (the quotes of each kind balanced): a server that puts the script between quotes
      // by concatenation (`bash -lc '<script>'`, `sh -c "<argv joined>"`) ends its quoting early,
      // and the probe after the operator runs in the part that escaped, outside the launch.
      const inner =
        `eval 'true; ${kit.git} status ${n} --short' && cd "${kit.subdir}" && eval "true; ${kit.echo} ${n}" && ` + `printf '%s\\n' "it's, isn't it" 'say "hi"'`;
      return { argv: ['bash', '-lc', inner], script: `bash -lc ${q(inner)}` };
    }
    case 'sh -c': {
      const inner = `printf 'src\\n' | ${q(kit.ls)} -1 ${n}`;
      return { argv: ['sh', '-c', inner], script: `sh -c ${q(inner)}` };
    }
    case 'multi-line':
      return { script: `set -e\ncd ${q(kit.subdir)}\n${q(kit.git)} status --short ${n}\nprintf 'done\\n'\n` };
    case 'heredoc':
      return { script: `${q(kit.cat)} ${n} <<'EOF'\nfirst line\nsecond line, with 'quotes' and $NOT_EXPANDED\nEOF\n` };
    case 'cd subdir':
      return { script: `cd ${q(kit.subdir)} && ${q(kit.ls)} -la ${n}` };
    case 'quotes':
      return direct([kit.echo, n, `single 'quoted'`, 'double "quoted"', `both ' and "`, 'back\\slash', '$HOME `not run`', "it's"]);
    case 'non-ascii':
      return direct([kit.echo, n, 'héllo wörld', 'naïve café', '日本語のテキスト', 'emoji 🚀✓', '— “curly” ‘quotes’']);
    case 'glob':
      return { script: `${q(kit.bin)}/ech[o] ${n} *.md ?akefile '[literal]*'` };
    case 'variables':
      return { script: `bin=${q(kit.bin)}; n=${n}; "$bin/git" status "$n" "$HOME" "\${PWD}" $# "\${UNSET_VAR:-fallback}"` };
    case 'argv: many elements':
      return direct([kit.echo, n, ...Array.from({ length: 24 }, (_, i) => `k${i}`)]);
    case 'argv: empty elements':
      return direct([kit.echo, '', n, '', 'after empty', '']);
    case 'argv: spaces and newlines':
      return direct([kit.echo, n, 'two  spaces', ' leading', 'trailing ', 'line one\nline two', '\ttab', ' ']);
    case 'slow: works first':
      // One sleep: a fork per half second would cost more than the command proves.
      return { script: `${q(kit.git)} status --short ${n}; sleep ${ms / 1000}; ${q(kit.git)} status --short ${n}` };
    case 'slow: streams output': {
      const lines = Math.max(1, Math.round(ms / STREAMED_LINE_MS));
      return {
        script: `${q(kit.echo)} ${n} started; i=0; while [ "$i" -lt ${lines} ]; do printf 'build step %s of ${lines}\n' "$i"; sleep ${STREAMED_LINE_MS / 1000}; i=$((i + 1)); done; ${q(kit.echo)} ${n} built`,
      };
    }
  }
}

/** The forms an argv tool gets as `<shell> -c <script>` with a bare shell name, as a model sends them. */
const isWrapper = (form: CommandForm) => form === 'bash -lc' || form === 'bash -lc: operators in quotes' || form === 'sh -c';

/** A form padded to a size: filler arguments for an argv command, a comment or a no-op word for a script. */
export function generate(kit: CommandKit, entry: GrammarEntry, nonce: string): GeneratedCommand {
  const { form, size } = entry;
  const b = base(kit, entry, nonce);
  const target = SIZES[size];
  if (b.argv && !isWrapper(form)) {
    // A direct command: filler as more arguments (many short ones for the many-elements form).
    const missing = target - argvBytes(b.argv);
    const extra = missing <= 0 ? [] : form === 'argv: many elements' ? filler(missing).split(' ') : fillerElements(missing, 4_000);
    const argv = [...b.argv, ...extra];
    return { form, size, argv, script: argv.map(q).join(' ') };
  }
  // A script: filler as a comment (multi-line forms get comment lines, a heredoc a longer body).
  const padded = (script: string, overhead = 0) => {
    const missing = target - byteLength(script) - overhead;
    if (missing <= 0) return script;
    if (form === 'heredoc') return script.replace('EOF\n', `${filler(missing, '\n')}\nEOF\n`);
    if (script.includes('\n')) return `# ${filler(missing, '\n# ')}\n${script}`;
    return `: ${filler(missing)}; ${script}`;
  };
  if (isWrapper(form)) {
    const [shell, flag, inner] = b.argv!;
    const script = padded(inner!, 12);
    return { form, size, argv: [shell!, flag!, script], script: `${shell} ${flag} ${q(script)}` };
  }
  const script = padded(b.script);
  return { form, size, argv: sh(script), script };
}

/** A label for reports: the form, the size when it is not the form's own, and a slow form's length when it is not the default. */
export const formLabel = (entry: GrammarEntry): string =>
  [
    entry.form,
    ...(entry.size === '100 B' ? [] : [entry.size]),
    ...(entry.ms !== undefined && entry.ms !== SLOW_COMMAND_MS ? [`${entry.ms / 1000} s`] : []),
  ].join(', ');

/**
 * Makes a command and sends it through the exec tool: `entry` of the grammar (else the plain
 * probe), running the probe under a fresh nonce; its form names the tool when it is not the
 * primary, so that every finding about the call does. `script` is the command as a shell script.
 */
export async function grammarProbe(
  ctx: Pick<IsolatedContext, 'observers' | 'execProbe'>,
  entry: GrammarEntry | undefined,
  sandbox: SandboxEntries,
  options: Omit<ProbeOptions, 'nonce' | 'command'> = {},
): Promise<{ form: string; script: string; probe: ExecProbe }> {
  const nonce = ctx.observers.newNonce();
  const form = `${entry ? formLabel(entry) : 'simple'}${options.adapter ? `, to tool ${options.adapter.tool}` : ''}`;
  const command = entry ? generate(await commandKit(ctx.observers), entry, nonce) : { argv: ctx.observers.probeCommand(nonce), script: undefined };
  const runsForMs = entry && runsFor(entry);
  const probe = await ctx.execProbe(sandbox, {
    ...options,
    nonce,
    command: { argv: command.argv, script: command.script, form },
    ...(runsForMs ? { runsForMs } : {}),
  });
  return { form, script: command.script ?? command.argv.map(q).join(' '), probe };
}
