import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseJunit, type Property, type TestCase } from 'junit2json';
import { afterAll, describe, expect, test } from 'vitest';
import { escapeData, escapeProperty, renderGithub } from '../../cli/reporters/github.js';
import { renderHtml } from '../../cli/reporters/html.js';
import { renderHuman } from '../../cli/reporters/human.js';
import { parseReporters } from '../../cli/reporters/index.js';
import { renderJson } from '../../cli/reporters/json.js';
import { renderJunit } from '../../cli/reporters/junit.js';
import { SKIPPED_BY_OPERATOR } from '../../harness/exec-adapter.js';
import { MARKDOWN_BUDGET, renderMarkdown } from '../../cli/reporters/markdown.js';
import { redactArgv, redactText, writeTranscripts } from '../../cli/transcripts.js';
import { UsageError } from '../../cli/config.js';
import { reportValidator } from '../fixtures/report-validator.js';
import { blockedData, NASTY, scenariosFor, syntheticData, syntheticResults } from '../fixtures/synthetic-report.js';
import { allChecks } from '../../suites/index.js';

const scratch = mkdtempSync(join(tmpdir(), 'msc-reporters-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('json', () => {
  const validate = reportValidator();
  test('a run with every status validates against the shipped schema', () => {
    const doc = JSON.parse(renderJson(syntheticData()));
    expect(validate(doc), JSON.stringify(validate.errors, null, 2)).toBe(true);
    expect(doc.schemaVersion).toBe(1);
    expect(new Set(doc.checks.map((c: { status: string }) => c.status))).toEqual(new Set(['pass', 'fail', 'warn', 'xfail', 'xpass', 'error', 'skip']));
    expect(doc.summary).toMatchObject({
      total: 8,
      passed: 1,
      failed: 2,
      warnings: 1,
      xfail: 1,
      xpass: 1,
      errors: 1,
      skipped: 1,
      notApplicable: 1,
      couldNotRun: 0,
    });
  });
  test('the summary splits the skipped into not applicable and could not run', () => {
    const doc = JSON.parse(renderJson(blockedData()));
    expect(doc.summary).toMatchObject({ skipped: 4, notApplicable: 0, couldNotRun: 4 });
    expect(validate(doc), JSON.stringify(validate.errors, null, 2)).toBe(true);
    delete doc.summary.couldNotRun;
    expect(validate(doc)).toBe(false);
  });
  test('the schema is not a rubber stamp', () => {
    const doc = JSON.parse(renderJson(syntheticData()));
    doc.checks[0].status = 'passed';
    delete doc.contract;
    expect(validate(doc)).toBe(false);
    expect(validate.errors!.map((e: { instancePath: string; message?: string }) => e.instancePath + ' ' + e.message).join('\n')).toMatch(/contract|status/);
  });
  test('transcripts are referenced, not inlined: a count, and the file when one was written', () => {
    const doc = JSON.parse(renderJson(syntheticData()));
    const forwarding = doc.checks.find((c: { id: string }) => c.id === 'forwarding/state-unchanged');
    expect(forwarding.transcript).toEqual({ entries: 4, file: 't/forwarding_scenario.stdio.jsonl' });
    expect(doc.checks[0].transcript).toEqual({ entries: 4 });
    expect(JSON.stringify(doc)).not.toContain('sk-live');
  });
  test('each scenario is listed once per transport, with its checks, transcript and time; checks point at theirs', () => {
    const doc = JSON.parse(renderJson(syntheticData()));
    expect(doc.scenarios.map((s: { id: string; transport: string }) => `${s.transport} ${s.id}`)).toEqual([
      'stdio capability/scenario',
      'http capability/scenario',
      'stdio forwarding/scenario',
      'stdio aliases/scenario',
      'stdio launcher/scenario',
      'stdio launcher/crashed',
      'http transport/scenario',
    ]);
    const launcher = doc.scenarios.find((s: { id: string }) => s.id === 'launcher/scenario');
    expect(launcher).toEqual({
      id: 'launcher/scenario',
      title: 'launcher/scenario',
      transport: 'stdio',
      checks: ['launcher/absent-fails-closed', 'launcher/not-an-object'],
      ran: true,
      startMs: 0,
      durationMs: 12,
      transcript: { entries: 4 },
    });
    for (const check of doc.checks) {
      const owner = doc.scenarios.filter((s: { id: string; transport: string }) => s.id === check.scenario && s.transport === check.transport);
      expect(owner.length, check.id).toBe(1);
      expect(owner[0].checks).toContain(check.id);
    }
  });
  test('baseline marks and the skip reason are carried', () => {
    const doc = JSON.parse(renderJson(syntheticData()));
    const byId = (id: string) => doc.checks.find((c: { id: string }) => c.id === id);
    expect(byId('launcher/absent-fails-closed').baseline).toEqual({ id: 'launcher/absent-fails-closed', reason: 'tracked in #12', was: 'fail' });
    expect(byId('launcher/not-an-object').baseline).toMatchObject({ id: 'launcher/not-an-*', was: 'pass' });
    expect(byId('transport/http-fails-closed').skipReason).toBe('not-applicable');
    expect(doc.baseline.staleEntries).toEqual([{ id: 'launcher/not-an-*', reason: 'fixed upstream, not released' }]);
  });
});

