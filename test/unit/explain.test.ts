import { describe, expect, test } from 'vitest';
import { renderExplain } from '../../cli/reporters/catalog.js';
import { hostCheckDefs } from '../../suites/host/index.js';
import { allChecks } from '../../suites/index.js';

describe('explain: what the suite observes', () => {
  const checks = [...allChecks, ...hostCheckDefs];

  test('there are server and host checks to look at', () => {
    expect(allChecks.length).toBeGreaterThan(0);
    expect(hostCheckDefs.length).toBeGreaterThan(0);
  });

  test.each(checks.map((c) => [c.id, c] as const))('%s says what is observed', (_id, check) => {
    expect(typeof check.observes).toBe('string');
    expect(check.observes.trim().length).toBeGreaterThanOrEqual(40);
  });

  test.each(allChecks.map((c) => [c.id, c] as const))('explain %s shows it after the rule', (_id, check) => {
    const lines = renderExplain(check).split('\n');
    const rule = lines.findIndex((l) => l.startsWith('Rule: '));
    expect(rule).toBeGreaterThan(-1);
    expect(lines[rule + 1]).toBe(`What the suite observes: ${check.observes}`);
  });

  test.each(hostCheckDefs.map((c) => [c.id, c] as const))('explain %s (a host check) shows it after the rule, about hosts', (_id, check) => {
    const lines = renderExplain(check).split('\n');
    const rule = lines.findIndex((l) => l.startsWith('Rule: '));
    expect(lines[rule + 1]).toBe(`What the suite observes: ${check.observes}`);
    expect(lines).toContain(`How hosts get it wrong: ${check.typicalMistake}`);
  });
});
