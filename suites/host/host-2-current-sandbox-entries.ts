import { SANDBOX_META_KEYS, STATE_KEY, STATE_KEY_DEPRECATED } from '../../harness/codex-wire.js';
import { APP_INPUTS, POLICY_CHANGES } from '../../harness/host-mode/drive.js';
import { isObject } from '../../harness/json.js';
import { structuralDiff } from '../engine/judge.js';
import { fail, pass } from '../engine/model.js';
import { BOTH, type HostCheck } from './host-check.js';
import { directCall, execCalls, hasOwn, json, label, metaOf, step, turnCalls, whyMissing } from './observed.js';
import { profileKind, workspaceUris } from './sandbox-state.js';
import { pathToFileURL } from 'node:url';

/**
 * HOST-2 (CONTRACT.md §4): each call carries the state and launcher of the policy and workspace in
 * force for that call (after a turn/start policy change too), replacing stale sandbox entries in
 * caller _meta and keeping the unrelated ones.
 */

const eachCallCurrentEntries: HostCheck = {
  id: 'host/each-call-current-entries',
  rule: 'HOST-2',
  level: 'MUST',
  title: 'two calls in a row each carry the complete, current sandbox entries',
  summary:
    'In one session, every model-initiated call carries the full sandbox entries for the policy in force (both state keys, and over stdio the launcher): the second of two calls in a row carries the same entries as the first, with the workspace as sandboxCwd and the configured (workspace-write) policy.',
  observes:
    "The exec run's first two model calls: each must carry both state keys (over stdio the launcher too) and a state whose sandboxCwd is the workspace's file:// URI and whose permissionProfile describes workspace-write, and the sandbox entries of the two calls must serialize identically.",
  why: "Authority belongs to the call (AUTH-2): a server must not need to remember an earlier call's state, and a host that sends entries only once leaves later calls unsandboxed or failing.",
  typicalMistake: 'Sending the entries on the first call of a connection only, or caching a state built for another workspace.',
  fix: 'Build the sandbox entries for every call from the policy of the turn that makes it.',
  needs: [],
  transports: BOTH,
  scenario: 'exec',
  judge(ctx) {
    const calls = execCalls(ctx);
    if (calls.length < 2) return whyMissing(`the exec run made ${calls.length} of its 2 calls to the opted-in server`, ctx.exec.problems);
    const expectedKeys = ctx.transport === 'stdio' ? [...SANDBOX_META_KEYS] : [STATE_KEY, STATE_KEY_DEPRECATED];
    const problems: string[] = [];
    const entries = calls.slice(0, 2).map((record) => {
      const meta = metaOf(record) ?? {};
      const missing = expectedKeys.filter((k) => !hasOwn(meta, k));
      if (missing.length) problems.push(`${label(record, ctx)}: missing ${missing.join(', ')}`);
      const state = meta[STATE_KEY];
      const cwd = isObject(state) ? state.sandboxCwd : undefined;
      if (state !== undefined && !workspaceUris(ctx.exec.workspace).has(String(cwd)))
        problems.push(`${label(record, ctx)}: sandboxCwd ${json(cwd)} is not the workspace ${pathToFileURL(ctx.exec.workspace).href}`);
      const kind = profileKind(state, ctx.exec.workspace);
      if (state !== undefined && kind !== 'workspace-write')
        problems.push(`${label(record, ctx)}: the state describes ${kind}, the session is workspace-write`);
      return Object.fromEntries(SANDBOX_META_KEYS.filter((k) => hasOwn(meta, k)).map((k) => [k, meta[k]]));
    });
    const [first, second] = entries as [Record<string, unknown>, Record<string, unknown>];
    if (json(first) !== json(second)) problems.push("the second call's sandbox entries differ from the first's, with nothing changed in between");
    if (problems.length === 0) return pass();
    return fail(problems.join('; '), { expected: first, actual: second, diff: structuralDiff(first, second) });
  },
};

