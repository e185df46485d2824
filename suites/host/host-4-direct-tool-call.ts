import { LAUNCHER_KEY, SANDBOX_META_KEYS, STATE_KEY, STATE_KEY_DEPRECATED } from '../../harness/codex-wire.js';
import { APP_INPUTS, toolMarker } from '../../harness/host-mode/drive.js';
import { withMethod } from '../../harness/host-mode/recording.js';
import { isObject } from '../../harness/json.js';
import { keyOrderDifferences, structuralDiff } from '../engine/judge.js';
import { fail, pass } from '../engine/model.js';
import { BOTH, type HostCheck } from './host-check.js';
import { argumentsNote, directCall, hasOwn, json, metaOf, onVerbatimCall, step, stepsUnder, whyMissing } from './observed.js';
import { launcherShapeProblem, profileKind, workspaceUris } from './sandbox-state.js';
import { pathToFileURL } from 'node:url';

/**
 * HOST-4 (CONTRACT.md §4): app-server mcpServer/tool/call forwards caller _meta verbatim, sets
 * threadId and progressToken (in place), adds the sandbox entries for an opted-in server and strips
 * them for one that did not opt in, and refuses a non-object _meta with -32603.
 */

const directCallMetaVerbatim: HostCheck = {
  id: 'host/direct-call-meta-verbatim',
  rule: 'HOST-4',
  level: 'MUST',
  title: 'mcpServer/tool/call forwards caller _meta verbatim',
  summary:
    'App-server mcpServer/tool/call forwards every caller _meta entry except threadId unchanged (values and key order); the host may only add its own progressToken and sandbox entries.',
  observes:
    'A direct mcpServer/tool/call with caller _meta holding nested values, non-ASCII text, an empty object, keys out of alphabetical order and a threadId: at the recording server every caller entry but threadId must be deep-equal and in the same key order, and the host may add only threadId, progressToken and the sandbox keys.',
  why: "The app-server client owns its metadata; a host that rewrites it breaks the client's contract with the server.",
  typicalMistake: 'Re-serializing _meta through a typed struct, which drops unknown keys or reorders them.',
  fix: 'Treat caller _meta as an opaque JSON object: overwrite threadId, add host entries, copy the rest as is.',
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge: onVerbatimCall((ctx, got) => {
    const sent = APP_INPUTS.verbatimMeta as Record<string, unknown>;
    const expected = Object.fromEntries(Object.entries(sent).filter(([k]) => k !== 'threadId'));
    const arrived = Object.fromEntries(
      Object.keys(expected)
        .filter((k) => hasOwn(got, k))
        .map((k) => [k, got[k]]),
    );
    const allowedExtra = new Set<string>(['threadId', 'progressToken', ...SANDBOX_META_KEYS]);
    const extra = Object.keys(got).filter((k) => !hasOwn(sent, k) && !allowedExtra.has(k));
    const problems = [...structuralDiff(expected, arrived), ...keyOrderDifferences(expected, arrived)];
    if (extra.length) problems.push(`+ host added ${extra.join(', ')}`);
    if (problems.length === 0) return pass();
    return fail('caller _meta did not arrive verbatim', { expected, actual: got, diff: problems });
  }),
};

const directCallThreadId: HostCheck = {
  id: 'host/direct-call-thread-id',
  rule: 'HOST-4',
  level: 'MUST',
  title: "mcpServer/tool/call overwrites a caller threadId with the thread's id",
  summary: 'A threadId in caller _meta is replaced by the id of the thread the call runs in.',
  observes: 'The same direct call carries threadId "caller-supplied-thread-id"; at the recording server threadId must equal the id thread/start returned.',
  why: 'threadId is host-owned routing data; a caller must not be able to attribute a call to another thread.',
  typicalMistake: 'Adding threadId only when the caller did not set one.',
  fix: 'Always set threadId from the thread the request names.',
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge: onVerbatimCall((ctx, meta) => {
    const got = meta.threadId;
    if (got === ctx.app.threadId) return pass();
    return fail(got === APP_INPUTS.verbatimMeta.threadId ? "the caller's threadId was passed through" : "threadId is not the thread's id", {
      expected: { threadId: ctx.app.threadId },
      actual: { threadId: got ?? '(absent)' },
    });
  }),
};

