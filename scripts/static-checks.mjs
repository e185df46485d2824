#!/usr/bin/env node
// npm test's (and npm run test:all's) build and static checks, at once: the type check of everything (sources and tests),
// which also emits dist/ for the CLI tests to run, the linter and the formatter. Each one's output
// is printed whole when it ends; the exit status is 1 if any of them failed. (One by one they take
// about 30 s on a 2-core machine; together about 20, and a separate emit-only build is not needed.)
import { spawn } from 'node:child_process';

const CHECKS = [
  // tsconfig.test.json alone does not emit; here it does, tests included (dist/test is never published or run).
  ['type check and build', 'typescript/bin/tsc', ['-p', 'tsconfig.test.json', '--noEmit', 'false']],
  ['lint', 'eslint/bin/eslint.js', ['.']],
  ['format', 'prettier/bin/prettier.cjs', ['--check', '--log-level', 'warn', '.']],
];

const started = Date.now();
const results = await Promise.all(
  CHECKS.map(
    ([name, script, args]) =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, [`node_modules/${script}`, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (chunk) => (output += chunk));
        child.stderr.on('data', (chunk) => (output += chunk));
        child.on('error', (error) => resolve({ name, code: 1, output: String(error) }));
        child.on('close', (code) => resolve({ name, code: code ?? 1, output }));
      }),
  ),
);
for (const { name, code, output } of results) {
  process.stdout.write(`${code === 0 ? 'ok  ' : 'FAIL'} ${name}\n`);
  if (output.trim()) process.stdout.write(`${output.trimEnd()}\n`);
}
process.stdout.write(`static checks: ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
