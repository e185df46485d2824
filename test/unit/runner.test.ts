import { describe, expect, test } from 'vitest';
import { standInCheck } from '../../suites/engine/checks.js';
import type { CheckDef, CheckResult, Finding, Need, Scenario, ScenarioContext, Verdict } from '../../suites/engine/model.js';
import { couldNotRun, fail, notApplicable, pass } from '../../suites/engine/model.js';
import type { RunPlan } from '../../suites/engine/plan.js';
import { runSuite } from '../../suites/engine/runner.js';
import { decideVerdict, type JobEnd } from '../../suites/engine/verdict.js';
import { CONTROL_CHECK } from '../../suites/engine/judge.js';
import { allScenarios } from '../../suites/index.js';
import { ResidentLifecycle } from '../../suites/server/lifetime.js';
import { EXEC_TOOL, inProcessConnector, ranOutside, type FakeServer } from '../fixtures/in-process-target.js';

/*
 * The engine without child processes: the verdict order on synthetic inputs (decideVerdict), and
 * runSuite over an in-process server (test/fixtures/in-process-target.ts) with synthetic scenarios,
 * one step of that order each.
 */

const check = (id: string, needs: Need[] = [], extra: Partial<CheckDef> = {}): CheckDef => ({ ...standInCheck(id), needs, ...extra });
const finding = (charged: CheckDef, scenario: string, message: string, call = 1): Finding => ({ check: charged, scenario, transport: 'stdio', call, message });

