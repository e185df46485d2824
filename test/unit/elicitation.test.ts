import { describe, expect, test } from 'vitest';
import { answerElicitation, fillForm } from '../../harness/elicitation.js';

describe('the fake Codex answers elicitation/create', () => {
  const schema = {
    type: 'object',
    properties: {
      confirm: { type: 'boolean', title: 'Run it' },
      keep: { type: 'boolean', default: false },
      scope: { type: 'string', enum: ['once', 'always'] },
      pick: {
        type: 'string',
        oneOf: [
          { const: 'a', title: 'A' },
          { const: 'b', title: 'B' },
        ],
      },
      many: { type: 'array', items: { type: 'string', enum: ['x', 'y'] } },
      email: { type: 'string', format: 'email' },
      name: { type: 'string', minLength: 5, maxLength: 8 },
      tries: { type: 'integer', minimum: 3, maximum: 9 },
      ratio: { type: 'number', maximum: 0.5 },
      note: { type: 'string', default: 'as given' },
    },
    required: ['confirm'],
  };

  test('a form as a person who agrees fills it: defaults, the first choice, true, a plausible value of each type within its bounds', () => {
    expect(fillForm(schema)).toEqual({
      confirm: true,
      keep: false,
      scope: 'once',
      pick: 'a',
      many: ['x'],
      email: 'user@example.com',
      name: 'yesss',
      tries: 3,
      ratio: 0.5,
      note: 'as given',
    });
    expect(fillForm(undefined)).toEqual({});
  });

  test('accept fills and accepts a form, cancels a URL request (no browser); decline and cancel answer every request alike', () => {
    expect(answerElicitation({ message: 'ok?', requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } } } }, 'accept')).toEqual({
      action: 'accept',
      content: { confirm: true },
    });
    expect(answerElicitation({ mode: 'url', message: 'sign in', url: 'https://example.com/' }, 'accept')).toEqual({ action: 'cancel' });
    for (const mode of ['form', 'url'])
      for (const policy of ['decline', 'cancel'] as const) expect(answerElicitation({ mode, message: 'm' }, policy)).toEqual({ action: policy });
  });
});