const directCallSandboxEntries: HostCheck = {
  id: 'host/direct-call-sandbox-entries',
  rule: 'HOST-4',
  level: 'MUST',
  title: 'mcpServer/tool/call to an opted-in server carries the current sandbox entries',
  summary:
    "A direct app-server mcpServer/tool/call to a server that opted in carries both state keys for the thread's current policy and workspace, and over stdio the launcher, as model calls do (Codex 0.169.0 sent none on direct calls). That the two keys are identical and that no launcher goes over HTTP is judged for every call by host/state-keys-identical and host/no-launcher-over-http.",
  observes:
    'The direct call whose caller _meta held no sandbox entries (before any turn, so under the configured workspace-write): at the recording server it must carry codex/sandbox-state and codex/sandbox-state-meta, with a state whose sandboxCwd is the thread\'s workspace and whose permissionProfile describes workspace-write, and over stdio codex/sandbox-launcher {"codexExecutable": <absolute path>}.',
  why: 'A server that fails closed without a launcher (LAUNCH-2) refuses a direct call that carries no sandbox entries, and one with stale entries would run under the wrong policy.',
  typicalMistake: "Adding the sandbox entries only on the model's tool-call path, not on the app-server's direct call.",
  fix: "Build a direct call's _meta with the same function as a model call's, from the thread's current turn context.",
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge: onVerbatimCall((ctx, meta) => {
    const problems: string[] = [];
    const missing = [STATE_KEY, STATE_KEY_DEPRECATED].filter((k) => !hasOwn(meta, k));
    if (missing.length) problems.push(`missing ${missing.join(', ')}`);
    const state = meta[STATE_KEY];
    if (state !== undefined) {
      const cwd = isObject(state) ? state.sandboxCwd : undefined;
      if (!workspaceUris(ctx.app.workspace).has(String(cwd)))
        problems.push(`sandboxCwd ${json(cwd)} is not the workspace ${pathToFileURL(ctx.app.workspace).href}`);
      const kind = profileKind(state, ctx.app.workspace);
      if (kind !== 'workspace-write') problems.push(`the state describes ${kind}, the thread is workspace-write`);
    }
    const launcherProblem = launcherShapeProblem(meta[LAUNCHER_KEY]);
    if (ctx.transport === 'stdio' && launcherProblem) problems.push(launcherProblem);
    if (problems.length === 0) return pass();
    const sandbox = Object.fromEntries(SANDBOX_META_KEYS.filter((k) => hasOwn(meta, k)).map((k) => [k, meta[k]]));
    return fail(problems.join('; '), {
      expected: {
        [STATE_KEY]: '<workspace-write state for the workspace>',
        [STATE_KEY_DEPRECATED]: `<a copy of ${STATE_KEY}>`,
        ...(ctx.transport === 'stdio' ? { [LAUNCHER_KEY]: { codexExecutable: '<absolute path>' } } : {}),
      },
      actual: Object.keys(sandbox).length ? sandbox : '(no sandbox entries)',
    });
  }),
};

const directCallNoOptInStripped: HostCheck = {
  id: 'host/direct-call-no-opt-in-stripped',
  rule: 'HOST-4',
  level: 'MUST',
  title: 'mcpServer/tool/call strips caller sandbox entries for a server that did not opt in',
  summary:
    'A direct mcpServer/tool/call to a server that did not opt in reaches it with none of the three sandbox keys, even when the caller put them in _meta (Codex 0.169.0 passed them through).',
  observes:
    'A direct call to a second recording server, which advertises no sandbox capability, with caller _meta holding stale values of codex/sandbox-state, codex/sandbox-state-meta and codex/sandbox-launcher beside an unrelated entry: at that server none of the three keys may be present.',
  why: "A server that never opted in cannot tell the host's entries from a caller's; a caller-made state or launcher reaching it is authority the host never checked.",
  typicalMistake: 'Replacing caller sandbox entries only when the host has entries of its own to send.',
  fix: "Remove the three sandbox keys from caller _meta first, then add the host's entries if the server opted in.",
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const name = 'tool-call/no-opt-in-stale-entries';
    const record = withMethod(ctx.app.plainRecords, 'tools/call').find((r) => argumentsNote(r) === toolMarker(name));
    if (!record)
      return whyMissing('the direct call did not reach the recording server that did not opt in', [json(step(ctx, name)?.outcome)], ctx.app.problems);
    const meta = metaOf(record) ?? {};
    const kept = SANDBOX_META_KEYS.filter((k) => hasOwn(meta, k));
    if (kept.length === 0) return pass();
    return fail(`sandbox keys reached a server that did not opt in: ${kept.join(', ')}`, {
      expected: `none of ${SANDBOX_META_KEYS.join(', ')}`,
      actual: Object.fromEntries(kept.map((k) => [k, meta[k]])),
    });
  },
};

