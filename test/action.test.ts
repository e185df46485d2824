import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse as parseJunit } from 'junit2json';
import YAML from 'yaml';
import { afterAll, describe, expect, test } from 'vitest';
import { mutantsServer, referenceServer, root } from './helpers.js';
import { reportValidator } from './fixtures/report-validator.js';

/**
 * action.yml without GitHub: each step's `run:` script goes to bash the way the runner runs a
 * composite step (`bash --noprofile --norc -eo pipefail FILE`), with the step's `env:` in which this
 * test substitutes the `${{ }}` expressions (the only place the action may use them, besides `if:`
 * and the outputs), GITHUB_ACTION_PATH pointing at this checkout, and temporary GITHUB_OUTPUT and
 * GITHUB_STEP_SUMMARY files. The install step (npm ci) is skipped: dist/ is already built here.
 */

interface Step {
  name?: string;
  id?: string;
  if?: string;
  shell?: string;
  env?: Record<string, string>;
  run?: string;
  uses?: string;
}
interface Action {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
}

const action = YAML.parse(readFileSync(join(root, 'action.yml'), 'utf8')) as Action;
const scratch = mkdtempSync(join(tmpdir(), 'msc-action-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const EXPRESSION = /\$\{\{\s*(.*?)\s*\}\}/g;

interface ActionRun {
  code: number | null;
  outputs: Record<string, string>;
  summary: string;
  stdout: string;
  stderr: string;
  skippedSteps: string[];
}

/** GITHUB_OUTPUT lines: `name=value`, or `name<<DELIM` ... `DELIM`. */
function parseOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heredoc = line.match(/^([^=<]+)<<(.+)$/);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2]!, i + 1);
      out[heredoc[1]!] = lines.slice(i + 1, end).join('\n');
      i = end;
    } else if (line.includes('=')) out[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
  }
  return out;
}

function bash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const file = join(mkdtempSync(join(scratch, 'step-')), 'step.sh');
  writeFileSync(file, script);
  return new Promise((resolve) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', file], { cwd, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function runAction(given: Record<string, string>, options: { cwd: string; path?: string }): Promise<ActionRun> {
  for (const name of Object.keys(given)) expect(action.inputs, `unknown input ${name}`).toHaveProperty(name);
  const inputs = Object.fromEntries(Object.entries(action.inputs).map(([name, def]) => [name, given[name] ?? def.default ?? '']));
  const home = mkdtempSync(join(scratch, 'runner-'));
  const summaryFile = join(home, 'step-summary.md');
  writeFileSync(summaryFile, '');
  const runnerTemp = join(home, 'temp');
  mkdirSync(runnerTemp);
  const steps: Record<string, Record<string, string>> = {};
  const result: ActionRun = { code: 0, outputs: {}, summary: '', stdout: '', stderr: '', skippedSteps: [] };
  const evaluate = (expression: string): string => {
    const input = expression.match(/^inputs\.([\w-]+)$/);
    if (input) return inputs[input[1]!]!;
    if (expression === 'github.action_path') return root;
    throw new Error(`the test does not evaluate \${{ ${expression} }}`);
  };
  for (const [index, step] of action.runs.steps.entries()) {
    const run = step.run!;
    if (run.includes('npm ci')) {
      result.skippedSteps.push(step.name ?? String(index));
      continue;
    }
    const env: NodeJS.ProcessEnv = { ...process.env, GITHUB_ACTION_PATH: root, GITHUB_STEP_SUMMARY: summaryFile, RUNNER_TEMP: runnerTemp };
    if (options.path) env.PATH = `${options.path}:${env.PATH}`;
    delete env.NO_COLOR;
    for (const [key, value] of Object.entries(step.env ?? {})) env[key] = String(value).replace(EXPRESSION, (_, expression: string) => evaluate(expression));
    const outputFile = join(home, `output-${index}`);
    writeFileSync(outputFile, '');
    env.GITHUB_OUTPUT = outputFile;
    const done = await bash(run, options.cwd, env);
    result.stdout += done.stdout;
    result.stderr += done.stderr;
    result.code = done.code;
    if (step.id) steps[step.id] = parseOutputs(readFileSync(outputFile, 'utf8'));
    if (done.code !== 0) break; // a failing step ends a composite action
  }
  for (const [name, def] of Object.entries(action.outputs)) {
    result.outputs[name] = def.value.replace(EXPRESSION, (_, expression: string) => {
      const m = expression.match(/^steps\.([\w-]+)\.outputs\.([\w-]+)$/);
      if (!m) throw new Error(`unexpected output expression ${expression}`);
      return steps[m[1]!]?.[m[2]!] ?? '';
    });
  }
  result.summary = readFileSync(summaryFile, 'utf8');
  return result;
}

