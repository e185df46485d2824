import type { Hint } from '../suites/engine/model.js';
import type { RunReport } from '../suites/engine/runner.js';
import { locateRealCodex } from '../harness/real-codex.js';
import type { GradedReport } from './grade.js';
import type { ExecAdapter } from '../harness/exec-adapter.js';
import { shellQuote } from '../harness/observers.js';
import { redactValue } from './transcripts.js';
import { adapterDescription } from './reporters/index.js';

/**
 * What the user can do about a verdict, in the CLI's own words: its flags and config keys. The
 * suites give a code (`Hint`); this is the only place that turns it into flag text.
 */
export function hintText(hint: Hint, report: Pick<RunReport, 'exec'>, mode?: 'host'): string {
  switch (hint) {
    case 'assume-opt-in':
      return '; --assume-opt-in sends them anyway';
    case 'http-target':
      return ': --url http://127.0.0.1:PORT/mcp, or --http-command "<cmd with {port}>"';
    case 'stdio-target':
      return ': give the stdio server command too';
    case 'real-codex': {
      const found = locateRealCodex();
      return `: --codex PATH${'path' in found ? ` (one is installed here: --codex ${found.path})` : ''}`;
    }
    case 'session-adapter':
      return ': "session" in mcp-sandbox-conformance.json or --session \'{"open":…,"send":…,"sessionId":…}\' (see README)';
    case 'exec-adapter':
      return execAdapterHint(report.exec);
    case 'scenario-timeout':
      // Host mode's scenario and run budgets follow from its --timeout (one host run's budget).
      return mode === 'host' ? '; raise it with --timeout' : '; raise it with --scenario-timeout';
    case 'run-timeout':
      return mode === 'host' ? '; raise it with --timeout' : '; raise it with --run-timeout';
    case 'explore-off':
      return ' (--no-explore, --explore 0 or "explore": false in the config); --explore N runs N sequences';
    case 'elicitation':
      return '; the default --elicitation accept answers as a person at Codex would (fills the form and accepts; a URL request is cancelled: no browser)';
    case 'soak-off':
      return ': --soak SECONDS runs it (one long-lived server per transport, e.g. --soak 600 in a nightly job)';
  }
}

/**
 * How to name the exec tool: with the template the suite used when it had one (detection filled
 * what the schema lets it fill, so it satisfies the schema but for the properties it names as
 * unfilled); else the two forms, an array property taking "{{argv}}" and a string one "{{command}}".
 */
function execAdapterHint(exec: ExecAdapter | undefined): string {
  const config = 'or "exec" in mcp-sandbox-conformance.json; repeat --exec-tool/--exec-args for each exec tool';
  if (!exec) {
    return `; name the tool and its arguments with --exec-tool NAME --exec-args '{"command":"{{argv}}"}' (an array property; a string one takes "{{command}}"; ${config})`;
  }
  const unfilled = exec.unfilled?.length ? `, with a value of your own for ${exec.unfilled.map((p) => JSON.stringify(p)).join(', ')}` : '';
  const template = JSON.stringify(redactValue(exec.arguments));
  return ` (the suite used the ${adapterDescription(exec)}); name the tool and its arguments with --exec-tool ${shellQuote(exec.tool)} --exec-args ${shellQuote(template)}${unfilled}, adjusted to what the tool expects (${config})`;
}

/** The report with each hint worded into its check's message, once, before any reporter runs. */
export function withHints<R extends GradedReport>(report: R, mode?: 'host'): R {
  const worded = new Map<Hint, string>();
  const word = (hint: Hint) => worded.get(hint) ?? worded.set(hint, hintText(hint, report, mode)).get(hint)!;
  return { ...report, results: report.results.map((r) => (r.hint ? { ...r, message: `${r.message ?? ''}${word(r.hint)}` } : r)) };
}
