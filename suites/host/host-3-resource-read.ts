import { APP_INPUTS } from '../../harness/host-mode/drive.js';
import { keyOrderDifferences, structuralDiff } from '../engine/judge.js';
import { fail, pass } from '../engine/model.js';
import { BOTH, type HostCheck } from './host-check.js';
import { json, metaOf, resourceRead, step, stepsUnder, whyMissing } from './observed.js';

/**
 * HOST-3 (CONTRACT.md §4): app-server mcpServer/resource/read refuses host-owned keys and
 * non-object _meta with -32600, accepts null, and forwards the rest verbatim plus progressToken.
 */

const resourceReadReservedKeys: HostCheck = {
  id: 'host/resource-read-reserved-keys',
  rule: 'HOST-3',
  level: 'MUST',
  title: 'mcpServer/resource/read rejects host-owned _meta keys with -32600',
  summary:
    'Caller _meta holding threadId, x-codex-turn-metadata or codex/connectionLease gets JSON-RPC error -32600 "reserved resource read metadata key: <key>" and the read does not reach the server. (The codex_apps-only keys need the host-owned codex_apps server and are not checked.)',
  observes:
    'Three mcpServer/resource/read requests, each with one reserved key (threadId, x-codex-turn-metadata, codex/connectionLease) beside an unrelated entry: each must be answered with error -32600 and exactly the message "reserved resource read metadata key: <key>", and the recording server must not get that read (matched by its URI).',
  why: "These keys carry the host's routing and account authority; a caller that could set them could read as another thread or connection.",
  typicalMistake: 'Forwarding caller _meta on resource reads without the reserved-key check that tool calls have.',
  fix: 'Reject each reserved key by name before forwarding.',
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const steps = stepsUnder(ctx, 'resource-read/reserved/');
    if (steps.length === 0) return whyMissing('the app-server session ended before the reserved-key reads', ctx.app.problems);
    const rows = steps.map((s) => {
      const key = s.name.slice('resource-read/reserved/'.length);
      const o = s.outcome;
      const expectedMessage = `reserved resource read metadata key: ${key}`;
      const ok = o.kind === 'error' && o.error.code === -32600 && o.error.message === expectedMessage;
      return {
        key,
        ok,
        reached: Boolean(resourceRead(ctx, s.name)),
        expected: { code: -32600, message: expectedMessage },
        actual: o.kind === 'error' ? o.error : o.kind === 'result' ? 'accepted' : o,
      };
    });
    const bad = rows.filter((r) => !r.ok || r.reached);
    if (bad.length === 0) return pass(rows.map((r) => r.key).join(', '));
    return fail(bad.map((r) => `${r.key}: ${r.reached ? 'forwarded to the server' : 'not the documented error'}`).join('; '), {
      expected: bad.map((r) => ({ key: r.key, answer: r.expected, reachedServer: false })),
      actual: bad.map((r) => ({ key: r.key, answer: r.actual, reachedServer: r.reached })),
    });
  },
};

const resourceReadNonObjectMeta: HostCheck = {
  id: 'host/resource-read-non-object-meta',
  rule: 'HOST-3',
  level: 'MUST',
  title: 'mcpServer/resource/read rejects non-object _meta with -32600',
  summary:
    'A caller _meta that is an array, string, number or boolean gets -32600 "Invalid request: invalid type: <kind>, expected a map"; nothing reaches the server.',
  observes:
    'Reads whose _meta is [1, 2], a string, 7 and true: each must be answered with -32600 and a message starting "Invalid request: invalid type: " and ending ", expected a map", and none may reach the recording server.',
  why: 'A non-object _meta is a caller error that must surface, not be forwarded or silently dropped.',
  typicalMistake: 'Replacing an invalid _meta with {} and reading anyway.',
  fix: 'Deserialize _meta as an optional map and let the type error answer the request.',
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const steps = stepsUnder(ctx, 'resource-read/non-object-meta/');
    if (steps.length === 0) return whyMissing('the app-server session ended before the non-object reads', ctx.app.problems);
    const rows = steps.map((s) => {
      const o = s.outcome;
      const message = o.kind === 'error' ? String(o.error.message) : '';
      const ok = o.kind === 'error' && o.error.code === -32600 && message.startsWith('Invalid request: invalid type: ') && message.endsWith(', expected a map');
      return {
        _meta: s.params._meta,
        ok,
        reached: Boolean(resourceRead(ctx, s.name)),
        answer: o.kind === 'error' ? o.error : o.kind === 'result' ? 'accepted' : o,
      };
    });
    const bad = rows.filter((r) => !r.ok || r.reached);
    if (bad.length === 0) return pass();
    return fail(bad.map((r) => `_meta ${json(r._meta)}: ${r.reached ? 'forwarded to the server' : 'not the documented error'}`).join('; '), {
      expected: { code: -32600, message: 'Invalid request: invalid type: <kind>, expected a map', reachedServer: false },
      actual: bad.map(({ _meta, answer, reached }) => ({ _meta, answer, reachedServer: reached })),
    });
  },
};