const directCallProgressToken: HostCheck = {
  id: 'host/direct-call-progress-token',
  rule: 'HOST-4',
  level: 'MUST',
  title: 'mcpServer/tool/call overwrites a caller progressToken in place',
  summary: "A progressToken in caller _meta is replaced by the host's own token, at the caller's position among the caller's entries.",
  observes: `A direct call with caller _meta {"x-conformance-before": 1, "progressToken": "caller-progress-token", "x-conformance-after": 2}: at the recording server progressToken must be present, must not be the caller's value, and must sit after every caller entry sent before it and before every caller entry sent after it that arrived.`,
  why: "Progress notifications are routed by the host's token; a caller token that survives lets a caller receive or spoof another request's progress, and a moved key breaks the verbatim forwarding of caller _meta.",
  typicalMistake: "Keeping the caller's token, or deleting it and appending the host's at the end.",
  fix: "Assign the host's token to the progressToken key of the caller's map (which keeps its position), or append it when there is none.",
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const name = 'tool-call/caller-progress-token';
    const record = directCall(ctx, name);
    if (!record) return whyMissing('the direct call did not reach the recording server', [json(step(ctx, name)?.outcome)], ctx.app.problems);
    const got = metaOf(record) ?? {};
    const sent = APP_INPUTS.progressTokenMeta as Record<string, unknown>;
    const problems: string[] = [];
    if (!hasOwn(got, 'progressToken')) problems.push('progressToken is missing');
    else if (json(got.progressToken) === json(sent.progressToken)) problems.push("the caller's progressToken was passed through");
    const sentKeys = Object.keys(sent);
    const arrivedOrder = Object.keys(got).filter((k) => sentKeys.includes(k));
    const expectedOrder = sentKeys.filter((k) => hasOwn(got, k));
    if (hasOwn(got, 'progressToken') && json(arrivedOrder) !== json(expectedOrder))
      problems.push(`progressToken moved: the caller's entries arrived in the order ${arrivedOrder.join(', ')}`);
    if (problems.length === 0) return pass(`progressToken ${json(got.progressToken)} in place`);
    return fail(problems.join('; '), { expected: { ...sent, progressToken: "<the host's token>" }, actual: got });
  },
};

const directCallNonObjectMeta: HostCheck = {
  id: 'host/direct-call-non-object-meta',
  rule: 'HOST-4',
  level: 'MUST',
  title: 'mcpServer/tool/call rejects non-object _meta with -32603',
  summary:
    'A caller _meta that is not a JSON object (an array, a string) gets JSON-RPC error -32603 "... MCP tool request _meta must be a JSON object, got ..." and nothing reaches the server.',
  observes:
    'Direct calls whose _meta is an array and a string: the app-server must answer each with JSON-RPC error -32603 whose message contains "MCP tool request _meta must be a JSON object, got ", and the recording server must get no call bearing that attempt\'s marker.',
  why: "MCP _meta is an object; forwarding anything else breaks servers, and silently dropping it hides the caller's bug.",
  typicalMistake: 'Coercing a non-object to {} or forwarding it as is.',
  fix: 'Validate caller _meta before calling the server and answer with the documented error.',
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const steps = stepsUnder(ctx, 'tool-call/non-object-meta/');
    if (steps.length === 0) return whyMissing('the app-server session ended before the non-object calls', ctx.app.problems);
    const problems: string[] = [];
    for (const s of steps) {
      const o = s.outcome;
      if (o.kind !== 'error' || o.error.code !== -32603 || !String(o.error.message).includes('MCP tool request _meta must be a JSON object, got ')) {
        problems.push(`_meta ${json(s.params._meta)}: ${json(o.kind === 'error' ? o.error : o)}`);
      }
      if (directCall(ctx, s.name)) problems.push(`_meta ${json(s.params._meta)}: the call reached the server`);
    }
    if (problems.length === 0) return pass();
    return fail(problems.join('; '), {
      expected: { code: -32603, message: '... MCP tool request _meta must be a JSON object, got <value>' },
      actual: steps.map((s) => ({
        _meta: s.params._meta,
        answer: s.outcome.kind === 'error' ? s.outcome.error : s.outcome,
        reachedServer: Boolean(directCall(ctx, s.name)),
      })),
    });
  },
};

/** The HOST-4 checks, in report order. */
export const host4Checks: HostCheck[] = [
  directCallMetaVerbatim,
  directCallThreadId,
  directCallSandboxEntries,
  directCallNoOptInStripped,
  directCallProgressToken,
  directCallNonObjectMeta,
];
