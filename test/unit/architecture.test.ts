import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { expect, test } from 'vitest';
import { packageRoot } from '../../harness/paths.js';
import { SERVER_COMMAND_FLAGS } from '../../cli/flags.js';

// The layers: cli/ parses and reports, suites/ decides, harness/ speaks and observes. Imports run
// one way (cli -> suites -> harness), and only cli/ knows the CLI's flags: below it, what a user
// can do about a verdict is a code (suites/engine/model.ts Hint) that cli/hints.ts words.
const root = packageRoot();
const sources = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
const importsOf = (file: string) =>
  [...readFileSync(join(root, file), 'utf8').matchAll(/\bfrom\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g)].map((m) => m[1] ?? m[2]!);
const layerOf = (file: string, specifier: string) => relative(root, join(root, file, '..', specifier)).split('/')[0];

test('imports run one way: cli -> suites -> harness', () => {
  const forbidden: Record<string, string[]> = { harness: ['suites', 'cli'], suites: ['cli'] };
  const wrong = Object.entries(forbidden).flatMap(([layer, above]) =>
    sources(layer).flatMap((file) =>
      importsOf(file)
        .filter((specifier) => specifier.startsWith('.') && above.includes(layerOf(file, specifier)!))
        .map((specifier) => `${file} imports ${specifier}`),
    ),
  );
  expect(wrong).toEqual([]);
  // The check is not vacuous: cli/ does import suites/ and harness/.
  expect(sources('cli').some((file) => importsOf(file).some((s) => layerOf(file, s) === 'suites'))).toBe(true);
});

test('no flag text below cli/: suites/ and harness/ never name a CLI flag outside comments', () => {
  const cliText = sources('cli')
    .map((file) => readFileSync(join(root, file), 'utf8'))
    .join('\n');
  // The server mode's flags are a table (cli/server-command.ts); host mode's are declared one by one.
  const flags = [...new Set([...Object.keys(SERVER_COMMAND_FLAGS), ...[...cliText.matchAll(/\.option\(\s*'([a-z][a-z-]+)'/g)].map((m) => m[1]!)])];
  expect(flags).toEqual(expect.arrayContaining(['codex', 'url', 'assume-opt-in', 'exec-tool', 'explore', 'scenario-timeout']));
  const flagText = new RegExp(`--(?:no-)?(?:${flags.join('|')})(?![\\w-])`);
  const found = ['suites', 'harness'].flatMap((layer) =>
    sources(layer).flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        // Comments may explain which flag feeds a value; only code and its strings are checked.
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/(^|\s)\/\/.*$/gm, '$1')
        .split('\n')
        .flatMap((line, i) => (flagText.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    ),
  );
  expect(found).toEqual([]);
});

/** The files `file` imports, among `known` (type-only imports count: they tie the files together just the same). */
const localImports = (file: string, known: Set<string>) =>
  importsOf(file)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(root, join(root, file, '..', specifier)).replace(/\.js$/, '.ts'))
    .filter((target) => known.has(target));

/** The import cycles among `files`, each as the path that closes it. */
function importCycles(files: string[], importsOfFile: (file: string, known: Set<string>) => string[] = localImports): string[][] {
  const known = new Set(files);
  const edges = new Map(files.map((file) => [file, importsOfFile(file, known)]));
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      cycles.push([...path.slice(path.indexOf(file)), file]);
      return;
    }
    state.set(file, 'open');
    for (const next of edges.get(file) ?? []) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of files) visit(file, []);
  return cycles;
}

test('no import cycle anywhere: not between files of a layer, not through another layer', () => {
  const files = ['cli', 'suites', 'harness'].flatMap(sources);
  expect(importCycles(files).map((cycle) => cycle.join(' -> '))).toEqual([]);
  // The check is not vacuous: a planted cycle is found, and the real graph has edges.
  const planted = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts']],
  ]);
  expect(importCycles([...planted.keys()], (file) => planted.get(file)!)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  expect(localImports('suites/engine/runner.ts', new Set(files))).toContain('suites/engine/scenario-run.ts');
});

/** Every function of a source file longer than `limit` lines, as "file:line name (n lines)". */
function longFunctions(file: string, text: string, limit: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const long: string[] = [];
  const visit = (node: ts.Node, name: string) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
      const own = node.name && ts.isIdentifier(node.name) ? node.name.text : name;
      if (lines > limit) long.push(`${file}:${first + 1} ${own} (${lines} lines)`);
    }
    const next = ts.isVariableDeclaration(node) || ts.isPropertyAssignment(node) || ts.isMethodDeclaration(node) ? node.name.getText(source) : name;
    ts.forEachChild(node, (child) => visit(child, next));
  };
  visit(source, '(anonymous)');
  return long;
}

test('the engine reads a function at a time: none of suites/engine is longer than a screen (60 lines)', () => {
  const engine = sources('suites/engine');
  expect(engine.length).toBeGreaterThan(10);
  expect(engine.flatMap((file) => longFunctions(file, readFileSync(join(root, file), 'utf8'), 60))).toEqual([]);
  // It can fail: a 61-line function is found.
  const planted = `function planted() {\n${'  call();\n'.repeat(59)}}\n`;
  expect(longFunctions('planted.ts', planted, 60)).toEqual(['planted.ts:1 planted (61 lines)']);
});

test('the traffic engine is one: the resident and the soak (lifetime.ts) and exploration (explore.ts) use traffic.ts, never each other', () => {
  const files = sources('suites');
  const known = new Set(files);
  const imports = (file: string) => localImports(file, known);
  expect(imports('suites/server/lifetime.ts')).not.toContain('suites/server/explore.ts');
  expect(imports('suites/server/explore.ts')).not.toContain('suites/server/lifetime.ts');
  expect(imports('suites/server/lifetime.ts')).toContain('suites/engine/traffic.ts');
  expect(imports('suites/server/explore.ts')).toContain('suites/engine/traffic.ts');
});
