import { describe, expect, test } from 'vitest';
import { BoundedJsonParser, boundValue, elidedMessages, STRING_KEEP } from '../../harness/bounded-json.js';

/** Parses `text` fed in pieces of `size` bytes. */
function parse(text: string | Buffer, size = 7): unknown {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const parser = new BoundedJsonParser();
  for (let at = 0; at < bytes.length; at += size) parser.feed(bytes.subarray(at, at + size));
  return parser.finish();
}

describe('BoundedJsonParser', () => {
  const small = [
    '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a\\n\\"quoted\\" \\\\ é \\u00e9 \\ud83d\\ude00"}],"isError":false}}',
    '[1,-2.5e3,true,false,null,"",{},[],{"a":{"b":[[]]}}]',
    '  {"__proto__": {"x": 1}, "a": 1, "a": 2}  ',
    '"just a string"',
    '0',
  ];
  test.each(small)('equals JSON.parse on %s, whatever the pieces', (text) => {
    for (const size of [1, 2, 3, 7, 1000]) expect(parse(text, size)).toEqual(JSON.parse(text));
    expect(Object.keys(parse(small[2]!) as object)).toEqual(['__proto__', 'a']);
  });
  test.each(['{"a":1', '{"a" 1}', '[1,]x', '{"a":1}{"b":2}', '[1}', 'tru', '{"a":"\u0001"}'])('refuses %s as JSON.parse does', (text) => {
    expect(() => JSON.parse(text)).toThrow();
    expect(() => parse(text)).toThrow(SyntaxError);
  });
  test('white space only: no value', () => expect(parse('   \r')).toBeUndefined());

  test("a long string keeps its head and tail around a marker with its size and hash; the message's size and hash are noted", () => {
    const log = 'é' + 'x'.repeat(5_000_000) + 'THE END\\n';
    const text = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"${log}"},{"type":"text","text":"probe line"}],"isError":true}}`;
    const message = parse(text, 65536) as { result: { content: { text: string }[]; isError: boolean } };
    const [first, second] = message.result.content;
    expect(message.result.isError).toBe(true);
    expect(second!.text).toBe('probe line');
    expect(first!.text.length).toBeLessThan(STRING_KEEP + 200);
    expect(first!.text.startsWith('éxxx')).toBe(true);
    expect(first!.text.endsWith('xxTHE END\n')).toBe(true);
    expect(first!.text).toMatch(/…\[4934\d{3} bytes elided here by the conformance suite, sha256 [0-9a-f]{16}…\]…/);
    expect(elidedMessages.get(message)).toEqual({ bytes: Buffer.byteLength(text), sha256: expect.stringMatching(/^[0-9a-f]{16}$/) });
  });
  test('a huge array keeps its first items and counts the rest', () => {
    const text = `[${Array.from({ length: 50_000 }, (_, i) => `{"n":${i}}`).join(',')}]`;
    const items = parse(text, 4096) as unknown[];
    expect(items.length).toBeLessThan(10_001);
    expect(items[0]).toEqual({ n: 0 });
    expect(items[items.length - 1]).toMatch(/^…\[\d+ more items not kept by the conformance suite\]$/);
  });
});

describe('boundValue', () => {
  test('a value within the bounds is returned as it is', () => {
    const value = { a: ['x'.repeat(1000)], b: { c: 1 } };
    expect(boundValue(value)).toBe(value);
  });
  test('a bounded form bounded again is unchanged: its marker keeps the whole string size and hash (a message parsed again after the parser, as over HTTP)', () => {
    const long = 'é' + 'y'.repeat(3_000_000) + 'THE END';
    const texts = [long, long.slice(0, 600_000), 'z'.repeat(STRING_KEEP + 100), 'w'.repeat(STRING_KEEP + 1000)];
    const text = JSON.stringify({ result: { content: texts.map((t) => ({ type: 'text', text: t })) } });
    const once = parse(text, 65536);
    expect(boundValue(JSON.parse(JSON.stringify(once)))).toEqual(once);
    const content = (once as { result: { content: { text: string }[] } }).result.content;
    expect(content[0]!.text).toMatch(/…\[29\d{5} bytes elided here by the conformance suite, sha256 [0-9a-f]{16}…\]…/);
    // Just over the limit, by less than a marker takes: kept whole.
    expect(content[2]!.text).toBe(texts[2]);
    expect(content[3]!.text).toContain('bytes elided here');
    expect(boundValue({ t: content[0]!.text })).toEqual({ t: content[0]!.text });
  });
  test('a long string is cut as the parser cuts it', () => {
    const value = { result: { content: [{ type: 'text', text: 'a'.repeat(3_000_000) + 'tail' }], isError: false } };
    const bounded = boundValue(value) as typeof value;
    expect(bounded).not.toBe(value);
    expect(bounded.result.isError).toBe(false);
    expect(bounded.result.content[0]!.text.endsWith('atail')).toBe(true);
    expect(bounded.result.content[0]!.text).toContain('bytes elided here by the conformance suite');
  });
});
