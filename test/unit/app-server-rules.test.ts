import { describe, expect, test } from 'vitest';
import { checkResourceReadMeta } from '../../harness/app-server-rules.js';

const reserved = (key: string) => ({ ok: false, code: -32600, message: `reserved resource read metadata key: ${key}` });

describe('resource read caller _meta, as Codex app-server judges it (HOST-3)', () => {
  test.each(['threadId', 'x-codex-turn-metadata', 'codex/connectionLease'])('%s is reserved on every server', (key) => {
    expect(checkResourceReadMeta({ ok: 1, [key]: 'x' }, 'docs', 7)).toEqual(reserved(key));
    expect(checkResourceReadMeta({ [key]: {} }, 'codex_apps', 7)).toEqual(reserved(key));
  });
  test.each(['connector_id', 'link_id'])('%s is reserved only for codex_apps', (key) => {
    expect(checkResourceReadMeta({ [key]: 'c' }, 'codex_apps', 1)).toEqual(reserved(key));
    expect(checkResourceReadMeta({ [key]: 'c' }, 'docs', 1)).toEqual({ ok: true, forwarded: { [key]: 'c', progressToken: 1 } });
  });
  test('the nested _codex_apps.resource_uri is reserved for codex_apps; other nested keys are not', () => {
    expect(checkResourceReadMeta({ _codex_apps: { resource_uri: 'u' } }, 'codex_apps', 1)).toEqual(reserved('_codex_apps.resource_uri'));
    expect(checkResourceReadMeta({ _codex_apps: { other: 1 } }, 'codex_apps', 1)).toEqual({
      ok: true,
      forwarded: { _codex_apps: { other: 1 }, progressToken: 1 },
    });
    expect(checkResourceReadMeta({ _codex_apps: { resource_uri: 'u' } }, 'docs', 1)).toMatchObject({ ok: true });
  });
  test('non-object _meta is an invalid request; null is accepted', () => {
    expect(checkResourceReadMeta('x', 'docs', 1)).toEqual({ ok: false, code: -32600, message: 'Invalid request: invalid type: string "x", expected a map' });
    expect(checkResourceReadMeta([1], 'docs', 1)).toEqual({ ok: false, code: -32600, message: 'Invalid request: invalid type: sequence, expected a map' });
    expect(checkResourceReadMeta(5, 'docs', 1)).toEqual({ ok: false, code: -32600, message: 'Invalid request: invalid type: integer `5`, expected a map' });
    expect(checkResourceReadMeta(true, 'docs', 1)).toEqual({
      ok: false,
      code: -32600,
      message: 'Invalid request: invalid type: boolean `true`, expected a map',
    });
    expect(checkResourceReadMeta(null, 'docs', 3)).toEqual({ ok: true, forwarded: { progressToken: 3 } });
  });
  test('accepted _meta is forwarded verbatim, key order kept, plus progressToken', () => {
    const result = checkResourceReadMeta({ b: 1, a: { z: null } }, 'docs', 4);
    expect(result).toEqual({ ok: true, forwarded: { b: 1, a: { z: null }, progressToken: 4 } });
    expect(Object.keys((result as { forwarded: object }).forwarded)).toEqual(['b', 'a', 'progressToken']);
  });
  test('a caller progressToken is overwritten in place, not moved to the end', () => {
    const result = checkResourceReadMeta({ b: 1, progressToken: 'caller', a: 2 }, 'docs', 4);
    expect(result).toEqual({ ok: true, forwarded: { b: 1, progressToken: 4, a: 2 } });
    expect(Object.keys((result as { forwarded: object }).forwarded)).toEqual(['b', 'progressToken', 'a']);
  });
});