const resourceReadNullMeta: HostCheck = {
  id: 'host/resource-read-null-meta',
  rule: 'HOST-3',
  level: 'MUST',
  title: 'mcpServer/resource/read accepts null _meta',
  summary: "A null _meta is treated as none: the read reaches the server with only the host's progressToken in _meta.",
  observes: 'A read with _meta null must be answered with a result, reach the recording server, and arrive with no _meta entry other than progressToken.',
  why: 'null is how many clients spell "no metadata"; rejecting it breaks them, inventing entries misleads the server.',
  typicalMistake: 'Rejecting null along with the other non-object values.',
  fix: 'Accept null (and absence) as no caller metadata.',
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const s = step(ctx, 'resource-read/null-meta');
    if (!s) return whyMissing('the app-server session ended before the null-_meta read', ctx.app.problems);
    if (s.outcome.kind !== 'result')
      return fail('the read with _meta null was not answered with a result', {
        expected: 'a result',
        actual: s.outcome.kind === 'error' ? s.outcome.error : s.outcome,
      });
    const record = resourceRead(ctx, s.name);
    if (!record) return fail('the host answered, but the read never reached the server', { expected: 'resources/read at the server', actual: '(none)' });
    const meta = metaOf(record);
    const keys = meta ? Object.keys(meta).filter((k) => k !== 'progressToken') : [];
    if (keys.length === 0) return pass();
    return fail(`_meta gained entries the caller did not send: ${keys.join(', ')}`, { expected: { progressToken: '<token>' }, actual: meta });
  },
};

const resourceReadMetaForwarded: HostCheck = {
  id: 'host/resource-read-meta-forwarded',
  rule: 'HOST-3',
  level: 'MUST',
  title: 'mcpServer/resource/read forwards accepted _meta verbatim, plus progressToken',
  summary: "An accepted caller _meta reaches the server unchanged (values and key order), with the host's progressToken added and nothing else.",
  observes:
    'A read with caller _meta {"x-conformance-unrelated": …, "zeta": …} must be answered with a result and reach the recording server with those entries deep-equal and in the same order, plus a progressToken, and no other key.',
  why: "Servers see exactly what the client sent (RES-1 on the server side relies on it); extra or missing entries change the request's meaning.",
  typicalMistake: 'Dropping caller _meta on reads, or adding thread or sandbox entries.',
  fix: 'Forward the caller map as is and add only progressToken.',
  needs: [],
  transports: BOTH,
  scenario: 'app-server',
  judge(ctx) {
    const s = step(ctx, 'resource-read/object-meta');
    if (!s) return whyMissing('the app-server session ended before the read with _meta', ctx.app.problems);
    if (s.outcome.kind !== 'result')
      return fail('the read with an ordinary _meta was not answered with a result', {
        expected: 'a result',
        actual: s.outcome.kind === 'error' ? s.outcome.error : s.outcome,
      });
    const record = resourceRead(ctx, s.name);
    if (!record) return fail('the host answered, but the read never reached the server', { expected: 'resources/read at the server', actual: '(none)' });
    const got = metaOf(record) ?? {};
    const sent = APP_INPUTS.resourceMeta as Record<string, unknown>;
    const { progressToken, ...rest } = got;
    const problems = [...structuralDiff(sent, rest), ...keyOrderDifferences(sent, rest)];
    if (progressToken === undefined) problems.push('- missing  progressToken');
    if (problems.length === 0) return pass();
    return fail('caller _meta did not arrive verbatim plus progressToken', { expected: { ...sent, progressToken: '<token>' }, actual: got, diff: problems });
  },
};

/** The HOST-3 checks, in report order. */
export const host3Checks: HostCheck[] = [resourceReadReservedKeys, resourceReadNonObjectMeta, resourceReadNullMeta, resourceReadMetaForwarded];
