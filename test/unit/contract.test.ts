import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';
import { hostCheckDefs, hostChecks, type HostCheck } from '../../suites/host/index.js';
import { allChecks } from '../../suites/index.js';
import { RULES, type CheckDef } from '../../suites/engine/model.js';
import { root } from '../helpers.js';

const contract = readFileSync(join(root, 'CONTRACT.md'), 'utf8');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The text of a markdown section, from its heading to the next heading of the same level. */
function section(text: string, heading: string): string {
  const start = text.indexOf(`\n${heading}`);
  expect(start, heading).toBeGreaterThanOrEqual(0);
  const level = heading.split(' ')[0]!;
  const end = text.indexOf(`\n${level} `, start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/**
 * The check table of a README section: each check name (or `area/*`) with the rule cell of its row.
 * A row may list several checks of one area: `area/a`, `b`, `c`.
 */
function checkTable(heading: string): Map<string, string> {
  const listed = new Map<string, string>();
  for (const row of section(readme, heading)
    .split('\n')
    .filter((line) => line.startsWith('| `'))) {
    const [names, rules] = row
      .split('|')
      .slice(1, 3)
      .map((cell) => cell.trim());
    let area = '';
    for (const [, name] of names!.matchAll(/`([^`]+)`/g)) {
      const id = name!.includes('/') ? name! : `${area}/${name}`;
      area = id.split('/')[0]!;
      listed.set(id, rules!);
    }
  }
  return listed;
}

/** The table lists exactly `checks` (a name ending in `/*` stands for its area), each under its rule. */
function expectTableOf(listed: Map<string, string>, checks: CheckDef[]) {
  const ids = (pattern: string) => checks.filter((c) => (pattern.endsWith('/*') ? c.id.startsWith(pattern.slice(0, -1)) : c.id === pattern));
  const unknown = [...listed.keys()].filter((name) => ids(name).length === 0);
  expect(unknown, 'listed in the README, but no such check').toEqual([]);
  const covered = new Set([...listed.keys()].flatMap((name) => ids(name).map((c) => c.id)));
  expect(
    checks.map((c) => c.id).filter((id) => !covered.has(id)),
    'a check missing from the README',
  ).toEqual([]);
  for (const [name, rules] of listed) for (const check of ids(name)) expect(rules, check.id).toContain(check.rule);
}

describe('CONTRACT.md, the rule IDs in code and the README agree', () => {
  test('every rule ID in code is stated in CONTRACT.md, and every rule stated there is one in code', () => {
    const stated = [...contract.matchAll(/^- \*\*([A-Z]+-\d+)\b/gm)].map((m) => m[1]);
    expect([...stated].sort()).toEqual([...RULES].sort());
  });

  test('every rule has at least one check', () => {
    const checked = new Set([...allChecks, ...hostCheckDefs].map((c) => c.rule));
    expect(RULES.filter((rule) => !checked.has(rule))).toEqual([]);
  });

  test("the README's check table lists exactly the checks of `list`, each under its rule", () => {
    const listed = checkTable('## The checks');
    expect(listed.size).toBeGreaterThan(20); // the table was found and read
    expectTableOf(listed, allChecks);
  });
});

describe('host mode: CONTRACT.md §4, the host rule files and the README agree', () => {
  test('the rule of every host check is stated in CONTRACT.md §4 (the host side)', () => {
    const stated = [...section(contract, '## §4').matchAll(/^- \*\*([A-Z]+-\d+)\b/gm)].map((m) => m[1]);
    expect(stated.length).toBeGreaterThan(0);
    expect(hostCheckDefs.map((c) => c.rule).filter((rule) => !stated.includes(rule))).toEqual([]);
  });

  test('each host rule file (suites/host/host-<n>-*.ts) holds the checks of HOST-<n>, and together they hold every host check', async () => {
    const files = readdirSync(join(root, 'suites/host')).filter((name) => /^host-\d+-.+\.ts$/.test(name));
    expect(files.length).toBeGreaterThan(0);
    const inFiles: string[] = [];
    for (const file of files) {
      const rule = `HOST-${/^host-(\d+)-/.exec(file)![1]}`;
      const exported = Object.values(await import(/* @vite-ignore */ pathToFileURL(join(root, 'suites/host', file)).href)) as unknown[];
      const checks = exported.filter(Array.isArray).flat() as HostCheck[];
      expect(checks.length, file).toBeGreaterThan(0);
      expect(checks.filter((c) => c.rule !== rule).map((c) => `${file}: ${c.id} is ${c.rule}`)).toEqual([]);
      inFiles.push(...checks.map((c) => c.id));
    }
    expect([...inFiles].sort()).toEqual(hostChecks.map((c) => c.id).sort());
  });

  test("the README's host check table (Host mode) lists exactly the host checks, each under its rule", () => {
    const listed = checkTable('## Host mode');
    expect(listed.size).toBeGreaterThan(10); // the table was found and read
    expectTableOf(listed, hostCheckDefs);
  });
});