const stateFollowsPolicyChange: HostCheck = {
  id: 'host/state-follows-policy-change',
  rule: 'HOST-2',
  level: 'MUST',
  title: 'after the sandbox policy changes between turns, calls carry the new state',
  summary:
    'When a turn changes the sandbox policy (app-server turn/start with a sandboxPolicy override), every model-initiated call of that turn carries a state for the policy of its own turn, never the previous one. Codex 0.171.0 often breaks this (CONTRACT.md §4 HOST-2).',
  observes: `One app-server thread runs a turn under the configured workspace-write, then ${POLICY_CHANGES} more by default, each changing the policy (turn/start sandboxPolicy readOnly, workspaceWrite, readOnly, ...). The tools/call of each turn, matched by the callId its model issued, must carry a codex/sandbox-state whose permissionProfile describes that turn's policy. Each stale turn is reported with its policy, the policy the state sent describes, and x-codex-turn-metadata.sandbox_mode of the same call. The defect this finds in Codex 0.171.0 is intermittent (a race on each change), hence the many changes.`,
  why: 'A server enforces the state it receives: a stale workspace-write state in a read-only turn lets a command write where the user just forbade it.',
  typicalMistake:
    "Computing the MCP sandbox state once per session (or updating it asynchronously, racing the turn) instead of from the current turn's policy; x-codex-turn-metadata, built from the turn itself, then names the new mode while the state is the old one.",
  fix: 'Derive the state for each call from the turn context the call belongs to.',
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const turns = turnCalls(ctx);
    const planned = ctx.policyChanges + 1;
    if (turns.length < planned || turns.some((t) => !t.record)) {
      const detail = turns.filter((t) => !t.record).map((t) => `${t.turn.name}: ${t.turn.completed ? 'completed without a call' : 'did not complete'}`);
      if (turns.length < planned) detail.unshift(`${turns.length} of ${planned} turns ran`);
      return whyMissing('the app-server turns did not each make their call', detail, ctx.app.problems);
    }
    const rows = turns.map(({ turn, record }) => {
      const meta = metaOf(record) ?? {};
      const turnMeta = isObject(meta['x-codex-turn-metadata']) ? meta['x-codex-turn-metadata'] : {};
      return {
        turn: turn.name,
        policy: turn.mode,
        stateDescribes: profileKind(meta[STATE_KEY], ctx.app.workspace),
        turnMetadataSandboxMode: turnMeta.sandbox_mode ?? '(none)',
      };
    });
    const wrong = rows.filter((r) => r.stateDescribes !== r.policy);
    const changes = rows.length - 1;
    if (wrong.length === 0) return pass(`${changes} policy changes, every turn's state matched its policy`);
    const agreeing = wrong.filter((r) => r.turnMetadataSandboxMode === r.policy).length;
    return fail(
      `${wrong.length} of ${rows.length} turns (${changes} policy changes) carried a state for another policy${agreeing ? `, while x-codex-turn-metadata.sandbox_mode named the turn's own policy on ${agreeing === wrong.length ? 'each' : agreeing} of them` : ''} (each stale turn below)`,
      {
        expected: wrong.map((r) => ({ turn: r.turn, stateDescribes: r.policy })),
        actual: wrong,
        diff: wrong.map(
          (r) =>
            `~ ${r.turn}: the turn's policy is ${r.policy}, the state sent describes ${r.stateDescribes}, x-codex-turn-metadata.sandbox_mode is ${json(r.turnMetadataSandboxMode)}`,
        ),
      },
    );
  },
};