const annotations = (stdout: string) => stdout.split('\n').filter((line) => line.startsWith('::'));
const workspace = (name: string) => {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  return dir;
};
/** A config that turns exploration off: the runs that are not about a green default run skip its dozen server starts. */
const noExplore = () => {
  const file = join(scratch, 'no-explore.json');
  writeFileSync(file, JSON.stringify({ explore: false }));
  return file;
};
/** Files an injected `touch pwned...` would have created, anywhere the scripts ran. */
const pwned = (...dirs: string[]) =>
  dirs.flatMap((dir) =>
    readdirSync(dir)
      .filter((name) => name.startsWith('pwned'))
      .map((name) => join(dir, name)),
  );

describe('action.yml, statically', () => {
  test('a composite action with the documented inputs and outputs', () => {
    expect(action.runs.using).toBe('composite');
    expect(Object.keys(action.inputs).sort()).toEqual([
      'baseline',
      'codex-config',
      'config',
      'fail-on',
      'http-command',
      'reporters',
      'server',
      'url',
      'version',
      'working-directory',
    ]);
    expect(Object.keys(action.outputs).sort()).toEqual(['failed', 'junit', 'passed', 'report-json', 'skipped', 'xfail']);
  });
  test('no expression inside a script: inputs arrive through env only', () => {
    for (const step of action.runs.steps) {
      expect(step.shell).toBe('bash');
      expect(step.uses).toBeUndefined();
      expect(step.run, step.name).not.toMatch(/\$\{\{/);
      expect(step.run, step.name).not.toMatch(/\beval\b/);
    }
    const wired = action.runs.steps.flatMap((s) => Object.values(s.env ?? {})).join(' ');
    for (const name of Object.keys(action.inputs)) expect(wired).toContain(`\${{ inputs.${name} }}`);
  });
  test('the install step installs only when dist/ is missing', () => {
    const install = action.runs.steps.find((s) => s.run?.includes('npm ci'))!;
    expect(install.if).toBe("inputs.version == ''");
    expect(install.run).toMatch(/if \[ -f "\$GITHUB_ACTION_PATH\/dist\/cli\/main\.js" \]/);
    // Not the 420 MB Codex binary (an optional dependency of our dev dependency @openai/codex).
    expect(install.run).toMatch(/npm ci --omit=optional /);
  });
});

describe('action.yml, run as GitHub would', () => {
  let mutantReport: { checks: { id: string; status: string; transport: string; skipReason?: string; blockedBy?: string }[] };

  /**
   * The one full Action run of the reference (a default run: exploration on), shared by two tests
   * that assert different things about it: the green run's outputs, and what a multi-line server
   * input and multi-line reporters do. Its server input is split over two lines and it asks for two
   * extra reports (absolute paths, so they land in their own directory, not the working directory):
   * had only the first line run, the target would be a bare `node`, never a green run whose report
   * names both words.
   */
  const multiLine = workspace('multi-line');
  let referenceRun: Promise<ActionRun> | undefined;
  const reference = () =>
    (referenceRun ??= runAction(
      {
        server: `node\n${relative(root, referenceServer)}`,
        reporters: `html=${join(multiLine, 'one.html')}\nhtml=${join(multiLine, 'two.html')}`,
        'working-directory': root,
        // The action's plumbing is the subject: test/cli.test.ts runs the reference's default run, exploration included.
        config: noExplore(),
      },
      { cwd: workspace('reference') },
    ));

  test('the reference server: green, outputs set, summary written, no annotation', async () => {
    const run = await reference();
    expect(run.code, run.stderr).toBe(0);
    expect(run.skippedSteps).toEqual(['Install mcp-sandbox-conformance']);
    expect(Number(run.outputs.passed)).toBeGreaterThan(10);
    expect(run.outputs).toMatchObject({ failed: '0', xfail: '0' });
    expect(run.summary).toMatch(/^## ✅ MCP sandbox conformance: /);
    expect(annotations(run.stdout)).toEqual([]);
    // The reports sit in RUNNER_TEMP, the JSON valid, the JUnit loadable.
    const validate = reportValidator();
    expect(validate(JSON.parse(readFileSync(run.outputs['report-json']!, 'utf8'))), JSON.stringify(validate.errors)).toBe(true);
    const junit = (await parseJunit(readFileSync(run.outputs.junit!, 'utf8'))) as { failures?: number };
    expect(junit.failures).toBe(0);
    // The human report goes to the log (stderr, since the annotations have stdout).
    expect(run.stderr.trimEnd().split('\n').at(-1)).toBe(`${run.outputs.passed} passed, 0 failed, ${run.outputs.skipped} skipped`);
  });

  test('a mutant: the step fails, annotations and summary name the violation; hostile inputs stay inert', async () => {
    const cwd = workspace('mutant');
    const hostile = 'html=$(touch${IFS}pwned1).html html=`touch${IFS}pwned2`.html html=report.html;touch${IFS}pwned3';
    const run = await runAction(
      { server: `node ${mutantsServer} drops-unknown-fields`, reporters: hostile, 'working-directory': cwd, config: noExplore() },
      { cwd: scratch },
    );
    expect(run.code).toBe(1);
    const report = JSON.parse(readFileSync(run.outputs['report-json']!, 'utf8'));
    mutantReport = report;
    expect(Number(run.outputs.failed)).toBe(report.summary.failed);
    expect(Number(run.outputs.failed)).toBeGreaterThanOrEqual(1);
    expect(annotations(run.stdout)).toContainEqual(
      expect.stringMatching(
        /^::error title=forwarding\/state-unchanged( \(stdio\))?::FWD-2 \(MUST\): (forwarding\/codex-call call #1.*?: )?the forwarded state differs/,
      ),
    );
    expect(run.summary).toMatch(/^## ❌ MCP sandbox conformance: /);
    expect(run.summary).toMatch(/^#### ❌ FAIL `forwarding\/state-unchanged/m);
    // The reporter values reached the CLI as plain words: files with those literal names, nothing run.
    expect(readdirSync(cwd).sort()).toEqual(['$(touch${IFS}pwned1).html', '`touch${IFS}pwned2`.html', 'report.html;touch${IFS}pwned3'].sort());
    expect(pwned(cwd, scratch, root)).toEqual([]);
  });

  test('with a baseline of those failures: green (or incomplete), the xfail output counts them', async () => {
    expect(mutantReport, 'needs the previous test').toBeDefined();
    const cwd = workspace('baseline');
    const failing = mutantReport.checks.filter((c) => c.status === 'fail' || c.status === 'warn');
    writeFileSync(join(cwd, 'baseline.yml'), YAML.stringify({ expectedFailures: failing.map((c) => ({ id: c.id, transport: c.transport, reason: 'known' })) }));
    const run = await runAction(
      {
        server: `node ${mutantsServer} drops-unknown-fields`,
        baseline: 'baseline.yml',
        'working-directory': cwd,
        config: noExplore(),
      },
      { cwd },
    );
    // A check blocked by a failure the baseline now expects does not make the run incomplete.
    const expected = new Set(failing.map((c) => c.id));
    const incomplete = mutantReport.checks.some(
      (c) => c.status === 'error' || (c.status === 'skip' && c.skipReason === 'could-not-run' && !(c.blockedBy && expected.has(c.blockedBy))),
    );
    expect(run.code).toBe(incomplete ? 3 : 0);
    expect(run.outputs).toMatchObject({ failed: '0', xfail: String(failing.length) });
    expect(annotations(run.stdout).filter((l) => l.startsWith('::error'))).toEqual([]);
  });

  test('a server input holding shell syntax is split into words, never run by a shell', async () => {
    const cwd = workspace('injection');
    const run = await runAction({ server: 'node "$(touch pwned1)" `touch pwned2` ; touch pwned3 && touch pwned4 | tee pwned5 $HOME' }, { cwd });
    expect(pwned(cwd, scratch, root)).toEqual([]);
    // node is asked to run a file named '"$(touch': the target fails to start (exit 4), and says so.
    expect(run.code).toBe(4);
    const report = JSON.parse(readFileSync(run.outputs['report-json']!, 'utf8'));
    expect(report.target.command).toEqual([
      'node',
      '"$(touch',
      'pwned1)"',
      '`touch',
      'pwned2`',
      ';',
      'touch',
      'pwned3',
      '&&',
      'touch',
      'pwned4',
      '|',
      'tee',
      'pwned5',
      '$HOME',
    ]);
  });

  test('config and baseline inputs holding shell syntax are plain paths', async () => {
    const cwd = workspace('injection-2');
    const run = await runAction({ server: 'node x.mjs', baseline: '$(touch pwned6).yml', config: '`touch pwned7`' }, { cwd });
    expect(pwned(cwd, scratch, root)).toEqual([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/cannot read config `touch pwned7`|baseline \$\(touch pwned6\)\.yml does not exist/);
  });

  test('an option smuggled through config or url stays the value of that input, never an option', async () => {
    const cwd = workspace('smuggled-options');
    const config = await runAction({ server: 'node x.mjs', config: '--http-command=touch pwned10 {port}' }, { cwd });
    expect(pwned(cwd, scratch, root)).toEqual([]);
    expect(config.code).toBe(2);
    expect(config.stderr).toMatch(/cannot read config --http-command=touch pwned10 \{port\}: ENOENT/);
    const spaced = await runAction({ server: 'node x.mjs', config: '--http-command', url: '--http-command=touch pwned11 {port}' }, { cwd });
    expect(pwned(cwd, scratch, root)).toEqual([]);
    expect(spaced.code).toBe(2);
    expect(spaced.stderr).toMatch(/--url is not a URL: --http-command=touch pwned11 \{port\}/);
    const baseline = await runAction({ server: 'node x.mjs', baseline: '--http-command=touch pwned12 {port}' }, { cwd });
    expect(pwned(cwd, scratch, root)).toEqual([]);
    expect(baseline.code).toBe(2);
  });

  test('what the CLI receives: each value glued to its flag; server and reporters split on spaces and newlines alike', async () => {
    const cwd = workspace('argv');
    const bin = workspace('fake-bin-argv');
    const log = join(cwd, 'npx-argv');
    writeFileSync(join(bin, 'npx'), `#!/bin/sh\nprintf '%s\\n' "$@" > '${log}'\n`);
    chmodSync(join(bin, 'npx'), 0o755);
    const run = await runAction(
      {
        server: 'node\n  server.mjs --stdio\n\t--verbose',
        reporters: 'html=a.html\nhtml=b b.html',
        config: '--http-command=touch pwned13',
        url: 'http://127.0.0.1:1/mcp',
        baseline: '-x.yml',
        version: '0.1.0',
      },
      { cwd, path: bin },
    );
    expect(run.code).toBe(0);
    const argv = readFileSync(log, 'utf8').trimEnd().split('\n');
    expect(argv).toContain('--url=http://127.0.0.1:1/mcp');
    expect(argv).toContain('--config=--http-command=touch pwned13');
    expect(argv).toContain('--baseline=-x.yml');
    expect(argv).not.toContain('--http-command=touch pwned13');
    expect(argv.filter((a) => a.startsWith('--reporter=') && !a.includes(cwd) && a !== '--reporter=github' && !/=(json|junit|markdown)=/.test(a))).toEqual([
      '--reporter=html=a.html',
      '--reporter=html=b',
      '--reporter=b.html',
    ]);
    expect(argv.slice(argv.indexOf('--'))).toEqual(['--', 'node', 'server.mjs', '--stdio', '--verbose']);
    expect(pwned(cwd, scratch, root)).toEqual([]);
  });

  test('codex-config: the server input names the entry; the server starts as that entry says', async () => {
    const run = await runAction(
      { 'codex-config': 'examples/codex-config.toml', server: 'reference', config: noExplore(), 'working-directory': root },
      { cwd: workspace('codex-config') },
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(run.outputs['report-json']!, 'utf8'));
    expect(report.target).toMatchObject({
      codexConfig: { file: join(root, 'examples/codex-config.toml'), server: 'reference' },
      command: ['node', 'fixtures/servers/mutant-base/server.mjs'],
    });
  });

  test('codex-config: each value glued to its flag; a server input of more than one word is refused', async () => {
    const cwd = workspace('codex-config-argv');
    const bin = workspace('fake-bin-codex-config');
    const log = join(cwd, 'npx-argv');
    writeFileSync(join(bin, 'npx'), `#!/bin/sh\nprintf '%s\\n' "$@" > '${log}'\n`);
    chmodSync(join(bin, 'npx'), 0o755);
    const run = await runAction({ 'codex-config': '--http-command=touch pwned14 {port}', server: '--url=x', version: '0.1.0' }, { cwd, path: bin });
    expect(run.code).toBe(0);
    const argv = readFileSync(log, 'utf8').trimEnd().split('\n');
    expect(argv).toContain('--codex-config=--http-command=touch pwned14 {port}');
    expect(argv).toContain('--server=--url=x');
    expect(argv).not.toContain('--');
    const two = await runAction({ 'codex-config': 'c.toml', server: 'node x.mjs', version: '0.1.0' }, { cwd, path: bin });
    expect(two.code).toBe(2);
    expect(two.stdout).toContain('::error title=mcp-sandbox-conformance::with codex-config, the server input must be the one NAME');
    expect(pwned(cwd, scratch, root)).toEqual([]);
  });

  test('a multi-line server input runs the whole command, not its first line', async () => {
    // The reference run above: its server input is `node` and the server's path on two lines.
    const run = await reference();
    expect(run.code, run.stderr).toBe(0);
    expect(readdirSync(multiLine).sort()).toEqual(['one.html', 'two.html']);
    const report = JSON.parse(readFileSync(run.outputs['report-json']!, 'utf8'));
    expect(report.target.command).toEqual(['node', relative(root, referenceServer)]);
  });

  test('version: runs that npm version through npx; a version that is not one is refused', async () => {
    const cwd = workspace('version');
    const bin = workspace('fake-bin');
    const log = join(cwd, 'npx-argv');
    writeFileSync(join(bin, 'npx'), `#!/bin/sh\nprintf '%s\\n' "$@" > '${log}'\n`);
    chmodSync(join(bin, 'npx'), 0o755);
    const run = await runAction({ server: 'node server.mjs', version: '0.1.0', 'fail-on': 'should' }, { cwd, path: bin });
    expect(run.code).toBe(0);
    const argv = readFileSync(log, 'utf8').trimEnd().split('\n');
    expect(argv.slice(0, 4)).toEqual(['--yes', 'mcp-sandbox-conformance@0.1.0', '--fail-on=should', '--reporter=github']);
    expect(argv.slice(-3)).toEqual(['--', 'node', 'server.mjs']);

    const bad = await runAction({ server: 'node server.mjs', version: '1.0;touch pwned8' }, { cwd, path: bin });
    expect(bad.code).toBe(2);
    expect(bad.stdout).toMatch(/^::error title=mcp-sandbox-conformance::the version input must be an npm version/m);
    expect(existsSync(join(cwd, 'pwned8'))).toBe(false);
  });
});