describe('junit', () => {
  const parsed = async () => {
    const xml = renderJunit(syntheticData());
    const doc = await parseJunit(xml);
    const cases = (doc as { testsuite?: { testcase?: TestCase[] }[] }).testsuite!.flatMap((s) => s.testcase ?? []);
    return { xml, doc, cases, byName: (name: string) => cases.find((c) => c.name === name)! };
  };
  test('parses as JUnit: a testcase per check, classname = area, transport in the name (the run has both)', async () => {
    const { doc, cases } = await parsed();
    expect(cases).toHaveLength(syntheticResults().length);
    for (const c of cases) expect(c.name).toMatch(/ \((stdio|http)\)$/);
    expect(cases.map((c) => c.classname)).toEqual(syntheticResults().map((r) => r.id.split('/')[0]));
    expect(doc).toMatchObject({ tests: 8, failures: 3, errors: 1 });
  });
  test('a failure carries its message, diff and transcript path; characters survive the round trip', async () => {
    const { byName } = await parsed();
    const http = byName('advertised (http)');
    expect(http.failure![0]!.message).toBe(`capability missing ${NASTY}`);
    expect(http.failure![0]!.inner).toContain('- missing  experimental.codex/sandbox-state (was {})');
    expect(http.failure![0]!.inner).toContain(']]>');
    const forwarding = byName('state-unchanged (stdio)');
    expect(forwarding.failure![0]!.inner).toContain('transcript: t/forwarding_scenario.stdio.jsonl');
    expect(forwarding.failure![0]!.inner).toContain('~ changed  a: 1 -> 2');
  });
  test('expected failures are skipped with the baseline reason; a stale entry is a failure; warnings pass', async () => {
    const { byName } = await parsed();
    expect(byName('absent-fails-closed (stdio)').skipped![0]!.message).toBe('expected failure (baseline): tracked in #12');
    expect(byName('not-an-object (stdio)').failure![0]!.message).toMatch(/passes now, but baseline/);
    expect(byName('http-fails-closed (http)').skipped![0]!.message).toMatch(/^not-applicable: needs a Streamable HTTP target/);
    expect(byName('missing-file (stdio)').error![0]!.message).toBe('scenario crashed: Error: boom');
    const warn = byName('conflict-prefers-current (stdio)');
    expect(warn.failure).toBeUndefined();
    expect(warn['system-out']![0]).toMatch(/^WARNING \(SHOULD, does not fail the run\)/);
  });
  test('without both transports, names are the bare check names', async () => {
    const data = syntheticData();
    data.report.results = data.report.results.filter((r) => r.transport === 'stdio');
    const doc = await parseJunit(renderJunit(data));
    const names = (doc as { testsuite?: { testcase?: TestCase[] }[] }).testsuite!.flatMap((s) => s.testcase ?? []).map((c) => c.name);
    expect(names).toContain('state-unchanged');
  });
});