const staleEntriesReplaced: HostCheck = {
  id: 'host/stale-entries-replaced',
  rule: 'HOST-2',
  level: 'MUST',
  title: 'stale sandbox entries in caller _meta are replaced by the current ones',
  summary:
    'When caller _meta already holds sandbox entries (app-server mcpServer/tool/call with an old state, state copy and launcher), the server receives what the host would send now: the same entries as a call without them, never the stale values; over HTTP no launcher at all.',
  observes:
    "Two direct mcpServer/tool/call requests, one whose caller _meta holds stale values of all three sandbox keys and one without any: at the recording server no sandbox key of the first may still hold the caller's value, and the sandbox entries of the two must serialize identically.",
  why: 'A stale state or launcher from another turn, thread or machine would make the server enforce the wrong policy or execute an unverified binary.',
  typicalMistake: 'Merging host entries into caller _meta only when absent, or removing nothing when no launcher is available now.',
  fix: 'On every call, overwrite the state keys with the current state and set or delete the launcher entry according to what is available now.',
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const stale = directCall(ctx, 'tool-call/stale-sandbox-entries');
    const fresh = directCall(ctx, 'tool-call/verbatim');
    if (!stale || !fresh) {
      return whyMissing(
        'the direct calls did not reach the recording server',
        [step(ctx, 'tool-call/stale-sandbox-entries'), step(ctx, 'tool-call/verbatim')].map((s) => (s ? `${s.name}: ${json(s.outcome)}` : 'not made')),
        ctx.app.problems,
      );
    }
    const got = metaOf(stale) ?? {};
    const now = metaOf(fresh) ?? {};
    const pick = (meta: Record<string, unknown>) => Object.fromEntries(SANDBOX_META_KEYS.filter((k) => hasOwn(meta, k)).map((k) => [k, meta[k]]));
    const problems: string[] = [];
    for (const key of SANDBOX_META_KEYS) {
      const sent = (APP_INPUTS.staleMeta as Record<string, unknown>)[key];
      if (hasOwn(got, key) && json(got[key]) === json(sent)) problems.push(`${key} still holds the caller's stale value`);
    }
    if (json(pick(got)) !== json(pick(now))) problems.push('the entries differ from those of a call without stale entries');
    if (problems.length === 0)
      return pass(
        Object.keys(pick(now)).length ? 'replaced by the current entries' : 'removed, as on a call without them (host/direct-call-sandbox-entries judges that)',
      );
    return fail(problems.join('; '), { expected: pick(now), actual: pick(got), diff: structuralDiff(pick(now), pick(got)) });
  },
};

const unrelatedMetaKept: HostCheck = {
  id: 'host/unrelated-meta-kept',
  rule: 'HOST-2',
  level: 'MUST',
  title: 'unrelated _meta entries survive the replacement of sandbox entries',
  summary: "While replacing stale sandbox entries, the host keeps the caller's unrelated _meta entries, with their values unchanged.",
  observes:
    "On the direct call whose caller _meta held stale sandbox entries, the caller's x-conformance-unrelated entry must reach the recording server with the same JSON value.",
  why: 'Callers put their own correlation and tracing data in _meta; dropping it along with the stale sandbox keys breaks them for no reason.',
  typicalMistake: "Rebuilding _meta from scratch with the host's own entries.",
  fix: "Edit the caller's _meta in place: replace or delete the sandbox keys, leave the rest.",
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const stale = directCall(ctx, 'tool-call/stale-sandbox-entries');
    if (!stale)
      return whyMissing(
        'the direct call with stale entries did not reach the recording server',
        [json(step(ctx, 'tool-call/stale-sandbox-entries')?.outcome)],
        ctx.app.problems,
      );
    const got = metaOf(stale) ?? {};
    const key = 'x-conformance-unrelated';
    if (json(got[key]) === json(APP_INPUTS.staleMeta[key])) return pass();
    return fail(`${key} did not arrive unchanged`, { expected: { [key]: APP_INPUTS.staleMeta[key] }, actual: { [key]: got[key] ?? '(absent)' } });
  },
};

/** The HOST-2 checks, in report order. */
export const host2Checks: HostCheck[] = [eachCallCurrentEntries, stateFollowsPolicyChange, staleEntriesReplaced, unrelatedMetaKept];
