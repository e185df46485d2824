import { beforeAll, describe, test, type MatcherState, type TestContext } from 'vitest';
import { selectionOf } from './parser.js';
import { DEFAULT_RUN_TIMEOUT_MS } from '../suites/engine/runner.js';
import { allChecks } from '../suites/index.js';
import { checkServer, type CheckRecord, type CheckServerOptions, type RunReport } from './api.js';

/**
 * `mcp-sandbox-conformance/vitest`: the suite in a server's own tests. `toConform` asserts a whole
 * run (it fails with the human report, as the CLI prints it); `describeConformance` makes one test
 * per check, so that a CI's test report lists them. Both run checkServer: what passes here is what
 * exits 0 there.
 */

/** A server: its stdio command line, or every option of checkServer. */
export type ServerUnderTest = string[] | CheckServerOptions;

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any, @typescript-eslint/no-unused-vars
  interface Matchers<T = any> {
    /** The server passes the suite as the CLI would (exit 0) with these options; else fails with the human report. */
    toConform(options?: CheckServerOptions): Promise<void>;
  }
}

const optionsOf = (server: ServerUnderTest, options: CheckServerOptions = {}): CheckServerOptions =>
  Array.isArray(server) ? { ...options, command: server } : { ...server, ...options };

/** A run, and what the CLI would have printed (colors off). */
async function runWithTerminal(options: CheckServerOptions): Promise<{ report: RunReport; terminal: string }> {
  let terminal = '';
  const sink = { write: (text: string) => (terminal += text) };
  const report = await checkServer({ ...options, color: false, stdout: sink, stderr: sink });
  return { report, terminal };
}

/** For `expect.extend({ toConform })`: `await expect(['node', 'server.js']).toConform({ only: ['launcher/*'] })`. */
export async function toConform(this: MatcherState, server: ServerUnderTest, options?: CheckServerOptions) {
  const { report, terminal } = await runWithTerminal(optionsOf(server, options));
  const pass = report.exitCode === 0;
  return {
    pass,
    message: () =>
      pass
        ? `expected the server not to conform, but the run exits 0:\n\n${terminal}`
        : `the server does not conform (the CLI exits ${report.exitCode}):\n\n${terminal}`,
  };
}

export interface DescribeConformanceOptions extends CheckServerOptions {
  /** The describe block's name (default: "conformance: <command or URL>"). */
  name?: string;
}

/** One check's rows (one per transport): fail, skip (not applicable, or kept from running by an accepted failure) or pass. */
function outcome(rows: CheckRecord[]): { fail?: string; skip?: string } {
  const text = (row: CheckRecord) =>
    [
      `${row.status} over ${row.transport}${row.skipReason ? ` (${row.skipReason})` : ''}: ${row.message ?? ''}`,
      ...(row.diff ?? []).map((line) => `  ${line}`),
    ].join('\n');
  const skipped = (row: CheckRecord) => row.status === 'skip' && (row.skipReason === 'not-applicable' || row.blockedByExpectedFailure === true);
  const failing = rows.filter((row) => !['pass', 'warn', 'xfail'].includes(row.status) && !skipped(row));
  if (failing.length) return { fail: failing.map(text).join('\n') };
  if (rows.every(skipped)) return { skip: rows.map((row) => `${row.transport}: ${row.message ?? row.skipReason ?? ''}`).join('; ') };
  return {};
}

/**
 * A describe block with one test per check the options select (--only/--skip), in `list` order,
 * named by check id: a failure shows its message and diff per transport, a check that does not
 * apply is skipped. A last test holds the run's exit code, as the CLI's.
 */
export function describeConformance(options: DescribeConformanceOptions): void {
  const { name, ...checkOptions } = options;
  const select = selectionOf(checkOptions, allChecks, 'mcp-sandbox-conformance list');
  const runTimeoutMs = checkOptions.runTimeout !== undefined ? checkOptions.runTimeout * 1000 : DEFAULT_RUN_TIMEOUT_MS;
  describe(name ?? `conformance: ${[...(checkOptions.command ?? []), checkOptions.url ?? checkOptions.httpCommand ?? ''].join(' ').trim()}`, () => {
    let run: { report: RunReport; terminal: string };
    // The run has its own timeout; the hook waits for it, and for the servers to be stopped after it.
    beforeAll(async () => {
      run = await runWithTerminal(checkOptions);
    }, runTimeoutMs + 60_000);
    for (const check of allChecks.filter((c) => select(c.id))) {
      test(check.id, (context: TestContext) => {
        const rows = run.report.checks.filter((row) => row.id === check.id);
        if (rows.length === 0) throw new Error(run.report.startFailure ? `the server did not start: ${run.report.startFailure.message}` : 'not in the report');
        const { fail, skip } = outcome(rows);
        if (fail) throw new Error(`${check.id}: ${check.title}\n${fail}`);
        if (skip) context.skip(skip);
      });
    }
    test('the run exits 0, as the CLI would', () => {
      if (run.report.exitCode !== 0) throw new Error(`the CLI exits ${run.report.exitCode}:\n\n${run.terminal}`);
    });
  });
}
