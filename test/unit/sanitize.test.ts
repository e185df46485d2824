import { describe, expect, test } from 'vitest';
import {
  defuseWorkflowCommands,
  envSecrets,
  githubSafe,
  jsonSafe,
  mapStrings,
  neutralize,
  neutralizeMultiline,
  redact,
  sanitizeText,
  urlSecrets,
} from '../../cli/sanitize.js';
import { escapeData } from '../../cli/reporters/github.js';

const ESC = '\x1b';

describe('neutralize', () => {
  test('strips CSI, OSC, 8-bit CSI, other ESC sequences and C0/C1 controls; keeps TAB and text', () => {
    expect(neutralize(`a${ESC}[8mhidden${ESC}[0m`)).toBe('ahidden');
    expect(neutralize(`${ESC}]0;title\x07x${ESC}]8;;http://e/${ESC}\\link${ESC}]8;;${ESC}\\`)).toBe('xlink');
    expect(neutralize('\x9b31mred')).toBe('red');
    expect(neutralize(`${ESC}(B${ESC}=${ESC}c${ESC}Pdcs${ESC}\\ok`)).toBe('ok');
    expect(neutralize('\x00a\x07b\x08c\x7fd\x85e\x9cf\tg')).toBe('abcdef\tg');
    expect(neutralize('\u202eevil')).toBe('evil');
    expect(neutralize(`lone ${ESC}`)).toBe('lone ');
  });
  test('one line: CR and LF become visible', () => {
    expect(neutralize('a\r\nb\rc\nd')).toBe('a\\r\\nb\\rc\\nd');
    expect(neutralize('a\u2028b')).toBe('a\\u2028b');
  });
  test('multi-line: LF and CRLF kept (CRLF made LF on request), a lone CR becomes visible', () => {
    expect(neutralizeMultiline(`a\r\nb\rc\nd${ESC}[2K`)).toBe('a\r\nb\\rc\nd');
    expect(neutralizeMultiline('a\r\nb\rc', { lines: true })).toBe('a\nb\\rc');
    expect(neutralizeMultiline('a\u2029b')).toBe('a\nb');
  });
});

describe('redact', () => {
  test('bearer tokens, authorization headers, KEY=value and flags with secret names', () => {
    expect(redact('Authorization: Bearer abc.def.ghi')).toBe('Authorization: [redacted]');
    expect(redact('sent bearer abc.def.ghi to it')).toBe('sent bearer [redacted] to it');
    expect(redact('API_TOKEN=sk-1 --token hunter2 --password=pw --port 3')).toBe('API_TOKEN=[redacted] --token [redacted] --password=[redacted] --port 3');
    expect(redact('PASSWORD=letmein db_passwd="two words" private-key=k client_secret=s')).toBe(
      'PASSWORD=[redacted] db_passwd=[redacted] private-key=[redacted] client_secret=[redacted]',
    );
    expect(redact('{"apiKey": "k1", "password":"p\\"q", "name": "x"}')).toBe('{"apiKey": "[redacted]", "password":"[redacted]", "name": "x"}');
    expect(redact('MY_CREDENTIALS=c auth=a')).toBe('MY_CREDENTIALS=[redacted] auth=[redacted]');
  });
  test('names that only look alike are left alone', () => {
    expect(redact('PORT=3 authority=codex author=me --verbose yes')).toBe('PORT=3 authority=codex author=me --verbose yes');
  });
  test('URLs: the userinfo password and key-like query parameters', () => {
    expect(redact('http://user:pw@127.0.0.1:8/mcp?token=t&x=1&api_key=k')).toBe(
      'http://user:[redacted]@127.0.0.1:8/mcp?token=[redacted]&x=1&api_key=[redacted]',
    );
    expect(redact('see https://example.com/a?page=2')).toBe('see https://example.com/a?page=2');
  });
  test('token shapes, whatever they are called', () => {
    expect(redact('ghp_0123456789abcdefABCDEF0123 sk-live-1234567890abcdef xoxb-1234-5678-abcdef')).toBe('[redacted] [redacted] [redacted]');
    expect(redact('jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl end')).toBe('jwt [redacted] end');
    expect(redact('AKIAIOSFODNN7EXAMPLE')).toBe('[redacted]');
    expect(redact('task-1234567890abcdef')).toBe('task-1234567890abcdef');
  });
  test('exact extra secrets, longest first; too-short ones are ignored', () => {
    expect(redact('value s3cr3t-value and s3cr3t', ['s3cr3t', 's3cr3t-value', 'ab'])).toBe('value [redacted] and [redacted]');
    expect(redact('a+b(c) is here', ['a+b(c)'])).toBe('[redacted] is here');
    expect(redact('ab cd', ['ab'])).toBe('ab cd');
  });
  test('a secret split by an escape sequence is found after neutralizing', () => {
    expect(sanitizeText(`hun${ESC}[0mter2 here`, ['hunter2'])).toBe('[redacted] here');
  });
});

describe('secrets the user gave', () => {
  test('env values whose names look secret', () => {
    expect(envSecrets({ API_KEY: 's3cr3t-value', HOME: '/home/x', GITHUB_TOKEN: 't0ken', EMPTY_SECRET: '' })).toEqual(['s3cr3t-value', 't0ken']);
  });
  test('the password of a URL, decoded and encoded, and the Basic credentials', () => {
    expect(urlSecrets('http://me:p%40ss@127.0.0.1/mcp')).toEqual(['p%40ss', 'p@ss', Buffer.from('me:p@ss').toString('base64')]);
    expect(urlSecrets('http://127.0.0.1/mcp')).toEqual([]);
    expect(urlSecrets(undefined)).toEqual([]);
  });
});

describe('workflow commands', () => {
  test('defused: "::" at a line start (after blanks), "##[" anywhere', () => {
    expect(defuseWorkflowCommands('::error::x\n  ::add-mask::y\nok ::z\n##[error]a b##[group]c')).toBe(
      '\\::error::x\n  \\::add-mask::y\nok ::z\n#\\#[error]a b#\\#[group]c',
    );
  });
  test('githubSafe wraps a block in a stop-commands pair whose token is not in the block', () => {
    const wrapped = githubSafe('::error::forged\nline 2\n').split('\n');
    const token = /^::stop-commands::(msc-[0-9a-f]{32})$/.exec(wrapped[0]!)?.[1];
    expect(token).toBeDefined();
    expect(wrapped.slice(1)).toEqual(['\\::error::forged', 'line 2', `::${token}::`, '']);
  });
  test('an annotation message cannot break out: %, CR and LF are encoded', () => {
    expect(escapeData('100%\r\n::error::x')).toBe('100%25%0D%0A::error::x');
  });
});

describe('structured values', () => {
  test('mapStrings fixes keys and values, and redacts string values under secret-looking keys', () => {
    const value = { [`k${ESC}[8m`]: ['a\x07', { token: 'hunter2', n: 1, nested: { password: 'x' } }], auth: { scheme: 'b' } };
    expect(mapStrings(value, neutralize)).toEqual({ k: ['a', { token: '[redacted]', n: 1, nested: { password: '[redacted]' } }], auth: { scheme: 'b' } });
  });
  test('jsonSafe escapes C1 controls, line separators and "##[" and keeps the JSON value', () => {
    const value = { s: 'a\x9bb\u2028c ##[error] \\##[x' };
    const text = jsonSafe(JSON.stringify(value));
    expect(text).not.toMatch(/[\x7f-\x9f\u2028]|##\[/);
    expect(JSON.parse(text)).toEqual(value);
  });
});
