import { couldNotRun, fail, type CheckDef, type Finding, type Verdict } from './model.js';

/**
 * A check's final verdict is decided here and nowhere else, from everything that bears on it, in
 * this order:
 *
 *  1. `early`, the first of these that applied to the check, in this order (a ScenarioRun records them):
 *     a. a need known before anything starts: a real Codex, an HTTP target, a session adapter, the
 *        transport it runs over (not applicable);
 *     b. the job did not start: the target died at its first start, the run's time ran out, or a
 *        blocker was known for each of its checks (SuiteRun.knownBlocker: the server did not opt in,
 *        the control's call was rejected or executed nothing) (could not run);
 *     c. a need the started target cannot meet: no exec tool (not applicable), no opt-in (could not run);
 *     d. the suite's own exec call was rejected as invalid: exec checks could not run;
 *     e. the scenario's own verdict.
 *  2. A failure that rests on a call the server never answered, when nothing ran at all: an
 *     error, not a failure (the absence was never finished).
 *  3. A job given up on (its timeout, the run's, the target dying at start): every verdict that
 *     is not a skip becomes that error; a check without one gets `givenUp.undecided`.
 *  4. A check still without a verdict: the job's `undecided` (a crash, a failed start), else an
 *     error saying the scenario reached none.
 *  5. The server asked for confirmation (`elicitation/create`), the suite declined or cancelled, and
 *     the server then refused a call that should have run: it never got the go-ahead, so what it
 *     did says nothing of its sandboxing (a refusal then is no LAUNCH or FWD failure). A check that
 *     needs the exec tool could not run, naming the elicitation: when its own job saw such a
 *     refusal, whatever it passed, failed or could not run for; when the refusal was in another job
 *     of its transport (the control, typically), if it could not run because another check could not.
 *  6. The resident server of the check's transport crashed (a bug of ours), or was cut short before
 *     its core calls (a server that slowed down on a long-lived process): its calls were made for
 *     the checks it charges, so a pass of one of them is an error saying why, never a pass.
 *  7. The sandbox monitor's findings charged to the check, from any scenario: a violation whatever
 *     came before. A pass, skip or error becomes a failure led by the first finding; a failure
 *     keeps its own message and gains the findings made in other scenarios.
 */
export function decideVerdict(inputs: CheckInputs): Verdict {
  const { check, scenario, early, end, findings } = inputs;
  let verdict = early;
  if (verdict?.status === 'fail' && end.unanswered && end.nothingRan) {
    verdict = {
      status: 'error',
      message: `a call got no answer (${end.unanswered}) and nothing ran, so this cannot be judged (it would read: ${verdict.message})`,
    };
  }
  if (end.givenUp) verdict = verdict === undefined ? end.givenUp.undecided : verdict.status === 'skip' ? verdict : end.givenUp.verdict;
  verdict ??= end.undecided ?? { status: 'error', message: `scenario ${scenario} reached no verdict for ${check.id}` };
  verdict = unconfirmed(verdict, inputs);
  if (inputs.residentUnfinished && verdict.status === 'pass')
    verdict = {
      status: 'error',
      message: `the resident server's calls for this check did not finish, so it is not judged in full (${inputs.residentUnfinished})`,
    };
  return findings.length === 0 ? verdict : withFindings(verdict, scenario, findings);
}

/** Step 5: a check fed by a call the server refused for want of the go-ahead the suite withheld. */
function unconfirmed(verdict: Verdict, { check, end, elicitationElsewhere }: CheckInputs): Verdict {
  if (!check.needs.includes('exec')) return verdict;
  const couldNot = verdict.status === 'skip' && verdict.reason === 'could-not-run';
  if (end.refusedAfterElicitation && (verdict.status === 'pass' || verdict.status === 'fail' || couldNot)) {
    return couldNotRun(end.refusedAfterElicitation, undefined, 'elicitation');
  }
  if (elicitationElsewhere && couldNot && verdict.blockedBy) {
    return couldNotRun(`${elicitationElsewhere}, so no command ran to judge this by (${verdict.message})`, verdict.blockedBy, 'elicitation');
  }
  return verdict;
}

export interface CheckInputs {
  check: CheckDef;
  /** The scenario that decides the check. */
  scenario: string;
  early: Verdict | undefined;
  end: JobEnd;
  /** The monitor's findings charged to this check on this transport, from every scenario. */
  findings: Finding[];
  /** The first refusal after a declined or cancelled elicitation in any job of this transport, in words (step 5). */
  elicitationElsewhere?: string;
  /** Why the resident of this transport did not finish its core calls, when it charges this check (step 6). */
  residentUnfinished?: string;
}

/** How a scenario job ended, for all of its checks. */
export interface JobEnd {
  /** The first call, of any server of the job, that got no answer. */
  unanswered?: string;
  /** Whether nothing at all executed during the job (no launch but the capability probe, no probe run, no trap). */
  nothingRan?: boolean;
  /** Set when the job was given up on: what its verdicts become, and what a check without one gets. */
  givenUp?: { verdict: Verdict; undecided: Verdict };
  /** What a check without a verdict gets (a crash, a failed start). */
  undecided?: Verdict;
  /** The first call of the job that should have run and was refused after the suite declined or cancelled the server's elicitation, in words. */
  refusedAfterElicitation?: string;
}

/** The job was never started (dead target, expired run, a known blocker): every check not yet decided gets `verdict`. */
export const notStarted = (verdict: Verdict): JobEnd => ({ undecided: verdict });

/** How many findings a result shows, one diff line each. */
export const MAX_FINDINGS_SHOWN = 12;

function withFindings(verdict: Verdict, scenario: string, unsorted: Finding[]): Verdict {
  // The check's own scenario first, then the others, each in call order.
  const rank = (f: Finding) => (f.scenario === scenario ? '' : f.scenario);
  const list = [...unsorted].sort((a, b) => rank(a).localeCompare(rank(b)) || (a.call ?? 0) - (b.call ?? 0));
  if (verdict.status === 'fail') {
    // The scenario's own verdict already speaks for its own calls; add what happened elsewhere.
    const elsewhere = list.filter((f) => f.scenario !== scenario);
    const shown = elsewhere.slice(0, MAX_FINDINGS_SHOWN).map((f) => `! ${f.message}`);
    return shown.length ? { ...verdict, diff: [...(verdict.diff ?? []), ...shown] } : verdict;
  }
  const first = list[0]!;
  const more = list.length - 1;
  const message = more === 0 ? first.message : `${first.message} (and ${more} more finding${more === 1 ? '' : 's'} of the sandbox monitor)`;
  // The first finding is the message; the others follow its diff, one line each.
  const lines = list.slice(0, MAX_FINDINGS_SHOWN).map((f) => `! ${f.message}`);
  if (list.length > MAX_FINDINGS_SHOWN) lines.push(`! … and ${list.length - MAX_FINDINGS_SHOWN} more`);
  const diff = [...(first.diff ?? []), ...lines.slice(1)];
  return fail(message, { expected: first.expected, actual: first.actual, ...(diff.length ? { diff } : {}) });
}
