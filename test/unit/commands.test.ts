import { execFileSync } from 'node:child_process';
import { expect, test } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  argvBytes,
  FORMS,
  formLabel,
  generate,
  GRAMMAR,
  MAX_ELEMENT_BYTES,
  REPRESENTATIVE,
  SIZE_NAMES,
  SIZES,
  SLOW_COMMAND_MS,
  STREAMED_LINE_MS,
  SLOW_FORMS,
  type CommandKit,
  type GrammarEntry,
} from '../../suites/server/commands.js';
import { commandText } from '../../suites/engine/judge.js';

// The command grammar (suites/server/commands.ts) without a server: what it generates, how big,
// and that the probe finds its nonce in every command.
const dir = '/tmp/tmp-abc/s1';
const kit: CommandKit = {
  echo: `${dir}/bin/echo`,
  git: `${dir}/bin/git`,
  cat: `${dir}/bin/cat`,
  ls: `${dir}/bin/ls`,
  pwd: `${dir}/bin/pwd`,
  true: `${dir}/bin/true`,
  bin: `${dir}/bin`,
  subdir: `${dir}/work space/src dir`,
};
const nonce = '0123456789ab';
const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
/** Every command the suite sends: the grammar, and the slow forms at their own size. */
const EVERY: GrammarEntry[] = [...GRAMMAR, ...SLOW_FORMS.map((form) => ({ form, size: '100 B' as const }))];

test('the representative set has every form and every size', () => {
  expect(new Set(REPRESENTATIVE.map((e) => e.form))).toEqual(new Set([...FORMS, ...SLOW_FORMS]));
  expect(new Set(REPRESENTATIVE.map((e) => e.size))).toEqual(new Set(SIZE_NAMES));
  expect(GRAMMAR.length).toBe(FORMS.length * SIZE_NAMES.length);
});

test('every command reaches its size, keeps each argv element under 128 KiB, and names no probe', () => {
  for (const entry of EVERY) {
    const command = generate(kit, entry, nonce);
    const size = Math.max(argvBytes(command.argv), bytes(command.script));
    const label = `${entry.form} at ${entry.size}`;
    if (entry.size === '100 B') expect(size, label).toBeLessThan(300);
    else expect(size, label).toBeGreaterThanOrEqual(SIZES[entry.size] - 50);
    expect(size, label).toBeLessThan(SIZES['100 KB'] + 2_000);
    expect(Math.max(...command.argv.map(bytes)), label).toBeLessThan(MAX_ELEMENT_BYTES);
    expect(bytes(command.script), label).toBeLessThan(MAX_ELEMENT_BYTES);
    expect(command.script, label).toContain(nonce);
    expect(command.argv.join(' '), label).toContain(nonce);
    expect(command.script, label).not.toMatch(/\/task\b/);
  }
  expect(generate(kit, { form: 'heredoc', size: '1 KB' }, nonce).script).toBe(generate(kit, { form: 'heredoc', size: '1 KB' }, nonce).script);
});

test('no word of the filler or of a form could pass for a nonce (the probe takes the first 12-hex-digit argument)', () => {
  for (const entry of EVERY) {
    const words = generate(kit, entry, nonce).script.split(/[\s'"=;|&()`$<>]+/);
    expect(words.filter((w) => /^[0-9a-f]{12}$/.test(w) && w !== nonce)).toEqual([]);
  }
});

test('every script is valid sh (and the bash wrapper valid bash)', () => {
  for (const entry of EVERY.filter((e) => e.size !== '100 KB')) {
    const { script } = generate(kit, entry, nonce);
    expect(() => execFileSync('/bin/sh', ['-n', '-c', script], { stdio: 'pipe' }), `${entry.form} at ${entry.size}`).not.toThrow();
  }
});

test('a slow command runs the probe as it starts and again after its length, the streaming one writing all along', async () => {
  const probes = mkdtempSync(join(tmpdir(), 'msc-slow-'));
  // The probe under each everyday name: it appends when it ran (ms), one line per run.
  const timed: CommandKit = { ...kit, git: join(probes, 'git'), echo: join(probes, 'echo') };
  for (const name of ['git', 'echo'])
    execFileSync('/bin/sh', ['-c', `printf '#!/bin/sh\\necho $(( $(date +%%s%%N) / 1000000 )) >> "$0.ran"\\n' > ${name} && chmod +x ${name}`], { cwd: probes });
  // A length of its own (the resident's and the soak's long commands); the default is SLOW_COMMAND_MS.
  const ms = 1_000;
  try {
    const runs = SLOW_FORMS.map(
      (form) =>
        new Promise<{ form: string; ms: number; lines: number }>((resolve, reject) => {
          const started = Date.now();
          execFile('/bin/sh', ['-c', generate(timed, { form, size: '100 B', ms }, nonce).script], (error, stdout) =>
            error ? reject(error) : resolve({ form, ms: Date.now() - started, lines: stdout.split('\n').filter(Boolean).length }),
          );
        }),
    );
    for (const { form, ms: took, lines } of await Promise.all(runs)) {
      // sleep never wakes early: a lower bound holds however loaded the machine is.
      expect(took, form).toBeGreaterThanOrEqual(ms - 100);
      if (form === 'slow: streams output') expect(lines, form).toBeGreaterThanOrEqual(ms / STREAMED_LINE_MS);
    }
    // The probe ran twice in each: first, and then after the command's length.
    for (const name of ['git', 'echo']) {
      const at = readFileSync(join(probes, `${name}.ran`), 'utf8')
        .trim()
        .split('\n')
        .map(Number);
      expect(at, name).toHaveLength(2);
      expect(at[1]! - at[0]!, name).toBeGreaterThanOrEqual(ms - 100);
    }
  } finally {
    rmSync(probes, { recursive: true, force: true });
  }
  // Without a length, a slow form runs SLOW_COMMAND_MS, and says so in no label; a length of its own is in its label.
  for (const form of SLOW_FORMS) {
    expect(generate(kit, { form, size: '100 B' }, nonce).script).toBe(generate(kit, { form, size: '100 B', ms: SLOW_COMMAND_MS }, nonce).script);
    expect(formLabel({ form, size: '100 B', ms: SLOW_COMMAND_MS })).toBe(form);
    expect(formLabel({ form, size: '100 B', ms: 30_000 })).toBe(`${form}, 30 s`);
  }
});

test('an argv form keeps its elements as they are: empty ones, spaces, newlines, non-ASCII', () => {
  expect(generate(kit, { form: 'argv: empty elements', size: '100 B' }, nonce).argv).toContain('');
  expect(generate(kit, { form: 'argv: spaces and newlines', size: '100 B' }, nonce).argv).toContain('line one\nline two');
  expect(generate(kit, { form: 'non-ascii', size: '100 B' }, nonce).argv.join(' ')).toMatch(/日本語/);
  expect(generate(kit, { form: 'argv: many elements', size: '100 KB' }, nonce).argv.length).toBeGreaterThan(10_000);
  expect(generate(kit, { form: 'bash -lc', size: '8 KB' }, nonce).argv.slice(0, 2)).toEqual(['bash', '-lc']);
});

test('a command as reports show it: trimmed, control and invisible characters escaped, the scenario directory shortened', () => {
  expect(commandText(`${dir}/bin/echo a\nb\u001b[31m\u202e`, dir)).toBe('<tmp>/bin/echo a\\nb\\u001b[31m\\u202e');
  const long = commandText('x'.repeat(5000));
  expect(long).toMatch(/^x{120}… \(5000 bytes\)$/);
});
