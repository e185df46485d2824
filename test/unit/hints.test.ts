import { expect, test } from 'vitest';
import { hintText } from '../../cli/hints.js';

test("a scenario timeout names the flag that raises it in each mode (host mode's budget follows from --timeout)", () => {
  expect(hintText('scenario-timeout', {})).toBe('; raise it with --scenario-timeout');
  expect(hintText('scenario-timeout', {}, 'host')).toBe('; raise it with --timeout');
});
