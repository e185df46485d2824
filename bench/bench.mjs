#!/usr/bin/env node
// npm run bench: how far the whole stdio suite is from the floor, on this machine, now.
//
//   suite  runSuite (from dist/) against the reference server with its session adapter, as
//          `npm start` runs it over stdio, with the default --jobs (the CPU count)
//   floor  one bare SDK round trip per server the scenarios used (a fresh server per scenario,
//          per extra connection and per exploration sequence: the starts the suite made plus those
//          sharing saved, stats.startsShared), each: Client +
//          StdioClientTransport spawn the reference server, initialize, one `exec` tools/call of
//          `true` through a two-line fake launcher, close; as many at once as the suite's jobs
//   floor with the resident's gaps  the same, and beside it one bare server that gets a call, then
//          a call after each of the resident's idle gaps: the wait a timer check cannot skip
//
// The suite runs as a default run does: exploration on, with its default budget and seed.
// Suite and floor alternate in one process, so load drift hits both; so does the suite without
// exploration (--no-explore), for the cost of exploration in a default run. Then: exploration
// throughput (sequences per second, exploration alone, on the reference server), the suite with
// --jobs 1 (scaling), and the CLI's own peak RSS, measured in a child process running the CLI.
// Then default runs of the CLI over stdio and HTTP: on a server built on the official SDK, and on
// the reference taking 2 s to start (fixtures/servers/slow-start.mjs). Last, the whole run's peak
// memory (the CLI and every process it starts, servers included: bench/whole-run-memory.mjs) of a
// default run over stdio and HTTP on the reference with 10 MB of build log in every tool result
// (fixtures/servers/chatty.mjs), with its exit code and whether its verdicts are the ordinary server's.
// Options (environment): BENCH_RUNS (default 5), BENCH_JOBS1_RUNS (default 2), BENCH_RSS_RUNS (default 2),
// BENCH_CLI_RUNS (default 2), BENCH_EXPLORE_SEQUENCES (default 60), BENCH_MEMORY_RUNS (default 3),
// BENCH_MEMORY_RESULT_BYTES (default 10000000; a comma-separated list measures each, 0 the ordinary
// server; the ordinary server's verdicts are the reference when 0 is among them). Only that figure:
// node bench/whole-run-memory.mjs (the same variables).
// Needs a build (npx tsc -p .).
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { runSuite } = await import(pathToFileURL(join(root, 'dist/suites/engine/runner.js')).href);
const { allScenarios } = await import(pathToFileURL(join(root, 'dist/suites/index.js')).href);
const { EXPLORE_DEFAULTS } = await import(pathToFileURL(join(root, 'dist/suites/server/explore.js')).href);
const { RESIDENT_GAPS } = await import(pathToFileURL(join(root, 'dist/suites/server/lifetime.js')).href);
const { codexServerEnvironment } = await import(pathToFileURL(join(root, 'dist/harness/codex-environment.js')).href);
const { chattyMemoryLines } = await import(pathToFileURL(join(root, 'bench/whole-run-memory.mjs')).href);

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const JOBS1_RUNS = Number(process.env.BENCH_JOBS1_RUNS ?? 2);
const RSS_RUNS = Number(process.env.BENCH_RSS_RUNS ?? 2);
const CLI_RUNS = Number(process.env.BENCH_CLI_RUNS ?? 2);
const EXPLORE_SEQUENCES = Number(process.env.BENCH_EXPLORE_SEQUENCES ?? 60);
const MEMORY_RUNS = Number(process.env.BENCH_MEMORY_RUNS ?? 3);
const MEMORY_SIZES = (process.env.BENCH_MEMORY_RESULT_BYTES ?? '10000000').split(',').map(Number);
const JOBS = availableParallelism();
const referenceServer = join(root, 'fixtures/servers/mutant-base/server.mjs');
const referenceConfig = join(root, 'fixtures/servers/mutant-base/mcp-sandbox-conformance.json');
const session = JSON.parse(readFileSync(referenceConfig, 'utf8')).session;

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;

