import { grade, type GradedResult } from '../cli/grade.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allScenarios } from '../suites/index.js';
import { runSuite, type RunPlan, type RunReport } from '../suites/engine/runner.js';
import { scenarioFinder, type CheckResult } from '../suites/engine/model.js';
import type { TranscriptEntry } from '../harness/transcript.js';
import { shellQuote } from '../harness/observers.js';
import type { ConfiguredExec } from '../harness/exec-adapter.js';
import { packageRoot } from '../harness/paths.js';
import { codexServerEnvironment, userServerEnvironment } from '../harness/codex-environment.js';
import { bundled } from './fixtures/bundles.js';

export const root = packageRoot();
/** The reference server as the README runs it, from its source file. */
export const referenceSource = join(root, 'fixtures/servers/mutant-base/server.mjs');
/** The same server, bundled to start faster (test/fixtures/bundles.ts): what most tests start. */
export const referenceServer = bundled('fixtures/servers/mutant-base/server.mjs');
export const mutantsServer = bundled('fixtures/servers/mutants.mjs');
export const chaosServer = join(root, 'fixtures/servers/chaos.mjs');
/** The CLI as it ships (dist/cli/main.js, what `bin` names). */
export const cliPath = join(root, 'dist/cli/main.js');
/** The same CLI bundled to start faster (test/fixtures/bundles.ts): what runCli starts. */
export const bundledCli = bundled('dist/cli/main.js');
/** The reference server's own config: its session adapter. */
export const referenceConfig = join(root, 'fixtures/servers/mutant-base/mcp-sandbox-conformance.json');
const referenceSession = JSON.parse(readFileSync(referenceConfig, 'utf8')).session;

export interface PlanVariant {
  /** Also run the same server over Streamable HTTP (default true). */
  http?: boolean;
  env?: Record<string, string>;
  jobs?: number;
  /** Which checks to run (default: all). */
  select?: (checkId: string) => boolean;
  /** The exec tools the operator names (--exec-tool, "exec"): default none, every tool detected. */
  exec?: ConfiguredExec[];
  /** false: no session adapter (the session checks drive the pairs detected in the tool list); default the reference's. */
  session?: false;
  /** Tools the operator leaves out by name (--skip-tool). */
  skipTools?: string[];
}

/** The same server over stdio and, started by the suite per scenario, over Streamable HTTP. */
export function nodePlan(args: string[], overrides: Partial<RunPlan['options']> = {}, variant: PlanVariant = {}): RunPlan {
  const { http = true, env = {}, jobs = 2, select = () => true, exec, session, skipTools } = variant;
  const httpCommand = [process.execPath, ...args, '--http', '--port', '{port}'].map((a) => (a === '{port}' ? a : shellQuote(a))).join(' ');
  return {
    targets: {
      stdio: { kind: 'stdio', command: process.execPath, args, environment: codexServerEnvironment(process.env, { env }) },
      http: http ? { kind: 'http-command', command: httpCommand, path: '/mcp', environment: userServerEnvironment(process.env, env) } : undefined,
    },
    ...(session === false ? {} : { session: referenceSession }),
    ...(exec ? { exec } : {}),
    ...(skipTools ? { skipTools } : {}),
    options: { assumeOptIn: false, startupTimeoutMs: 30_000, callTimeoutMs: 30_000, ...overrides },
    jobs,
    select,
  };
}

/** A run graded as the CLI grades it by default (SHOULD findings warn). */
export async function runAgainst(args: string[], overrides: Partial<RunPlan['options']> = {}, variant: PlanVariant = {}) {
  const report = await runSuite(nodePlan(args, overrides, variant), allScenarios);
  return { ...report, results: grade(report.results, false) };
}

/** The transcript of the scenario a result points at. */
export function transcriptOf(report: Pick<RunReport, 'scenarios'>, result: Pick<CheckResult, 'scenario' | 'transport'>): TranscriptEntry[] {
  const scenario = scenarioFinder(report.scenarios)(result);
  if (!scenario) throw new Error(`no record of scenario ${result.scenario} over ${result.transport}`);
  return scenario.transcript;
}

export const idsWith = (results: GradedResult[], status: GradedResult['status']) =>
  results
    .filter((r) => r.status === status)
    .map((r) => r.id)
    .sort();
