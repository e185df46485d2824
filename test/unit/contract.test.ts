import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { hostCheckDefs } from '../../suites/host/index.js';
import { allChecks } from '../../suites/index.js';
import { RULES } from '../../suites/engine/model.js';
import { root } from '../helpers.js';

const contract = readFileSync(join(root, 'CONTRACT.md'), 'utf8');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

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
    const section = readme.slice(readme.indexOf('## The checks'), readme.indexOf('\n## ', readme.indexOf('## The checks') + 1));
    const listed = new Map<string, string>();
    for (const row of section.split('\n').filter((line) => line.startsWith('| `'))) {
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
    expect(listed.size).toBeGreaterThan(20); // the table was found and read
    const ids = (pattern: string) => allChecks.filter((c) => (pattern.endsWith('/*') ? c.id.startsWith(pattern.slice(0, -1)) : c.id === pattern));
    const covered = [...listed.keys()].flatMap((name) => ids(name).map((c) => c.id));
    expect([...covered].sort()).toEqual(allChecks.map((c) => c.id).sort());
    for (const [name, rules] of listed) for (const check of ids(name)) expect(rules, check.id).toContain(check.rule);
  });
});
