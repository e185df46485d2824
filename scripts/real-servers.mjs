#!/usr/bin/env node
// npm run real-servers: the suite against public MCP servers from npm, as a user would run it, and
// the results compared with scripts/real-servers.expected.json. Not part of npm test: it needs the
// npm registry. Each server is installed once, at its pinned version, into
// node_modules/.cache/real-servers/ (`npm install --prefix`; a cache already holding that version
// is reused), then run as the README tells a user to (`mcp-sandbox-conformance <its bin>`, from a
// scratch directory that is also its HOME, removed afterwards). Prints a table; exits 0 when every
// run matches its expectations (exit code, failing check ids, could-not-run reasons), 1 otherwise.
//
// Install scripts are not run (--ignore-scripts): desktop-commander's postinstall reports the
// installation over the network and puppeteer's downloads a browser (PUPPETEER_SKIP_DOWNLOAD=1 is
// set as well); the suite itself talks only to loopback. Needs a build (npx tsc -p .).
//
//   REAL_SERVERS_ONLY=name[,name]   run only these rows (by "name" in the expectations file)
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist/cli/main.js');
const cacheRoot = join(root, 'node_modules/.cache/real-servers');
const expectations = JSON.parse(readFileSync(join(root, 'scripts/real-servers.expected.json'), 'utf8'));

/** Runs a command to its end; resolves with its exit code and output. */
function run(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ code: 127, output: String(error) }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), output }));
  });
}

/** The package's directory in the cache, installed at its pinned version unless it is there already. */
async function install({ package: name, version }) {
  const prefix = join(cacheRoot, `${name.replace('/', '+')}@${version}`);
  const manifest = join(prefix, 'node_modules', name, 'package.json');
  if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).version === version) return { prefix, cached: true };
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const env = { ...process.env, PUPPETEER_SKIP_DOWNLOAD: '1' };
  const args = ['install', '--prefix', prefix, '--ignore-scripts', '--no-audit', '--no-fund', '--save-exact', `${name}@${version}`];
  const installed = await run(npm, args, { env });
  if (installed.code !== 0) throw new Error(`npm install ${name}@${version} failed:\n${installed.output}`);
  return { prefix, cached: false };
}

/** What a could-not-run check was blocked by: the check it names (blockedBy, or "see <id>"), else its message with paths and numbers blurred. */
export function reasonOf(check) {
  if (check.blockedBy) return check.blockedBy;
  const named = /\(see ([a-z-]+\/[a-z-]+)/.exec(check.message ?? '');
  if (named) return named[1];
  const text = (check.message ?? '').replace(/\s+/g, ' ').replace(/\/\S+/g, '<path>').replace(/\d+/g, 'N');
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}

/** The facts compared: exit code, failing check ids, the distinct could-not-run reasons. */
function factsOf(report, code) {
  const checks = report?.checks ?? [];
  return {
    exitCode: code,
    failing: [...new Set(checks.filter((c) => c.status === 'fail' || c.status === 'error').map((c) => c.id))].sort(),
    couldNotRun: [...new Set(checks.filter((c) => c.status === 'skip' && c.skipReason === 'could-not-run').map(reasonOf))].sort(),
  };
}

/** One row: the suite run on the installed server from a scratch directory that is also HOME. */
async function runRow(row) {
  const server = expectations.servers[row.server];
  const { prefix, cached } = await install(server);
  const scratch = mkdtempSync(join(tmpdir(), 'msc-real-'));
  try {
    const json = join(scratch, 'report.json');
    const bin = join(prefix, 'node_modules/.bin', server.bin);
    const env = { ...process.env, HOME: scratch, PUPPETEER_SKIP_DOWNLOAD: '1' };
    const started = Date.now();
    const result = await run(process.execPath, [cli, '--reporter', `json=${json}`, ...(server.flags ?? []), ...(row.flags ?? []), bin], { cwd: scratch, env });
    const seconds = (Date.now() - started) / 1000;
    const report = existsSync(json) ? JSON.parse(readFileSync(json, 'utf8')) : undefined;
    return { row, server, cached, seconds, facts: factsOf(report, result.code), output: result.output };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The expected facts that differ from the actual ones (a fact left out of the expectations is not compared). */
function mismatches(expected, actual) {
  const out = [];
  for (const key of ['exitCode', 'failing', 'couldNotRun']) {
    if (!(key in expected)) continue;
    if (JSON.stringify(expected[key]) !== JSON.stringify(actual[key]))
      out.push(`${key}: expected ${JSON.stringify(expected[key])}, got ${JSON.stringify(actual[key])}`);
  }
  // Where which further checks fail varies from run to run, those that fail in every run.
  const missing = (expected.failingIncludes ?? []).filter((id) => !actual.failing.includes(id));
  if (missing.length) out.push(`failing: expected to include ${JSON.stringify(missing)}, got ${JSON.stringify(actual.failing)}`);
  return out;
}

const only = process.env.REAL_SERVERS_ONLY?.split(',').filter(Boolean);
const rows = expectations.runs.filter((row) => !only || only.includes(row.name));
const started = Date.now();
const results = [];
for (const row of rows) {
  process.stderr.write(`${row.name} …\n`);
  results.push(await runRow(row));
}
let failed = 0;
const table = ['| run | version | exit | failing | could not run (blocked by) | time | matches |', '|---|---|---|---|---|---|---|'];
for (const { row, server, seconds, facts, output } of results) {
  const wrong = mismatches(row.expect, facts);
  if (wrong.length) failed++;
  const unchecked = Object.keys(row.pending ?? {});
  const verdict = wrong.length ? `**no**: ${wrong.join('; ')}` : `yes${unchecked.length ? ` (not compared: ${unchecked.join(', ')})` : ''}`;
  const cell = (list) => (list.length ? list.map((x) => `\`${x}\``).join(', ') : '—');
  table.push(
    `| ${row.name} | ${server.package}@${server.version} | ${facts.exitCode} | ${cell(facts.failing)} | ${cell(facts.couldNotRun)} | ${seconds.toFixed(1)} s | ${verdict} |`,
  );
  if (wrong.length && process.env.REAL_SERVERS_VERBOSE) process.stderr.write(`--- ${row.name} output ---\n${output}\n`);
}
process.stdout.write(`${table.join('\n')}\n\n`);
for (const { row } of results) for (const [key, why] of Object.entries(row.pending ?? {})) process.stdout.write(`${row.name}: ${key} not compared: ${why}\n`);
process.stdout.write(`${results.length - failed} of ${results.length} runs match their expectations (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
process.exitCode = failed ? 1 : 0;