describe('decideVerdict: one function, one documented order', () => {
  const c = check('t/one');
  const decide = (early: Verdict | undefined, end: JobEnd = {}, findings: Finding[] = []) => decideVerdict({ check: c, scenario: 's', early, end, findings });

  test('1: the early verdict stands when nothing else applies', () => {
    expect(decide(pass())).toEqual(pass());
    expect(decide(notApplicable('needs a real Codex CLI', 'real-codex'))).toMatchObject({ status: 'skip', reason: 'not-applicable' });
  });

  test('2: a failure resting on an unanswered call when nothing ran is an error; with something run it stays a failure', () => {
    const failed = fail('the call was not refused');
    expect(decide(failed, { unanswered: 'tools/call: timeout', nothingRan: true })).toMatchObject({
      status: 'error',
      message: expect.stringContaining('a call got no answer (tools/call: timeout)'),
    });
    expect(decide(failed, { unanswered: 'tools/call: timeout', nothingRan: false })).toEqual(failed);
    expect(decide(pass(), { unanswered: 'tools/call: timeout', nothingRan: true })).toEqual(pass());
  });

  test('3: given up on: every verdict but a skip becomes the error; a check without one gets `undecided`', () => {
    const givenUp = {
      verdict: { status: 'error', message: 'timed out', hint: 'scenario-timeout' } as Verdict,
      undecided: couldNotRun('target failed to start'),
    };
    expect(decide(pass(), { givenUp })).toEqual(givenUp.verdict);
    expect(decide(fail('x'), { givenUp })).toEqual(givenUp.verdict);
    expect(decide(notApplicable('n/a'), { givenUp })).toMatchObject({ status: 'skip', reason: 'not-applicable' });
    expect(decide(undefined, { givenUp })).toEqual(givenUp.undecided);
  });

  test("4: no verdict at all: the job's `undecided`, else an error naming the scenario", () => {
    expect(decide(undefined, { undecided: { status: 'error', message: 'scenario crashed: boom' } })).toMatchObject({ message: 'scenario crashed: boom' });
    expect(decide(undefined)).toMatchObject({ status: 'error', message: 'scenario s reached no verdict for t/one' });
  });

  test('5: an exec check fed by a call refused after a declined elicitation could not run, naming it; other checks are untouched', () => {
    const exec = check('t/exec', ['exec']);
    const refused = 'the server asked for confirmation (elicitation/create, form mode: "May I?") and the suite answered decline; it then refused s call #1';
    const own = (early: Verdict, c = exec) => decideVerdict({ check: c, scenario: 's', early, end: { refusedAfterElicitation: refused }, findings: [] });
    for (const early of [pass(), fail('the server never ran the given codexExecutable'), couldNotRun('no launch', 't/control')])
      expect(own(early)).toEqual({ status: 'skip', reason: 'could-not-run', message: refused, hint: 'elicitation' });
    expect(own(notApplicable('n/a'))).toMatchObject({ status: 'skip', reason: 'not-applicable' });
    expect(own({ status: 'error', message: 'timed out' })).toMatchObject({ status: 'error' });
    expect(own(fail('x'), check('t/catalog'))).toEqual(fail('x')); // needs no exec tool: not fed by the call
    // Refused in another job of the transport (the control): a check blocked by another check names it too; a failure of its own stays.
    const elsewhere = (early: Verdict) => decideVerdict({ check: exec, scenario: 's', early, end: {}, findings: [], elicitationElsewhere: refused });
    expect(elsewhere(couldNotRun('the refusal proves nothing', 't/control'))).toEqual({
      status: 'skip',
      reason: 'could-not-run',
      message: `${refused}, so no command ran to judge this by (the refusal proves nothing)`,
      blockedBy: 't/control',
      hint: 'elicitation',
    });
    expect(elsewhere(fail('ran outside'))).toEqual(fail('ran outside'));
    // The monitor still has the last word: something that ran is a violation whatever was answered.
    const ran = finding(exec, 's', 'call #2 ran outside any launch', 2);
    expect(decideVerdict({ check: exec, scenario: 's', early: pass(), end: { refusedAfterElicitation: refused }, findings: [ran] })).toMatchObject({
      status: 'fail',
      message: 'call #2 ran outside any launch',
    });
  });

  test('6: a crashed resident that charges the check makes a pass an error naming the crash; other verdicts stand, and findings still win', () => {
    const crash = 'scenario crashed: TypeError: boom';
    const withCrash = (early: Verdict, findings: Finding[] = []) =>
      decideVerdict({ check: c, scenario: 's', early, end: {}, findings, residentUnfinished: crash });
    expect(withCrash(pass())).toMatchObject({ status: 'error', message: expect.stringContaining(crash) });
    expect(withCrash(fail('x'))).toEqual(fail('x'));
    expect(withCrash(notApplicable('n/a'))).toMatchObject({ status: 'skip', reason: 'not-applicable' });
    expect(withCrash(pass(), [finding(c, 's', 'call #1 ran outside any launch')])).toMatchObject({ status: 'fail' });
  });

  test("7: the monitor's findings win over a pass, a skip and an error; a failure keeps its message and gains the others' findings", () => {
    const own = finding(c, 's', 'call #1 ran outside any launch');
    const elsewhere = finding(c, 'other', 'other call #2 ran outside any launch', 2);
    for (const early of [pass(), notApplicable('n/a'), couldNotRun('x')]) {
      expect(decide(early, {}, [elsewhere, own])).toMatchObject({
        status: 'fail',
        message: 'call #1 ran outside any launch (and 1 more finding of the sandbox monitor)',
        diff: ['! other call #2 ran outside any launch'],
      });
    }
    const given = { verdict: { status: 'error', message: 'timed out' } as Verdict, undecided: { status: 'error', message: 'timed out' } as Verdict };
    expect(decide(pass(), { givenUp: given }, [own])).toMatchObject({ status: 'fail', message: 'call #1 ran outside any launch' });
    expect(decide(fail('the scenario saw it', { diff: ['- a'] }), {}, [own, elsewhere])).toEqual(
      fail('the scenario saw it', { diff: ['- a', '! other call #2 ran outside any launch'] }),
    );
  });
});