function plan(jobs, explore = EXPLORE_DEFAULTS, select = () => true) {
  return {
    targets: { stdio: { kind: 'stdio', command: process.execPath, args: [referenceServer], environment: codexServerEnvironment(process.env) } },
    session,
    options: { assumeOptIn: false, startupTimeoutMs: 30_000, callTimeoutMs: 60_000, ...(explore ? { explore } : {}) },
    jobs,
    select,
  };
}

async function suite(jobs, explore = EXPLORE_DEFAULTS, select = undefined) {
  const started = performance.now();
  const report = await runSuite(plan(jobs, explore, select), allScenarios);
  const ms = performance.now() - started;
  // Not applicable is fine (no --codex here), except exploration when it is on.
  const allowed = (r) => r.status === 'skip' && r.reason === 'not-applicable' && !(explore && r.id === 'explore/sequences-hold-contract');
  const bad = report.results.filter((r) => r.status !== 'pass' && !allowed(r));
  if (bad.length) throw new Error(`the suite did not pass against the reference server: ${bad.map((r) => `${r.id} ${r.status}`).join(', ')}`);
  return {
    ms,
    starts: report.stats.serverStarts,
    // What the floor makes: a fresh server for every scenario that shared one, too.
    trips: report.stats.serverStarts + (report.stats.startsShared ?? 0),
    timings: report.scenarios.flatMap((s) => (s.timing ? [s.timing] : [])),
  };
}

// The floor's fake launcher: `codex sandbox --sandbox-state-json <state> -- cmd...` runs cmd.
const scratch = mkdtempSync(join(tmpdir(), 'msc-bench-'));
const launcher = join(scratch, 'codex');
writeFileSync(launcher, '#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ "$1" = -- ]; then shift; exec "$@"; fi; shift; done\nexit 0\n');
chmodSync(launcher, 0o755);
const meta = {
  'codex/sandbox-state': { sandboxCwd: pathToFileURL(scratch).href, permissionProfile: { type: 'disabled' } },
  'codex/sandbox-launcher': { codexExecutable: launcher },
};

async function roundTrip(idleGapsMs = []) {
  const client = new Client({ name: 'bench-floor', version: '0' });
  // The environment the suite gives its servers (Codex's), not the SDK's six-variable default:
  // a variable such as NODE_EXTRA_CA_CERTS alone costs each node start about 90 ms.
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [referenceServer],
    stderr: 'ignore',
    env: codexServerEnvironment(process.env),
  });
  await client.connect(transport);
  const call = async () => {
    const result = await client.callTool({ name: 'exec', arguments: { command: ['true'] }, _meta: meta });
    if (result.isError) throw new Error(`floor call failed: ${JSON.stringify(result.content)}`);
  };
  await call();
  for (const gap of idleGapsMs) {
    await new Promise((resolve) => setTimeout(resolve, gap));
    await call();
  }
  await client.close();
}

/**
 * The floor with the one wait a check needs: the round trips, and beside them a bare resident (one
 * server, a call, then the resident's idle gaps, each followed by a call). A defect that waits for
 * a timer is only met by waiting, so no run that checks for it can be shorter than this.
 */
async function floorWithTimers(count, jobs) {
  const started = performance.now();
  await Promise.all([floor(count, jobs), roundTrip([...RESIDENT_GAPS.values()])]);
  return performance.now() - started;
}

async function floor(count, jobs) {
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      await roundTrip();
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, count) }, worker));
  return performance.now() - started;
}

/**
 * A default run of the CLI, as a user starts it (exploration on, stdio and HTTP): wall time, exit
 * code and what it started, from its JSON report. `server` is the stdio command; `http` the
 * --http-command template.
 */
function cliDefaultRun(server, http, extra = []) {
  const json = join(scratch, `cli-${process.hrtime.bigint()}.json`);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'dist/cli/main.js'), '--reporter', `json=${json}`, '--http-command', http, ...extra, '--', ...server], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (code) => {
      const ms = performance.now() - started;
      try {
        const report = JSON.parse(readFileSync(json, 'utf8'));
        if (code !== 0) throw new Error(`exit ${code}`);
        resolve({ ms, starts: report.stats?.serverStarts });
      } catch (error) {
        reject(new Error(`CLI default run failed (${error.message}): ${stderr.slice(-500)}`));
      }
    });
  });
}