describe('markdown', () => {
  test('a table row per check, a section per finding, pipes and HTML neutralised', () => {
    const md = renderMarkdown(syntheticData());
    const rows = md.split('\n').filter((line) => /^\| (✅|❌|⚠️|⏭️|💥|🟡|🔴) /.test(line));
    expect(rows).toHaveLength(syntheticResults().length);
    for (const row of rows) expect(row.split(/(?<!\\)\|/).length).toBe(8); // 6 cells (transport included) + the two outer bars
    expect(md).toMatch(/^#### ❌ FAIL `capability\/advertised \(http\)` — CAP-1, MUST$/m);
    expect(md).toMatch(/^#### 🔴 XPASS `launcher\/not-an-object \(stdio\)` /m);
    expect(md).toMatch(/^#### 🟡 XFAIL `launcher\/absent-fails-closed \(stdio\)` /m);
    expect(md).toContain('Transcript: `t/forwarding_scenario.stdio.jsonl`');
    expect(md).toContain('**Stale baseline entries**');
    expect(md).toContain('- id: forwarding/state-unchanged');
    // Outside code blocks (where it shows as typed) no HTML from a server gets through.
    const prose = md.replace(/^(`{3,})[^\n]*\n[\s\S]*?\n\1$/gm, '');
    expect(md).toContain('<script>alert(1)</script>');
    expect(prose).not.toContain('<script>');
    expect(prose).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });
  test('stays under the 1 MiB step-summary limit however large the values', () => {
    const data = syntheticData();
    const huge = 'x'.repeat(50_000);
    const base = data.report.results[1]!;
    data.report.results = Array.from({ length: 200 }, (_, i) => ({
      ...base,
      message: `${i} ${huge}`,
      expected: huge,
      actual: { huge },
      diff: Array(100).fill(huge),
    }));
    const md = renderMarkdown(data);
    expect(Buffer.byteLength(md)).toBeLessThan(1024 * 1024);
    expect(md.length).toBeLessThan(MARKDOWN_BUDGET + 100_000);
    expect(md).toMatch(/more findings left out/);
    expect(md).toMatch(/more characters \(the JSON report has everything\)/);
  });
});

describe('github annotations', () => {
  test('escaping: % CR LF in messages; also : and , in properties', () => {
    expect(escapeData('100%\r\nnext')).toBe('100%25%0D%0Anext');
    expect(escapeProperty('a:b,c%\n')).toBe('a%3Ab%2Cc%25%0A');
  });
  test('one ::error per failing check, ::warning per SHOULD warning, each on one line', () => {
    const out = renderGithub(syntheticData());
    const lines = out.trimEnd().split('\n');
    for (const line of lines) expect(line).toMatch(/^::(error|warning) title=[^:]*::/);
    const titles = lines.map((l) =>
      l
        .match(/^::(\w+) title=([^:]*)::/)!
        .slice(1)
        .join(' '),
    );
    expect(titles).toEqual([
      'error capability/advertised (http)',
      'error forwarding/state-unchanged (stdio)',
      'warning aliases/conflict-prefers-current (stdio)',
      'error launcher/not-an-object (stdio)',
      'error launcher/missing-file (stdio)',
      'error baseline baseline.yml',
    ]);
    const http = lines[0]!;
    expect(http).toContain('capability missing pct 100%25 | pipe, comma: colon%0D%0Asecond line');
    expect(http).toContain('%0A  - missing  experimental.codex/sandbox-state (was {})');
  });
  test('a title holding : and , is escaped', () => {
    const data = syntheticData();
    data.report.results = [{ ...data.report.results[2]!, id: 'area/with:colon,comma' }];
    expect(renderGithub(data)).toMatch(/^::error title=area\/with%3Acolon%2Ccomma::/);
  });
});

describe('html (static checks; the browser test drives it)', () => {
  test('self-contained: no external reference, a CSP that forbids fetching, user text escaped', () => {
    const html = renderHtml(syntheticData());
    expect(html).not.toMatch(/\s(src|href)=/i);
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).toContain(`content="default-src 'none'`);
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect((html.match(/<tr class="check"/g) ?? []).length).toBe(syntheticResults().length);
    expect(html).not.toContain('sk-live');
  });
});

describe('transcripts', () => {
  test('one JSONL file per scenario and transport, secrets redacted', () => {
    const dir = join(scratch, 'transcripts');
    const written = writeTranscripts(dir, scenariosFor(syntheticResults()));
    const files = readdirSync(dir).sort();
    // Every scenario+transport with entries; the two results with empty transcripts write nothing.
    expect(files).toEqual([
      'aliases_scenario.stdio.jsonl',
      'capability_scenario.http.jsonl',
      'capability_scenario.stdio.jsonl',
      'forwarding_scenario.stdio.jsonl',
      'launcher_scenario.stdio.jsonl',
    ]);
    expect(written.get('forwarding/scenario|stdio')).toBe(join(dir, 'forwarding_scenario.stdio.jsonl'));
    const lines = readFileSync(join(dir, 'launcher_scenario.stdio.jsonl'), 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({
      dir: 'meta',
      scenario: 'launcher/scenario',
      transport: 'stdio',
      checks: ['launcher/absent-fails-closed', 'launcher/not-an-object'],
    });
    expect(lines.slice(1).map((l) => l.dir)).toEqual(['host->server', 'server->host', 'server-stderr', 'note']);
    expect(lines[1].message.params.headers).toEqual({ Authorization: '[redacted]', Cookie: '[redacted]' });
    expect(lines[3].text).toBe('debug: Authorization: [redacted]\n');
    expect(lines.every((l) => l.dir === 'meta' || typeof l.t === 'number')).toBe(true);
  });
  test('redaction of command lines and URLs', () => {
    expect(redactText('node s.js --token abc --api-key=xyz --port 3')).toBe('node s.js --token [redacted] --api-key=[redacted] --port 3');
    expect(redactText('API_KEY=sek node s.js')).toBe('API_KEY=[redacted] node s.js');
    expect(redactText('http://user:pw@127.0.0.1:8/mcp?access_token=t&x=1')).toBe('http://user:[redacted]@127.0.0.1:8/mcp?access_token=[redacted]&x=1');
    expect(redactArgv(['srv', '--password', 'hunter2', '--secret=s', 'plain'])).toEqual(['srv', '--password', '[redacted]', '--secret=[redacted]', 'plain']);
  });
});

describe('--reporter values', () => {
  test('human is always there; NAME=PATH writes a file', () => {
    expect(parseReporters([])).toEqual([{ name: 'human' }]);
    expect(parseReporters(['json=r.json', 'junit'])).toEqual([{ name: 'human' }, { name: 'json', path: 'r.json' }, { name: 'junit' }]);
  });
  test.each([
    [['nope'], /unknown reporter "nope"/],
    [['json', 'junit'], /only one format can write to stdout \(json, junit\)/],
    [['github=out.txt'], /github takes no file/],
    [['json='], /needs a file/],
  ])('%j is a usage error', (values, message) => {
    expect(() => parseReporters(values)).toThrow(UsageError);
    expect(() => parseReporters(values)).toThrow(message);
  });
});

const human = (data: ReturnType<typeof syntheticData>) =>
  renderHuman(data.report, { color: false, target: data.target.display, version: '0.0.0-test', checks: allChecks });

describe('the exec adapter in every header', () => {
  const detected = 'exec tool "exec" with arguments {"command":"{{argv}}","cwd":"{{cwd}}"} (detected from its input schema)';
  test('human: one line under the server line, with where the adapter came from', () => {
    const lines = human(syntheticData()).split('\n');
    expect(lines.slice(1, 3)).toEqual(['server: synthetic 1.0.0', detected]);
    expect(human(blockedData())).toContain('\nexec tool "run" with arguments {"cmd":"{{command}}"} (given by --exec-tool)\n');
    const config = syntheticData();
    config.report.exec = { tool: 'sh', arguments: { script: '{{command}}' }, source: 'config' };
    expect(human(config)).toContain('\nexec tool "sh" with arguments {"script":"{{command}}"} (from the config file)\n');
  });
  test('no adapter: one line saying so; a target that never started: no exec line at all', () => {
    const none = syntheticData();
    delete none.report.exec;
    const lines = human(none)
      .split('\n')
      .filter((l) => l.startsWith('exec tool'));
    expect(lines).toEqual([expect.stringMatching(/^exec tool: none resolved \(.*\), so the checks that need one are not applicable$/)]);
    const dead = syntheticData();
    delete dead.report.exec;
    dead.report.startFailure = { message: 'initialize failed', stderrTail: '' };
    expect(human(dead)).not.toMatch(/^exec tool/m);
  });
  test('json: the "exec" field (null when none resolved, absent when the target never started), valid against the schema', () => {
    const validate = reportValidator();
    const doc = JSON.parse(renderJson(syntheticData()));
    expect(doc.exec).toEqual({ tool: 'exec', arguments: { command: '{{argv}}', cwd: '{{cwd}}' }, source: 'detected', description: detected });
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    const none = syntheticData();
    delete none.report.exec;
    const noneDoc = JSON.parse(renderJson(none));
    expect(noneDoc.exec).toBeNull();
    expect(validate(noneDoc), JSON.stringify(validate.errors)).toBe(true);
    none.report.startFailure = { message: 'initialize failed', stderrTail: '' };
    const deadDoc = JSON.parse(renderJson(none));
    expect('exec' in deadDoc).toBe(false);
    expect(validate(deadDoc), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...doc, exec: { ...doc.exec, source: 'guessed' } })).toBe(false);
    expect(validate({ ...doc, exec: { ...doc.exec, extra: 1 } })).toBe(false);
  });
  test('json: a secret header in the arguments template is redacted', () => {
    const data = syntheticData();
    data.report.exec = { tool: 'exec', arguments: { command: '{{argv}}', headers: { Authorization: 'Bearer sk-live-9' } }, source: 'config' };
    expect(renderJson(data)).not.toContain('sk-live-9');
    expect(human(data)).not.toContain('sk-live-9');
  });
  test('markdown and html carry the same line', () => {
    expect(renderMarkdown(syntheticData())).toContain(
      '\nExec tool `exec` with arguments `{"command":"{{argv}}","cwd":"{{cwd}}"}` (detected from its input schema)\n',
    );
    expect(renderMarkdown(blockedData())).toContain('(given by `--exec-tool`)');
    const none = syntheticData();
    delete none.report.exec;
    expect(renderMarkdown(none)).toMatch(/^Exec tool: none resolved /m);
    expect(renderHtml(syntheticData())).toContain(`<p class="meta" id="exec">${detected.replace(/"/g, '&quot;')}</p>`);
  });
});

describe('the tools line: every listed tool, and what the suite did with it', () => {
  const withTools = () => {
    const data = syntheticData();
    data.report.tools = [
      { name: 'exec', role: 'primary', adapter: data.report.exec! },
      {
        name: 'start_process',
        role: 'extra',
        adapter: {
          tool: 'start_process',
          arguments: { command: '{{command}}', timeout_ms: 60000 },
          source: 'detected',
          chosen: ['timeout_ms: 60000 (a timeout in ms: generous)'],
        },
      },
      { name: 'rm_rf', why: SKIPPED_BY_OPERATOR, skipped: true },
      {
        name: 'run_fast',
        role: 'extra',
        adapter: { tool: 'run_fast', arguments: { command: '{{command}}' }, source: 'detected' },
        late: 'after notifications/tools/list_changed',
      },
      { name: 'echo\u001b[31m', why: 'no command-like input' },
      { name: 'ls_files', why: 'no command-like input' },
    ];
    return data;
  };
  test('human, markdown and html name each tool: tested (how) or not exercised (why); server text neutralised', () => {
    const text = human(withTools());
    const line = text.split('\n').find((l) => l.includes('tools: '))!;
    expect(line).toContain(
      '"start_process": tested by the fixed EXEC-1/LAUNCH calls (execution/every-exec-tool) with {"command":"{{command}}","timeout_ms":60000}',
    );
    expect(line).toContain('chose timeout_ms: 60000 (a timeout in ms: generous)');
    expect(line).toContain('"rm_rf": not exercised (left out by the operator: --skip-tool)');
    expect(line).toContain(
      '"run_fast": tested by the fixed EXEC-1/LAUNCH calls (execution/every-exec-tool), listed later (after notifications/tools/list_changed)',
    );
    expect(line).not.toContain('\u001b');
    // Tools left out for one reason are named together.
    expect(line).toMatch(/"echo[^"]*", "ls_files": not exercised \(no command-like input\)/);
    expect(renderMarkdown(withTools())).toMatch(/^tools: .*"rm_rf": not exercised/m);
    expect(renderHtml(withTools())).toContain('<p class="meta" id="tools">tools: ');
  });
  test('json: the "tools" field, valid against the schema', () => {
    const validate = reportValidator();
    const doc = JSON.parse(renderJson(withTools()));
    expect(doc.tools.map((t: { name: string; tested: boolean }) => [t.name, t.tested])).toEqual([
      ['exec', true],
      ['start_process', true],
      ['rm_rf', false],
      ['run_fast', true],
      [expect.stringMatching(/^echo/), false],
      ['ls_files', false],
    ]);
    expect(doc.tools[1].exec.chosen).toEqual(['timeout_ms: 60000 (a timeout in ms: generous)']);
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...doc, tools: [{ name: 'x' }] })).toBe(false);
  });
});

describe('the sessions line: the session pairs the AUTH-2 session checks drive', () => {
  const withSessions = () => {
    const data = syntheticData();
    data.report.sessions = [
      {
        open: { tool: 'shell_open\u001b[31m', arguments: {} },
        send: { tool: 'shell_send', arguments: { session: '{{sessionId}}', command: '{{command}}' } },
        detected: { idProperty: 'session', numericId: false, reads: 'its id read from the open result: "session: <id>"-like text' },
      },
      {
        open: { tool: 'session_open', arguments: { command: '{{argv}}' } },
        send: { tool: 'session_send', arguments: {} },
        sessionId: 'structuredContent.sessionId',
      },
    ];
    return data;
  };
  test('human, markdown and html: each pair, where it came from and how its id is read; server text neutralised', () => {
    const line = human(withSessions())
      .split('\n')
      .find((l) => l.startsWith('sessions: '))!;
    expect(line).toMatch(
      /^sessions: "shell_open[^"]*" \{\} → "shell_send" \{"session":"\{\{sessionId\}\}","command":"\{\{command\}\}"\} \(detected from the tool list; its id read/,
    );
    expect(line).toContain("(the operator's session adapter; its id read from structuredContent.sessionId)");
    expect(line).not.toContain('\u001b');
    expect(renderMarkdown(withSessions())).toMatch(/^sessions: .*"session_send"/m);
    expect(renderHtml(withSessions())).toContain('<p class="meta" id="sessions">sessions: ');
    expect(human(syntheticData())).not.toMatch(/^sessions: /m);
  });
  test('json: the "sessions" field, valid against the schema', () => {
    const validate = reportValidator();
    const doc = JSON.parse(renderJson(withSessions()));
    expect(doc.sessions.map((p: { send: { tool: string }; description: string }) => p.send.tool)).toEqual(['shell_send', 'session_send']);
    expect(doc.sessions[0].detected.idProperty).toBe('session');
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...doc, sessions: [{ open: { tool: 'x' } }] })).toBe(false);
  });
});