describe('runSuite over an in-process server', () => {
  const plan = (server: FakeServer, extra: Partial<RunPlan> = {}): RunPlan & { connect: ReturnType<typeof inProcessConnector> } => ({
    targets: { stdio: { kind: 'stdio', command: 'in-process', args: [], environment: {} } },
    options: { assumeOptIn: false, callTimeoutMs: 300, startupTimeoutMs: 2_000 },
    jobs: 2,
    select: () => true,
    scenarioTimeoutMs: 3_000,
    ...extra,
    connect: inProcessConnector(server),
  });
  const scenario = (id: string, checks: CheckDef[], run: (ctx: ScenarioContext) => Promise<Verdict>, extra: Partial<Scenario> = {}): Scenario => ({
    id,
    title: id,
    checks,
    needs: checks.flatMap((c) => c.needs),
    transports: ['stdio'],
    run: async (ctx) => new Map([[checks[0]!.id, await run(ctx)]]),
    ...extra,
  });
  const byId = (results: CheckResult[]) => Object.fromEntries(results.map((r) => [r.id, r]));
  const probe = async (ctx: ScenarioContext) => (await ctx.execProbe(ctx.codexEntries())).outcome;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** A resident scenario charging `charged`, living as `life` says. */
  const residentCharging = (charged: CheckDef, life: (ctx: ScenarioContext) => Promise<void>): Scenario =>
    scenario('resident', [], async () => pass(), {
      resident: { charges: [charged.id], life: () => new ResidentLifecycle() },
      run: async (ctx) => {
        await life(ctx);
        return new Map();
      },
    });

  test('a resident that crashes: the checks it charges that passed are errors naming the crash, never a silent pass', async () => {
    const charged = check('t/charged');
    const other = check('t/other');
    const resident = residentCharging(charged, async (ctx) => {
      ctx.lifetime.reached('calling');
      throw new Error('a bug of ours');
    });
    const report = await runSuite(plan({}), [
      scenario('both', [charged, other], async () => pass(), {
        run: async () =>
          new Map([
            [charged.id, pass()],
            [other.id, pass()],
          ]),
      }),
      resident,
    ]);
    const results = byId(report.results);
    expect(results['t/charged']).toMatchObject({ status: 'error', message: expect.stringContaining('a bug of ours') });
    expect(results['t/other']).toMatchObject({ status: 'pass' });
  });

  test('before its core calls a resident goes on while it makes progress; one that stops is cut, and the checks it charges are errors', async () => {
    const charged = check('t/charged');
    const run = async (progressing: boolean) => {
      const at: Record<string, number> = {};
      const resident = residentCharging(charged, async (ctx) => {
        ctx.lifetime.reached('calling');
        await ctx.lifetime.othersDone;
        // Slow answers, each within the window (the scenario timeout here, 1.5 s), for 3 s in all; or none.
        for (let k = 0; k < 6; k++) {
          await sleep(500);
          if (progressing) ctx.lifetime.answered();
        }
        at.core = Date.now();
        ctx.lifetime.reached('core');
      });
      const report = await runSuite(plan({}, { scenarioTimeoutMs: 1_500 }), [scenario('other', [charged], async () => pass()), resident]);
      return { at, charged: byId(report.results)['t/charged']! };
    };
    const steady = await run(true);
    expect(steady.at.core).toBeDefined();
    expect(steady.charged).toMatchObject({ status: 'pass' });
    const stalled = await run(false);
    expect(stalled.charged).toMatchObject({ status: 'error', message: expect.stringContaining('its core calls did not finish') });
  });

  test("the residents' head start: the others start once the resident sends its first call, or at most 1 s after it started", async () => {
    const charged = check('t/charged');
    const timeline = async (residentSaysAfterMs: number | undefined) => {
      const at: Record<string, number> = {};
      const started = Date.now();
      const resident = residentCharging(charged, async (ctx) => {
        if (residentSaysAfterMs !== undefined) {
          await sleep(residentSaysAfterMs);
          at.calling = Date.now() - started;
          ctx.lifetime.reached('calling');
        }
        await ctx.lifetime.othersDone;
      });
      const other = scenario('other', [charged], async () => {
        at.other = Date.now() - started;
        return pass();
      });
      // A resident given no head-start cap would hold the others until its timeout (10 s here).
      const report = await runSuite(plan({}, { scenarioTimeoutMs: 10_000 }), [other, resident]);
      expect(byId(report.results)['t/charged']).toMatchObject({ status: 'pass' });
      return at;
    };
    const said = await timeline(300);
    expect(said.other).toBeGreaterThanOrEqual(said.calling!);
    const silent = await timeline(undefined);
    expect(silent.other).toBeGreaterThanOrEqual(900);
    expect(silent.other).toBeLessThan(5_000);
  });

  test('once the others are done, a resident is not cut before its core calls; after them it gets a short grace', async () => {
    const charged = check('t/charged');
    const at: Record<string, number> = {};
    const resident = residentCharging(charged, async (ctx) => {
      ctx.lifetime.reached('calling');
      await ctx.lifetime.othersDone;
      await sleep(2_500); // longer than the grace: slow core calls on a loaded machine
      at.core = Date.now();
      ctx.lifetime.reached('core');
      await sleep(10_000); // the rest, cut by the grace
      at.rest = Date.now();
    });
    const report = await runSuite(plan({}, { scenarioTimeoutMs: 30_000 }), [scenario('other', [charged], async () => pass()), resident]);
    const ended = Date.now();
    expect(byId(report.results)['t/charged']).toMatchObject({ status: 'pass' });
    expect(at.core).toBeDefined();
    expect(at.rest).toBeUndefined();
    // The grace (2 s), not the resident's 10 s: a margin for a loaded machine.
    expect(ended - at.core!).toBeGreaterThanOrEqual(1_900);
    expect(ended - at.core!).toBeLessThan(8_000);
  });

  test('needs: a real Codex is known before anything starts; a missing exec tool or session pair once the server answers', async () => {
    const p = plan({ tools: [] });
    const report = await runSuite(p, [
      scenario('codex', [check('t/codex', ['codex'])], async () => pass()),
      scenario('session', [check('t/session', ['session'])], async () => pass()),
      scenario('exec', [check('t/exec', ['exec'])], async () => pass()),
    ]);
    const results = byId(report.results);
    expect(results['t/codex']).toMatchObject({ status: 'skip', reason: 'not-applicable', hint: 'real-codex' });
    expect(results['t/session']).toMatchObject({ status: 'skip', reason: 'not-applicable', hint: 'session-adapter' });
    expect(results['t/exec']).toMatchObject({ status: 'skip', reason: 'not-applicable', hint: 'exec-adapter' });
    // The exec and session scenarios needed a server: a session pair is looked for in its tool list.
    expect(p.connect.starts).toBe(2);
    expect(results['t/session']!.message).toContain('no pair of tools that opens a session');
  });

  test('a server that does not opt in: opt-in checks could not run, blocked by CAP-1, and scenarios of nothing else are not started', async () => {
    const p = plan({ optIn: false }, { jobs: 1 });
    const report = await runSuite(p, [
      scenario('first', [check('t/first', ['opt-in'])], async () => pass()),
      scenario('second', [check('t/second', ['opt-in'])], async () => pass()),
    ]);
    for (const result of report.results)
      expect(result).toMatchObject({ status: 'skip', reason: 'could-not-run', hint: 'assume-opt-in', blockedBy: 'capability/advertised' });
    expect(report.stats).toEqual({ serverStarts: 1, scenariosRun: 1, startsSaved: 1, startsShared: 0, startsBy: { 'first: a fresh server of its own': 1 } });
  });

  test('a hint is offered only where following it would make the check run', async () => {
    const report = await runSuite(plan({ optIn: false }), [
      scenario('exec', [check('t/exec', ['exec', 'opt-in'])], async () => pass()),
      scenario('codex', [check('t/codex', ['exec', 'opt-in', 'codex'])], async () => pass()),
      scenario('plain-codex', [check('t/plain-codex', ['codex'])], async () => pass()),
    ]);
    const results = byId(report.results);
    expect(results['t/codex']).toMatchObject({
      status: 'skip',
      reason: 'not-applicable',
      message: 'needs a real Codex CLI (adding it would not help: the server did not opt in, so Codex sends it no sandbox keys)',
    });
    expect(results['t/codex']!.hint).toBeUndefined();
    // Nothing else keeps this one from running: --codex would.
    expect(results['t/plain-codex']).toMatchObject({ status: 'skip', reason: 'not-applicable', hint: 'real-codex' });
  });

  test("the scenario's verdict, unless our own exec call was rejected as invalid", async () => {
    const rejecting = plan({ onCall: () => ({ error: { code: -32602, message: 'Invalid params: command must be a string' } }) });
    const rejected = await runSuite(rejecting, [
      scenario('s', [check('t/exec', ['exec'])], async (ctx) => ((await probe(ctx)).kind === 'result' ? pass() : fail('the command did not run'))),
    ]);
    expect(rejected.results[0]).toMatchObject({
      status: 'skip',
      reason: 'could-not-run',
      hint: 'exec-adapter',
      message: expect.stringContaining('Invalid params'),
    });
    const report = await runSuite(plan({}), [
      scenario('s', [check('t/exec', ['exec'])], async (ctx) => ((await probe(ctx)).kind === 'result' ? pass() : fail('no'))),
    ]);
    expect(report.results[0]).toMatchObject({ status: 'pass' });
  });

  test('scenarios that take turns share one server, one after another; one that goes wrong on it retires it; a look at the greeting starts none', async () => {
    const p = plan({ onCall: (params) => (params.name === 'hang' ? 'no-answer' : { result: { content: [{ type: 'text', text: 'ok' }] } }) });
    const startedAt: Record<string, number> = {};
    const turn = (id: string, tool = EXEC_TOOL.name) =>
      scenario(
        id,
        [check(`t/${id}`)],
        async (ctx) => {
          startedAt[id] = ctx.serverStartedAt;
          return (await ctx.callTool(tool, { command: ['true'] }, ctx.codexEntries())).kind === 'result' ? pass() : fail('no answer');
        },
        { shares: 'calls' },
      );
    const report = await runSuite(p, [
      turn('a'),
      turn('b', 'hang'),
      turn('c'),
      scenario('look', [check('t/look')], async (ctx) => (ctx.handshake.tools.length > 0 ? pass() : fail('no tools')), { shares: 'handshake' }),
    ]);
    const results = byId(report.results);
    expect(results['t/a']).toMatchObject({ status: 'pass' });
    expect(results['t/b']).toMatchObject({ status: 'error', message: expect.stringContaining('a call got no answer') });
    expect(results['t/c']).toMatchObject({ status: 'pass' });
    expect(results['t/look']).toMatchObject({ status: 'pass' });
    // a and b on the shared server (look read its greeting); c, once b went wrong on it, on a fresh server of its own.
    expect(startedAt.b).toBe(startedAt.a);
    expect(startedAt.c).toBeGreaterThan(startedAt.a!);
    expect(p.connect.starts).toBe(2);
    expect(report.stats).toMatchObject({ serverStarts: 2, startsShared: 2 });
    // Each record holds the greeting, then its own turn of the shared server's traffic, under a note saying so.
    const methods = (id: string) =>
      report.scenarios.find((r) => r.id === id)!.transcript.map((e) => ('message' in e ? ((e.message as { method?: string }).method ?? 'answer') : e.dir));
    expect(methods('b')).toEqual(['initialize', 'answer', 'notifications/initialized', 'tools/list', 'answer', 'note', 'tools/call']);
    expect(methods('look')).toEqual(['initialize', 'answer', 'notifications/initialized', 'tools/list', 'answer', 'note']);
  });

  test('a failure resting on a call that got no answer, with nothing run, is an error', async () => {
    const report = await runSuite(plan({ onCall: () => 'no-answer' }), [
      scenario('s', [check('t/exec', ['exec'])], async (ctx) => ((await probe(ctx)).kind === 'result' ? pass() : fail('no answer'))),
    ]);
    expect(report.results[0]).toMatchObject({
      status: 'error',
      message: expect.stringMatching(/^a call got no answer \(tools\/call: .*\(it would read: no answer\)$/),
    });
  });

  test('a scenario over its budget is an error with the timeout hint; a crash is an error; a verdict never reached is one', async () => {
    // The budget has a margin a loaded machine keeps (the crash must come well within it); the slow one never ends in time.
    const report = await runSuite(plan({}, { scenarioTimeoutMs: 1_500 }), [
      scenario(
        'slow',
        [check('t/slow')],
        () => new Promise<Verdict>((resolve) => setTimeout(() => resolve(couldNotRun('reached too late to count')), 30_000).unref()),
      ),
      scenario('crash', [check('t/crash')], async () => {
        throw new Error('boom');
      }),
      scenario('silent', [check('t/silent'), check('t/unreached')], async () => pass()),
    ]);
    const results = byId(report.results);
    expect(results['t/slow']).toMatchObject({ status: 'error', hint: 'scenario-timeout', message: expect.stringContaining('scenario timeout') });
    expect(results['t/crash']).toMatchObject({ status: 'error', message: expect.stringMatching(/^scenario crashed: Error: boom/) });
    expect(results['t/silent']).toMatchObject({ status: 'pass' });
    expect(results['t/unreached']).toMatchObject({ status: 'error', message: 'scenario silent reached no verdict for t/unreached' });
  });

  test('a target dead at its first start: every job of the transport could not run, and the report says why', async () => {
    const p = plan({ dead: true }, { jobs: 1 });
    const report = await runSuite(p, [scenario('a', [check('t/a')], async () => pass()), scenario('b', [check('t/b')], async () => pass())]);
    for (const result of report.results)
      expect(result).toMatchObject({ status: 'skip', reason: 'could-not-run', message: 'target failed to start: server exited (code 1)' });
    expect(report.startFailure).toMatchObject({ message: 'server exited (code 1)', stderrTail: 'no such thing', transport: 'stdio' });
    expect(p.connect.starts).toBe(1);
  });

  test("a command run outside any launch fails the check declaring the monitor's exec role, whatever the scenarios said", async () => {
    const server: FakeServer = {
      onCall: (params) => {
        ranOutside(params.arguments!.command as string[]);
        return { result: { content: [{ type: 'text', text: 'ok' }] } };
      },
    };
    const inside = check('t/inside-launch', ['exec'], { monitors: 'exec' });
    const report = await runSuite(plan(server), [
      scenario('runs', [check('t/runs', ['exec'])], async (ctx) => ((await probe(ctx)).kind === 'result' ? pass() : fail('no'))),
      scenario('inside', [inside], async () => pass()),
    ]);
    const results = byId(report.results);
    expect(results['t/inside-launch']).toMatchObject({ status: 'fail', message: expect.stringContaining('outside') });
    expect(results['t/runs']).toMatchObject({ status: 'pass' });
    // Without the role's check in the run, the call's own check is charged.
    const alone = await runSuite(plan(server), [
      scenario('runs', [check('t/runs', ['exec'])], async (ctx) => ((await probe(ctx)).kind === 'result' ? pass() : fail('no'))),
    ]);
    expect(alone.results[0]).toMatchObject({ status: 'fail' });
  });

  describe('a server that asks for confirmation (elicitation/create) before it runs a command', () => {
    const requestedSchema = {
      type: 'object',
      properties: { confirm: { type: 'boolean' }, scope: { type: 'string', enum: ['once', 'always'] } },
      required: ['confirm'],
    };
    const confirming = (elicit: Record<string, unknown>): FakeServer => ({
      elicit,
      onCall: (_params, answer) => {
        const a = answer as { action?: string; content?: { confirm?: unknown } } | undefined;
        const go = a?.action === 'accept' && a.content?.confirm === true;
        return { result: { content: [{ type: 'text', text: go ? 'ran' : `not confirmed: ${String(a?.action)}` }], isError: !go } };
      },
    });
    const judged = (ctx: ScenarioContext) =>
      probe(ctx).then((o) => (o.kind === 'result' && !(o.result as { isError?: boolean }).isError ? pass() : fail('the given codexExecutable never ran')));
    const run = (server: FakeServer, elicitation?: 'accept' | 'decline' | 'cancel') =>
      runSuite(plan(server, { options: { assumeOptIn: false, callTimeoutMs: 300, startupTimeoutMs: 2_000, ...(elicitation ? { elicitation } : {}) } }), [
        scenario('s', [check('t/exec', ['exec']), check('t/other')], async (ctx) => judged(ctx), {
          run: async (ctx) =>
            new Map([
              ['t/exec', await judged(ctx)],
              ['t/other', fail('not about the exec tool')],
            ]),
        }),
      ]);

    test('by default the host answers as a person who agrees: the form filled from its schema, accepted; the call runs and passes', async () => {
      const report = await run(confirming({ mode: 'form', message: 'May I run it?', requestedSchema }));
      expect(byId(report.results)['t/exec']).toMatchObject({ status: 'pass' });
      expect(report.elicitation).toEqual({
        answer: 'accept',
        requests: [{ scenario: 's', transport: 'stdio', mode: 'form', message: 'May I run it?', action: 'accept' }],
      });
      const sent = report.scenarios[0]!.transcript.flatMap((e) => ('message' in e && (e.message as { result?: unknown }).result ? [e.message] : []));
      expect(sent).toContainEqual(expect.objectContaining({ id: 'e0', result: { action: 'accept', content: { confirm: true, scope: 'once' } } }));
      expect(report.scenarios[0]!.transcript.some((e) => e.dir === 'note' && /elicitation\/create \(form mode\).*answered accept/.test(e.text))).toBe(true);
    });

    test('answered decline (codex exec, approval never): the refused call makes the exec check could-not-run, not a failure', async () => {
      const report = await run(confirming({ mode: 'form', message: 'May I run it?', requestedSchema }), 'decline');
      expect(byId(report.results)['t/exec']).toMatchObject({
        status: 'skip',
        reason: 'could-not-run',
        hint: 'elicitation',
        message: expect.stringMatching(
          /^the server asked for confirmation \(elicitation\/create, form mode: "May I run it\?"\) and the suite answered decline; it then refused s call #1$/,
        ),
      });
      expect(byId(report.results)['t/other']).toMatchObject({ status: 'fail' });
      expect(report.elicitation?.requests.map((r) => r.action)).toEqual(['decline']);
    });

    test('a URL-mode request is cancelled even when accepting (no browser), and reported the same way', async () => {
      const report = await run(confirming({ mode: 'url', message: 'Sign in first', url: 'https://example.com/consent', elicitationId: 'x1' }));
      expect(byId(report.results)['t/exec']).toMatchObject({
        status: 'skip',
        reason: 'could-not-run',
        message: expect.stringContaining('url mode: "Sign in first") and the suite answered cancel'),
      });
      expect(report.elicitation?.requests).toEqual([expect.objectContaining({ mode: 'url', action: 'cancel' })]);
    });
  });

  test('the server answers; every server is counted; records match results', async () => {
    const report = await runSuite(plan({}), [
      scenario('s', [check('t/exec', ['exec'])], async (ctx) => ((await probe(ctx)).kind === 'result' ? pass() : fail('no'))),
    ]);
    expect(report.scenarios).toEqual([expect.objectContaining({ id: 's', transport: 'stdio', checks: ['t/exec'], ran: true })]);
    expect(report.scenarios[0]!.transcript.some((e) => 'message' in e)).toBe(true);
    expect(report.serverInfo).toEqual({ name: 'in-process', version: '0' });
    expect(report.exec).toMatchObject({ tool: EXEC_TOOL.name });
  });

  describe("the suite's own scenarios, once a blocker is known", () => {
    const only =
      (...ids: string[]) =>
      (id: string) =>
        ids.includes(id);
    const realPlan = (server: FakeServer, select: (id: string) => boolean, options: Partial<RunPlan['options']> = {}) =>
      plan(server, { select, scenarioTimeoutMs: 20_000, options: { assumeOptIn: false, callTimeoutMs: 2_000, startupTimeoutMs: 2_000, ...options } });

    test('a server that executes nothing: what rests on the control starts no server, and every verdict stays blocked by it', async () => {
      const select = only(
        CONTROL_CHECK,
        'launcher/absent-fails-closed',
        'launcher/fails-closed-after-success',
        'authority/arguments-are-not-authority',
        'authority/state-follows-call',
        'authority/concurrent-calls-isolated',
        'aliases/both-keys',
        'aliases/conflict-prefers-current',
        'aliases/current-key-only',
        'explore/sequences-hold-contract',
      );
      // It answers every call with an error (it waits for a state it is never sent) and runs nothing.
      const refusing: FakeServer = { onCall: () => ({ result: { content: [{ type: 'text', text: 'no sandbox state yet' }], isError: true } }) };
      const p = realPlan(refusing, select, { explore: { runs: 8, seed: 7 } });
      const report = await runSuite(p, allScenarios);
      const results = byId(report.results);
      expect(results[CONTROL_CHECK]).toMatchObject({ status: 'fail' });
      for (const result of report.results.filter((r) => r.id !== CONTROL_CHECK))
        expect(result, result.id).toMatchObject({ status: 'skip', reason: 'could-not-run', blockedBy: CONTROL_CHECK });
      // Started: the shared server (the control's call, then the one-key alias scenario's: one key may
      // launch where two did not), the resident server, and the first sequence of each exploration
      // worker (with the spare each keeps starting ahead).
      expect(p.connect.starts).toBeLessThanOrEqual(7);
      expect(report.stats!.serverStarts).toBe(p.connect.starts);
      // Not started: the fail-closed scenario's fresh server and 6 of the 8 sequences (the authority
      // and alias scenarios take turns on the shared server: they would have started none).
      expect(report.stats!.startsSaved).toBeGreaterThanOrEqual(1 + 6);
      // The exploration's transcript records each sequence's server, not only its first connection.
      const explored = report.scenarios.find((s) => s.id === 'explore/sequences')!;
      expect(explored.transcript.filter((e) => e.dir === 'note' && /^isolated run \d+/.test(e.text))).toHaveLength(2);
    }, 30_000);

    test('resources/list never answered: the resource checks are errors, not "no resources"', async () => {
      const report = await runSuite(
        realPlan({ silentOn: ['resources/list'] }, only('resources/read-without-sandbox-keys', 'resources/read-with-caller-meta')),
        allScenarios,
      );
      for (const result of report.results)
        expect(result, result.id).toMatchObject({ status: 'error', message: expect.stringContaining('resources/list got no answer') });
    });

    test('a rejected adapter call: nothing that runs commands starts again', async () => {
      const select = only(CONTROL_CHECK, 'launcher/absent-fails-closed', 'aliases/current-key-only', 'authority/state-follows-call');
      const p = realPlan({ onCall: () => ({ error: { code: -32602, message: 'Invalid params: command must be a string' } }) }, select);
      const report = await runSuite(p, allScenarios);
      for (const result of report.results) expect(result, result.id).toMatchObject({ status: 'skip', reason: 'could-not-run', hint: 'exec-adapter' });
      // The shared server (the control, then the one-key alias scenario, which does not wait for the
      // control's facts) and the resident server; the fail-closed scenario's fresh server is saved.
      expect(p.connect.starts).toBeLessThanOrEqual(2);
      expect(report.stats!.startsSaved).toBe(1);
    });

    test('ALIAS-2 on a server that runs every command directly: blocked by the control, not blamed', async () => {
      const direct: FakeServer = {
        onCall: (params) => {
          ranOutside(params.arguments!.command as string[]);
          return { result: { content: [{ type: 'text', text: 'ok' }] } };
        },
      };
      const report = await runSuite(realPlan(direct, only(CONTROL_CHECK, 'aliases/conflict-prefers-current', 'execution/inside-launch')), allScenarios);
      const results = byId(report.results);
      expect(results['aliases/conflict-prefers-current']).toMatchObject({ status: 'skip', reason: 'could-not-run', blockedBy: CONTROL_CHECK });
      expect(results['execution/inside-launch']).toMatchObject({ status: 'fail' });
    });
  });
});
