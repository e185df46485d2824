import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { allChecks } from '../suites/index.js';
import { referenceConfig, root } from './helpers.js';
import { runCli } from './fixtures/run-cli.js';

// A correct server that asks the person at Codex before every command (fixtures/servers/confirming.mjs):
// answered as a person at Codex would (the default), it passes; answered as `codex exec` with
// approval_policy = "never" answers (--elicitation decline), its exec checks could not run, naming
// the elicitation, and the run is incomplete (exit 3), never failed.
const confirming = join(root, 'fixtures/servers/confirming.mjs');
const dir = mkdtempSync(join(tmpdir(), 'msc-elicitation-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Doc {
  elicitation: { answer: string; requests: { mode: string; action: string; message: string }[] };
  checks: { id: string; status: string; skipReason?: string; message?: string }[];
}
const run = async (extra: string[]) => {
  const { code, stdout, stderr } = await runCli(['--jobs', '2', '--reporter', 'json', '--config', referenceConfig, ...extra, confirming]);
  return { code, doc: JSON.parse(stdout) as Doc, human: stderr };
};
// Over stdio, without a real Codex: the checks that need the exec tool.
// The soak's check is not applicable without --soak, whatever the server does.
const execChecks = allChecks
  .filter((c) => c.needs.includes('exec') && !c.needs.includes('codex') && !c.needs.includes('http') && c.id !== 'explore/soak-holds-contract')
  .map((c) => c.id);

describe('a server that asks for confirmation before each command', () => {
  test('answered as a person at Codex would, it passes (exit 0); every request is in the report and the transcript', async () => {
    const transcripts = join(dir, 'accept');
    const { code, doc, human } = await run(['--transcripts', transcripts]);
    expect(doc.checks.filter((c) => c.status === 'fail' || c.status === 'error')).toEqual([]);
    expect(code).toBe(0);
    expect(doc.checks.find((c) => c.id === 'launcher/runs-given-executable')?.status).toBe('pass');
    expect(doc.elicitation.answer).toBe('accept');
    expect(doc.elicitation.requests.length).toBeGreaterThan(10);
    expect(new Set(doc.elicitation.requests.map((r) => `${r.mode} ${r.action}`))).toEqual(new Set(['form accept']));
    expect(human).toMatch(
      /^elicitation: the server asked for confirmation \d+ times .* codex exec with approval_policy = "never" Codex declines every such request/m,
    );
    const control = readdirSync(transcripts).find((f) => f.startsWith('forwarding'))!;
    expect(readFileSync(join(transcripts, control), 'utf8')).toMatch(
      /"method":"elicitation\/create"[\s\S]*"action":"accept","content":\{"confirm":true,"scope":"this command only"/,
    );
  }, 120_000);

  test('answered decline (codex exec, approval never): every exec check could not run, naming the elicitation; exit 3, not 1', async () => {
    const { code, doc, human } = await run(['--elicitation', 'decline', '--explore', '2']);
    expect(code).toBe(3);
    expect(doc.checks.filter((c) => c.status === 'fail' || c.status === 'error')).toEqual([]);
    for (const id of execChecks) {
      const result = doc.checks.find((c) => c.id === id);
      expect(result, id).toMatchObject({ status: 'skip', skipReason: 'could-not-run' });
      expect(result!.message, id).toMatch(/the server asked for confirmation \(elicitation\/create, form mode: .*\) and the suite answered decline/);
    }
    expect(new Set(doc.elicitation.requests.map((r) => r.action))).toEqual(new Set(['decline']));
    expect(human).toMatch(/the suite answered decline to each \(as codex exec with approval_policy = "never" does\)/);
  }, 120_000);

  test('"elicitation": "cancel" in the config answers cancel', async () => {
    const config = join(dir, 'cancel.json');
    writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(referenceConfig, 'utf8')), elicitation: 'cancel' }));
    const { code, stdout } = await runCli(['--jobs', '2', '--reporter', 'json', '--config', config, '--only', 'launcher/runs-given-executable', confirming]);
    const doc = JSON.parse(stdout) as Doc;
    expect(code).toBe(3);
    expect(doc.checks[0]).toMatchObject({ status: 'skip', message: expect.stringContaining('and the suite answered cancel') });
  }, 60_000);
});