/** The CLI's own peak RSS (KB), from inside the CLI process. */
function cliPeakRss() {
  const probe = `data:text/javascript,${encodeURIComponent(
    "import { writeSync } from 'node:fs'; process.on('exit', () => writeSync(2, `\\nBENCH_MAXRSS_KB=${process.resourceUsage().maxRSS}\\n`));",
  )}`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', probe, join(root, 'dist/cli/main.js'), '--config', referenceConfig, referenceServer], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (code) => {
      const kb = Number(/BENCH_MAXRSS_KB=(\d+)/.exec(stderr)?.[1]);
      if (code !== 0 || !kb) reject(new Error(`CLI run failed (exit ${code}): ${stderr.slice(-500)}`));
      else resolve(kb);
    });
  });
}

console.log(
  `machine: ${cpus()[0]?.model ?? '?'}, ${cpus().length} CPUs (availableParallelism ${JOBS}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}`,
);
console.log(`load average before: ${load()}`);
try {
  // Warm-up (disk cache, JIT): one of each, not counted.
  await roundTrip();
  const warm = await suite(JOBS);
  console.log(`warm-up: suite ${s(warm.ms)} with ${warm.starts} server starts (${warm.trips - warm.starts} more without sharing)`);

  const suiteMs = [];
  const floorMs = [];
  const timedFloorMs = [];
  const unexploredMs = [];
  const phases = { observersMs: [], startupMs: [], runMs: [], closeMs: [] };
  for (let i = 0; i < RUNS; i++) {
    // Alternate which goes first, so a trend in the load does not favour one side.
    const order = i % 2 === 0 ? ['suite', 'floor', 'unexplored'] : ['unexplored', 'floor', 'suite'];
    let trips = warm.trips;
    for (const what of order) {
      if (what === 'suite') {
        const run = await suite(JOBS);
        suiteMs.push(run.ms);
        trips = run.trips;
        for (const key of Object.keys(phases)) phases[key].push(run.timings.reduce((sum, t) => sum + (t[key] ?? 0), 0));
      } else if (what === 'unexplored') {
        unexploredMs.push((await suite(JOBS, null)).ms);
      } else {
        floorMs.push(await floor(trips, JOBS));
        timedFloorMs.push(await floorWithTimers(trips, JOBS));
      }
    }
    console.log(
      `run ${i + 1}/${RUNS}: suite ${s(suiteMs.at(-1))}, floor ${s(floorMs.at(-1))} (${trips} round trips), with the resident's gaps ${s(timedFloorMs.at(-1))}, ` +
        `suite without exploration ${s(unexploredMs.at(-1))}, load ${load()}`,
    );
  }
  // Exploration alone: how many sequences (each a fresh server, up to 10 steps, judged) per second.
  const exploring = await suite(JOBS, { ...EXPLORE_DEFAULTS, runs: EXPLORE_SEQUENCES }, (id) => id.startsWith('explore/'));

  const jobs1 = [];
  for (let i = 0; i < JOBS1_RUNS; i++) jobs1.push((await suite(1)).ms);
  // Default runs through the CLI over stdio and HTTP: a server on the official SDK, and the
  // reference taking 2 s to start (as Python and JVM servers often do).
  const sdkServer = join(root, 'fixtures/servers/unusual.mjs');
  const slowServer = join(root, 'fixtures/servers/slow-start.mjs');
  const cliRuns = { sdk: [], slow: [] };
  for (let i = 0; i < CLI_RUNS; i++) {
    cliRuns.sdk.push(await cliDefaultRun([process.execPath, sdkServer, 'bash-wrapper'], `${process.execPath} ${sdkServer} bash-wrapper --http --port {port}`));
    cliRuns.slow.push(
      await cliDefaultRun([process.execPath, slowServer, '2000'], `${process.execPath} ${slowServer} 2000 --http --port {port}`, ['--config', referenceConfig]),
    );
  }
  const rss = [];
  for (let i = 0; i < RSS_RUNS; i++) rss.push(await cliPeakRss());
  // The whole run's memory with large results (bench/whole-run-memory.mjs).
  const memory = MEMORY_RUNS > 0 ? await chattyMemoryLines(MEMORY_SIZES, MEMORY_RUNS, { scratch }) : [];

  const suiteMedian = median(suiteMs);
  const floorMedian = median(floorMs);
  const ratio = suiteMedian / floorMedian;
  const peakMb = Math.max(...rss) / 1024;
  console.log('');
  console.log(`suite (--jobs ${JOBS}) median: ${s(suiteMedian)}   [${suiteMs.map(s).join(', ')}]`);
  console.log(`floor (${warm.trips} SDK spawn+initialize+tools/call, ${JOBS} at once) median: ${s(floorMedian)}   [${floorMs.map(s).join(', ')}]`);
  console.log(`ratio suite/floor: ${ratio.toFixed(2)}   (target <= 1.3: ${ratio <= 1.3 ? 'met' : 'NOT met'})`);
  const timedRatio = suiteMedian / median(timedFloorMs);
  console.log(
    `floor with the resident's idle gaps (${[...RESIDENT_GAPS.values()].map(s).join(' + ')} between calls on one bare server, beside the round trips) median: ` +
      `${s(median(timedFloorMs))}   [${timedFloorMs.map(s).join(', ')}]; ratio suite/that floor: ${timedRatio.toFixed(2)}`,
  );
  const exploreCost = suiteMedian / median(unexploredMs);
  console.log(
    `suite without exploration median: ${s(median(unexploredMs))}   (default run / without: ${exploreCost.toFixed(2)}, target <= 1.5: ${exploreCost <= 1.5 ? 'met' : 'NOT met'})`,
  );
  console.log(
    `exploration throughput: ${EXPLORE_SEQUENCES} sequences in ${s(exploring.ms)} = ${(EXPLORE_SEQUENCES / (exploring.ms / 1000)).toFixed(1)} sequences/s (reference server, stdio, ${exploring.starts} server starts)`,
  );
  console.log(`suite --jobs 1 median: ${s(median(jobs1))}   (speed-up with --jobs ${JOBS}: ${(median(jobs1) / suiteMedian).toFixed(2)}x)`);
  console.log(
    `CLI peak RSS: ${peakMb.toFixed(1)} MB   [${rss.map((kb) => (kb / 1024).toFixed(1)).join(', ')}]   (target < 150 MB: ${peakMb < 150 ? 'met' : 'NOT met'})`,
  );
  console.log(
    `suite time by phase, summed over scenarios (median per run): observers ${s(median(phases.observersMs))}, startup ${s(median(phases.startupMs))}, ` +
      `scenario ${s(median(phases.runMs))}, stopping servers (in the background) ${s(median(phases.closeMs))}`,
  );
  const cliLine = (runs) => `${s(median(runs.map((r) => r.ms)))} (${runs[0].starts} server starts)   [${runs.map((r) => s(r.ms)).join(', ')}]`;
  const sdkMs = median(cliRuns.sdk.map((r) => r.ms));
  const slowMs = median(cliRuns.slow.map((r) => r.ms));
  console.log(
    `CLI default run, SDK-based server (unusual.mjs bash-wrapper), stdio + HTTP: ${cliLine(cliRuns.sdk)}   (target <= 9 s: ${sdkMs <= 9000 ? 'met' : 'NOT met'})`,
  );
  console.log(
    `CLI default run, reference with a 2 s start-up, stdio + HTTP: ${cliLine(cliRuns.slow)}   (target <= 15 s: ${slowMs <= 15000 ? 'met' : 'NOT met'})`,
  );
  for (const { size, peakMb, line } of memory) console.log(size === 10_000_000 ? `${line}   (target <= 250 MB: ${peakMb <= 250 ? 'met' : 'NOT met'})` : line);
  console.log(`load average after: ${load()}`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
