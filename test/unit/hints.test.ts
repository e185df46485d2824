import { expect, test } from 'vitest';
import { hintText } from '../../cli/hints.js';

test("a scenario or run timeout names the flag that raises it in each mode (host mode's budgets follow from --timeout)", () => {
  expect(hintText('scenario-timeout', {})).toBe('; raise it with --scenario-timeout');
  expect(hintText('run-timeout', {})).toBe('; raise it with --run-timeout');
  expect(hintText('scenario-timeout', {}, 'host')).toBe('; raise it with --timeout');
  expect(hintText('run-timeout', {}, 'host')).toBe('; raise it with --timeout');
});
