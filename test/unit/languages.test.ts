import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, test } from 'vitest';
import { codeToolOf, interpreterOn, languageNamed, LANGUAGES, languagesMentioned } from '../../harness/languages.js';

// The programs a code tool gets (harness/languages.ts), run by the interpreters this machine has.
const scratch = mkdtempSync(join(tmpdir(), 'msc-languages-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Records its argv, one element a line, and exits with the status its first argument names. */
const recorder = join(scratch, 'record');
writeFileSync(recorder, `#!/bin/sh\nprintf '%s\\n' "$@" > '${scratch}/argv'\nexit "$1"\n`);
chmodSync(recorder, 0o755);
// Everything a language's literal syntax could trip on: quotes, escapes, interpolation, newlines, non-ASCII.
const awkward = [`it's "quoted"`, 'back\\slash \\n', '$HOME #{x} @list ${y} `z`', 'line one\nline two', 'héllo 日本語 🚀', ''];

/** TypeScript without a runner here: its program compiled by the project's own TypeScript, run by node (what tsx or ts-node do). */
const typescriptByNode = (program: string): string[] => [
  process.execPath,
  '-e',
  ts.transpileModule(program, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 }, reportDiagnostics: false }).outputText,
];

describe.each(LANGUAGES.map((language) => [language.label, language] as const))('%s', (_label, language) => {
  const interpreter = interpreterOn(language, process.env.PATH);
  // As a code tool runs it: `-c`/`-e` for most, `-r` for PHP (whose programs have no open tag).
  const flag = { python: '-c', javascript: '-e', typescript: '-e', ruby: '-e', perl: '-e', php: '-r', shell: '-c' }[language.id];
  const command = (program: string): string[] | undefined =>
    interpreter ? [interpreter, flag, program] : language.id === 'typescript' ? typescriptByNode(program) : undefined;
  const runnable = command('') !== undefined;
  if (runnable)
    test('its program runs the command with its argv intact and exits with its status', () => {
      for (const status of ['0', '3']) {
        const [file, ...args] = command(language.program([recorder, status, ...awkward]))!;
        const run = spawnSync(file!, args, { encoding: 'utf8' });
        expect(run.status, run.stderr).toBe(Number(status));
        expect(readFileSync(join(scratch, 'argv'), 'utf8')).toBe([status, ...awkward].map((a) => `${a}\n`).join(''));
      }
    });
  else
    // No interpreter here and none in the project's packages: a code tool offering it gets no
    // program (could not run for that language, said in the header), never an untested one judged.
    test('not on this machine: a code tool offering it gets no program, and the header says so', () => {
      const found = codeToolOf({ name: `run_${language.id}`, inputSchema: { type: 'object', properties: { code: { type: 'string' } } } }, process.env.PATH);
      expect(found?.languages).toEqual([]);
      expect(found?.missing).toEqual([language.label]);
    });
});

test('this machine runs the programs of at least Python, JavaScript and shell (the languages most code tools take)', () => {
  const found = LANGUAGES.filter((l) => interpreterOn(l, process.env.PATH)).map((l) => l.id);
  expect(found).toEqual(expect.arrayContaining(['python', 'javascript', 'shell']));
});

test('languages by name, and in a tool name or description', () => {
  expect(languageNamed('Python3')?.id).toBe('python');
  expect(languageNamed('javascript')?.id).toBe('javascript');
  expect(languageNamed('bash')?.id).toBe('shell');
  expect(languageNamed('cobol')).toBeUndefined();
  expect(languagesMentioned('run_python_code').map((l) => l.id)).toEqual(['python']);
  expect(languagesMentioned('Execute JavaScript or Python code and return stdout').map((l) => l.id)).toEqual(['javascript', 'python']);
  expect(languagesMentioned('shell-out helper for the workspace').map((l) => l.id)).toEqual(['shell']);
  expect(languagesMentioned('Publish a post').map((l) => l.id)).toEqual([]);
});

test('an interpreter is found on PATH only as an executable file', () => {
  const bin = join(scratch, 'bin');
  execFileSync('mkdir', ['-p', bin]);
  writeFileSync(join(bin, 'ruby'), '#!/bin/sh\n');
  const ruby = LANGUAGES.find((l) => l.id === 'ruby')!;
  expect(interpreterOn(ruby, bin)).toBeUndefined();
  chmodSync(join(bin, 'ruby'), 0o755);
  expect(interpreterOn(ruby, `relative/dir:${bin}`)).toBe(join(bin, 'ruby'));
});

describe('code tools', () => {
  const tool = (name: string, properties: Record<string, unknown>, description = '') => ({ name, description, inputSchema: { type: 'object', properties } });
  const ids = (found: ReturnType<typeof codeToolOf>) => found?.languages.map((l) => [l.language.id, l.value]);
  const path = process.env.PATH;
  test('a language in the name: the program goes in its code property', () => {
    const found = codeToolOf(tool('run_python', { code: { type: 'string' } }), path);
    expect(found).toMatchObject({ property: 'code', missing: [] });
    expect(ids(found)).toEqual([['python', undefined]]);
    expect(ids(codeToolOf(tool('exec', { python_code: { type: 'string' } }, 'Execute Python code.'), path))).toEqual([['python', undefined]]);
  });
  test('a language enum (as mcp-server-code-runner has it): each language this machine runs, with its enum value; the others said', () => {
    const found = codeToolOf(
      tool('run-code', { code: { type: 'string' }, languageId: { type: 'string', enum: ['javascript', 'typescript', 'python', 'cobol', 'shellscript'] } }),
      path,
    );
    expect(found?.languageProperty).toBe('languageId');
    expect(ids(found)).toEqual([
      ['javascript', 'javascript'],
      ['python', 'python'],
      ['shell', 'shellscript'],
    ]);
    expect(found?.missing).toEqual(['TypeScript', 'cobol']);
  });
  test('a free interpreter string: every language this machine runs, by the interpreter name found here', () => {
    const found = codeToolOf(tool('execute', { code: { type: 'string' }, interpreter: { type: 'string' } }), path);
    expect(found?.languageProperty).toBe('interpreter');
    expect(ids(found)).toEqual(
      expect.arrayContaining([
        ['python', 'python3'],
        ['javascript', 'node'],
      ]),
    );
  });
  test('a shell tool, or a tool with no language, takes no code', () => {
    expect(codeToolOf(tool('run_script', { script: { type: 'string' } }, 'Run a shell script.'), path)).toBeUndefined();
    expect(codeToolOf(tool('exec', { command: { type: 'array' } }, 'Run a command.'), path)).toBeUndefined();
    expect(codeToolOf(tool('evaluate', { code: { type: 'string' } }, 'Evaluate an expression.'), path)).toBeUndefined();
    expect(ids(codeToolOf(tool('run_ruby', { script: { type: 'string' } }), path))).toEqual([]);
    expect(codeToolOf(tool('run_ruby', { script: { type: 'string' } }), path)?.missing).toEqual(['Ruby']);
  });
});