describe('could-not-run blocked by another check', () => {
  test('json: blockedBy, and whether the blocker is an expected failure (directly or in turn); valid against the schema', () => {
    const validate = reportValidator();
    const byId = (doc: { checks: { id: string }[] }, id: string) => doc.checks.find((c) => c.id === id) as Record<string, unknown>;
    const plain = JSON.parse(renderJson(blockedData()));
    expect(validate(plain), JSON.stringify(validate.errors)).toBe(true);
    expect(byId(plain, 'forwarding/argv-shape')).toMatchObject({
      status: 'skip',
      skipReason: 'could-not-run',
      blockedBy: 'launcher/runs-given-executable',
      blockedByExpectedFailure: false,
    });
    expect(byId(plain, 'launcher/absent-fails-closed')).not.toHaveProperty('blockedBy');
    const baselined = JSON.parse(renderJson(blockedData({ baseline: true })));
    expect(validate(baselined), JSON.stringify(validate.errors)).toBe(true);
    expect(byId(baselined, 'forwarding/argv-shape')).toMatchObject({ blockedBy: 'launcher/runs-given-executable', blockedByExpectedFailure: true });
    expect(byId(baselined, 'forwarding/state-fidelity')).toMatchObject({ blockedBy: 'forwarding/state-unchanged', blockedByExpectedFailure: true });
    // The schema holds blockedBy to could-not-run skips, and the two fields to each other.
    const check = byId(baselined, 'forwarding/argv-shape');
    const withCheck = (c: unknown) => ({ ...baselined, checks: [c] });
    expect(validate(withCheck({ ...check, status: 'pass', skipReason: undefined }))).toBe(false);
    expect(validate(withCheck({ ...check, skipReason: 'not-applicable' }))).toBe(false);
    expect(validate(withCheck({ ...check, blockedByExpectedFailure: undefined }))).toBe(false);
    expect(validate(withCheck({ ...check, blockedBy: undefined }))).toBe(false);
  });
  test('junit: the skip message names the blocker, and a blockedBy property', async () => {
    const doc = await parseJunit(renderJunit(blockedData({ baseline: true })));
    const cases = (doc as { testsuite?: { testcase?: TestCase[] }[] }).testsuite!.flatMap((s) => s.testcase ?? []);
    const argv = cases.find((c) => c.name === 'argv-shape')!;
    expect(argv.skipped![0]!.message).toBe('could-not-run (blocked by launcher/runs-given-executable, an expected failure): no launch served the control call');
    // junit2json parses a testcase's <properties> but its TestCase type leaves them out.
    expect((argv as TestCase & { properties?: Property[] }).properties).toContainEqual({ name: 'blockedBy', value: 'launcher/runs-given-executable' });
    const plain = await parseJunit(renderJunit(blockedData()));
    const plainCases = (plain as { testsuite?: { testcase?: TestCase[] }[] }).testsuite!.flatMap((s) => s.testcase ?? []);
    expect(plainCases.find((c) => c.name === 'state-fidelity')!.skipped![0]!.message).toBe(
      'could-not-run (blocked by forwarding/state-unchanged): no forwarded state to judge',
    );
    expect(plainCases.find((c) => c.name === 'absent-fails-closed')!.skipped![0]!.message).toBe('could-not-run: the scenario timed out');
  });
  test('human: "could not run (blocked by <id>): …", saying when the blocker is an expected failure', () => {
    const render = (data: ReturnType<typeof blockedData>) => renderHuman(data.report, { color: false, target: 't', version: 'v', checks: allChecks });
    const plain = render(blockedData());
    expect(plain).toContain('could not run (blocked by launcher/runs-given-executable): no launch served the control call\n');
    expect(plain).toContain('could not run: the scenario timed out\n');
    const baselined = render(blockedData({ baseline: true }));
    expect(baselined).toContain('could not run (blocked by launcher/runs-given-executable, an expected failure): no launch served the control call\n');
    expect(baselined).toContain('could not run (blocked by forwarding/state-unchanged, itself blocked by an expected failure): no forwarded state to judge\n');
  });
  test('human: a blocker --skip left out is named as such', () => {
    const data = blockedData();
    const results = data.report.results.filter((r) => r.id !== 'launcher/runs-given-executable');
    const text = renderHuman(
      { ...data.report, results, skipped: ['launcher/runs-given-executable'] },
      { color: false, target: 't', version: 'v', checks: allChecks },
    );
    expect(text).toContain('could not run (blocked by launcher/runs-given-executable, which --skip left out): no launch served the control call');
  });
  test('human: a message shared by several checks is said once, on one line (in full with --verbose)', () => {
    const data = blockedData();
    const message = 'the exec adapter\'s call was rejected: {\n  "code": -32602,\n  "message": "bad"\n}';
    const results = data.report.results.map((r) => (r.status === 'skip' ? { ...r, blockedBy: undefined, message } : r));
    const render = (verbose: boolean) => renderHuman({ ...data.report, results }, { color: false, target: 't', version: 'v', checks: allChecks, verbose });
    expect(render(false)).toContain('\n4 checks could not run: the exec adapter\'s call was rejected: { "code": -32602, "message": "bad" }\n');
    expect(render(true)).toContain('\n4 checks could not run: the exec adapter\'s call was rejected: {\n      "code": -32602,');
  });
  test('html shows the blocker in the row', () => {
    expect(renderHtml(blockedData())).toContain('<div class="blocked">could not run (blocked by launcher/runs-given-executable)</div>');
  });
});
