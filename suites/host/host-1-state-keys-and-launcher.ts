import { LAUNCHER_KEY, SANDBOX_META_KEYS, STATE_KEY, STATE_KEY_DEPRECATED } from '../../harness/codex-wire.js';
import { APP_INPUTS } from '../../harness/host-mode/drive.js';
import { PROBE_ARGS } from '../../harness/host-mode/probe.js';
import { withMethod } from '../../harness/host-mode/recording.js';
import { isObject } from '../../harness/json.js';
import { structuralDiff } from '../engine/judge.js';
import { fail, notApplicable, pass } from '../engine/model.js';
import { BOTH, type HostCheck } from './host-check.js';
import { directCall, hasOwn, json, label, metaOf, modelCalls, whyMissing } from './observed.js';
import { launcherShapeProblem } from './sandbox-state.js';

/**
 * HOST-1 (CONTRACT.md §4, with §2): identical values under both state keys, the launcher only to
 * local stdio servers (and one that answers the sandbox probe), and sandbox keys only on tools/call
 * to servers that opted in.
 */

const stateKeysIdentical: HostCheck = {
  id: 'host/state-keys-identical',
  rule: 'HOST-1',
  level: 'MUST',
  title: 'both state keys, with identical values, on every call to an opted-in server',
  summary:
    'Every model-initiated tools/call to a server that opted in carries the sandbox state under codex/sandbox-state and a byte-identical copy under codex/sandbox-state-meta; any call that carries one key carries both, equal.',
  observes:
    'Every tools/call the recording server got in the exec and app-server runs: each model-initiated call must carry both state keys, and any call that carries either key (the direct app-server calls included) must carry both with identical JSON serializations.',
  why: 'Servers read either key (older ones only the deprecated name); two different policies under the two names would make the sandbox depend on which name a server reads.',
  typicalMistake: 'Building the deprecated copy from an older or partial state, or only sending the current key.',
  fix: 'Serialize the state once and put the same value under both keys on every call.',
  needs: [],
  transports: BOTH,
  scenario: 'exec + app-server',
  judge(ctx) {
    const model = modelCalls(ctx);
    if (model.length === 0) return whyMissing('no model-initiated tools/call reached the recording server', ctx.exec.problems, ctx.app.problems);
    const calls = [...model, ...withMethod(ctx.app.records, 'tools/call').filter((r) => !model.includes(r))];
    const problems: string[] = [];
    let firstBad: { current: unknown; deprecated: unknown } | undefined;
    for (const record of calls) {
      const meta = metaOf(record) ?? {};
      const isModel = model.includes(record);
      const has = [hasOwn(meta, STATE_KEY), hasOwn(meta, STATE_KEY_DEPRECATED)];
      if (!has[0] && !has[1]) {
        if (isModel) problems.push(`${label(record, ctx)}: neither state key`);
        continue;
      }
      if (!has[0] || !has[1]) {
        problems.push(`${label(record, ctx)}: only ${has[0] ? STATE_KEY : STATE_KEY_DEPRECATED}`);
        continue;
      }
      if (json(meta[STATE_KEY]) !== json(meta[STATE_KEY_DEPRECATED])) {
        problems.push(`${label(record, ctx)}: the two values differ`);
        firstBad ??= { current: meta[STATE_KEY], deprecated: meta[STATE_KEY_DEPRECATED] };
      }
    }
    if (problems.length === 0) return pass(`${calls.length} calls checked`);
    return fail(problems.join('; '), {
      expected: firstBad ? { [STATE_KEY_DEPRECATED]: firstBad.current } : `both ${STATE_KEY} and ${STATE_KEY_DEPRECATED}, identical`,
      actual: firstBad ? { [STATE_KEY_DEPRECATED]: firstBad.deprecated } : problems,
      diff: firstBad ? structuralDiff(firstBad.current, firstBad.deprecated) : undefined,
    });
  },
};

const launcherOverStdio: HostCheck = {
  id: 'host/launcher-over-stdio',
  rule: 'HOST-1',
  level: 'MUST',
  title: 'over stdio, every model call carries {"codexExecutable": <absolute path>}',
  summary:
    'A local stdio server that opted in gets codex/sandbox-launcher on every model-initiated call: an object whose only member is codexExecutable, an absolute path.',
  observes:
    'Over stdio, every model-initiated tools/call recorded (two in the exec run, one per app-server turn) must carry codex/sandbox-launcher as an object whose only key is codexExecutable, an absolute path.',
  why: 'A conforming server fails closed without a launcher; a host that does not send one makes every sandboxed tool unusable, and a malformed one is treated as absent.',
  typicalMistake: 'Sending a bare command name ("codex"), a relative path, or the launcher only on the first call.',
  fix: 'Resolve the host\'s own executable to an absolute path once, probe it, and send {"codexExecutable": path} on every call to a stdio server.',
  needs: [],
  transports: ['stdio'],
  scenario: 'exec + app-server',
  judge(ctx) {
    const model = modelCalls(ctx);
    if (model.length === 0) return whyMissing('no model-initiated tools/call reached the recording server', ctx.exec.problems, ctx.app.problems);
    const problems: string[] = [];
    for (const record of model) {
      const problem = launcherShapeProblem((metaOf(record) ?? {})[LAUNCHER_KEY]);
      if (problem) problems.push(`${label(record, ctx)}: ${problem}`);
    }
    return problems.length
      ? fail(problems.join('; '), {
          expected: { [LAUNCHER_KEY]: { codexExecutable: '<absolute path>' } },
          actual: model.map((r) => ({ call: label(r, ctx), [LAUNCHER_KEY]: (metaOf(r) ?? {})[LAUNCHER_KEY] ?? '(absent)' })),
        })
      : pass(`${model.length} calls checked`);
  },
};

const launcherVerified: HostCheck = {
  id: 'host/launcher-verified',
  rule: 'HOST-1',
  level: 'MUST',
  title: 'the launcher is an executable that answers the sandbox probe',
  summary:
    'Every codexExecutable the host sends exists, is an executable regular file, and `<exe> sandbox --sandbox-state-json {} --help` exits 0 (the probe Codex runs before offering its path).',
  observes:
    "Every distinct codexExecutable that arrived on any recorded tools/call (except the caller's stale one passed through on the stale-entries direct call, which host/stale-entries-replaced judges) is probed while the host's run is still in place: it must be an executable regular file, and `<path> sandbox --sandbox-state-json {} --help` must exit 0.",
  why: 'Servers execute exactly this path with the command to sandbox; a path that is not a working Codex sandbox either fails every call or runs something else.',
  typicalMistake: 'Sending argv[0] or a PATH lookup result, or a wrapper script that cannot run `sandbox`.',
  fix: 'Send the real path of the running Codex executable, and only after the probe succeeded; otherwise send no launcher.',
  needs: [],
  transports: ['stdio'],
  scenario: 'exec + app-server',
  judge(ctx) {
    const all = [...withMethod(ctx.exec.records, 'tools/call'), ...withMethod(ctx.app.records, 'tools/call')];
    const paths = new Map<string, string[]>();
    for (const record of all) {
      const launcher = (metaOf(record) ?? {})[LAUNCHER_KEY];
      if (isObject(launcher) && typeof launcher.codexExecutable === 'string') {
        if (record === directCall(ctx, 'tool-call/stale-sandbox-entries') && launcher.codexExecutable === APP_INPUTS.staleMeta[LAUNCHER_KEY].codexExecutable)
          continue; // judged by host/stale-entries-replaced
        paths.set(launcher.codexExecutable, [...(paths.get(launcher.codexExecutable) ?? []), label(record, ctx)]);
      }
    }
    if (paths.size === 0) return notApplicable(`no launcher was sent (host/launcher-over-stdio says why)`);
    const probes = { ...ctx.exec.launcherProbes, ...ctx.app.launcherProbes };
    const results = [...paths.keys()].map((path) => ({ path, probe: probes[path] ?? { ok: false, detail: `${path} was not probed` } }));
    const bad = results.filter((r) => !r.probe.ok);
    if (bad.length === 0) return pass(results.map((r) => r.probe.detail).join('; '));
    return fail(bad.map((r) => `${r.probe.detail} (sent on ${paths.get(r.path)!.join(', ')})`).join('; '), {
      expected: `${PROBE_ARGS.join(' ')} exits 0`,
      actual: bad.map((r) => r.probe.detail),
    });
  },
};

const noLauncherOverHttp: HostCheck = {
  id: 'host/no-launcher-over-http',
  rule: 'HOST-1',
  level: 'MUST',
  title: 'over Streamable HTTP, no call carries a launcher',
  summary:
    'A server reached over Streamable HTTP never receives codex/sandbox-launcher (loopback included), not even a stale one a caller put in _meta: it shares no verified filesystem with the host.',
  observes:
    'Over HTTP, no tools/call the recording server got may carry codex/sandbox-launcher: the model calls of both runs and the app-server direct calls, including the one whose caller _meta held a stale launcher.',
  why: 'Anyone who can reach an HTTP endpoint could name any binary; a launcher over HTTP invites a server to execute an unverified path.',
  typicalMistake: "Building _meta the same way for every transport, or passing a caller's stale launcher through.",
  fix: 'Add the launcher only for local stdio servers, and remove any launcher entry from _meta when none is available for this call.',
  needs: [],
  transports: ['http'],
  scenario: 'exec + app-server',
  judge(ctx) {
    const all = [...withMethod(ctx.exec.records, 'tools/call'), ...withMethod(ctx.app.records, 'tools/call')];
    if (modelCalls(ctx).length === 0) return whyMissing('no model-initiated tools/call reached the recording server', ctx.exec.problems, ctx.app.problems);
    const carrying = all.filter((r) => hasOwn(metaOf(r) ?? {}, LAUNCHER_KEY));
    if (carrying.length === 0) return pass(`${all.length} calls checked`);
    return fail(`a launcher arrived over HTTP on ${carrying.map((r) => label(r, ctx)).join(', ')}`, {
      expected: `no ${LAUNCHER_KEY}`,
      actual: carrying.map((r) => ({ call: label(r, ctx), [LAUNCHER_KEY]: (metaOf(r) ?? {})[LAUNCHER_KEY] })),
    });
  },
};

const noSandboxKeysWithoutOptIn: HostCheck = {
  id: 'host/no-sandbox-keys-without-opt-in',
  rule: 'HOST-1',
  level: 'MUST',
  title: 'a server that did not opt in gets no sandbox keys',
  summary:
    'A server whose initialize result advertises neither state key under capabilities.experimental receives none of the three sandbox keys on tools/call (CONTRACT.md §2).',
  observes:
    "The tools/calls that reached the exec run's second recording server, whose initialize result advertises no sandbox capability, must carry none of codex/sandbox-state, codex/sandbox-state-meta and codex/sandbox-launcher.",
  why: 'Opting in is how a server says it understands the contract; the state and launcher are not for servers that never asked.',
  typicalMistake: "Adding the sandbox keys to every server's calls.",
  fix: "Remember each server's opt-in from its initialize result and add the keys only for servers that opted in.",
  needs: [],
  transports: BOTH,
  scenario: 'exec',
  judge(ctx) {
    const calls = withMethod(ctx.exec.plainRecords, 'tools/call');
    if (calls.length === 0) return whyMissing('no tools/call reached the recording server that did not opt in', ctx.exec.problems);
    const carrying = calls.filter((r) => SANDBOX_META_KEYS.some((k) => hasOwn(metaOf(r) ?? {}, k)));
    if (carrying.length === 0) return pass();
    return fail('sandbox keys reached a server that did not opt in', {
      expected: 'none of ' + SANDBOX_META_KEYS.join(', '),
      actual: carrying.map((r) => SANDBOX_META_KEYS.filter((k) => hasOwn(metaOf(r) ?? {}, k))),
    });
  },
};

const sandboxKeysOnlyOnToolsCall: HostCheck = {
  id: 'host/sandbox-keys-only-on-tools-call',
  rule: 'HOST-1',
  level: 'MUST',
  title: 'tools/list and resources/read carry no sandbox keys',
  summary:
    "The host adds sandbox keys only to tools/call: tools/list and resources/read never carry its own (CONTRACT.md §2). A caller's own entries under those names on an app-server resource read are not the host's: they are forwarded verbatim (HOST-3).",
  observes:
    "Every tools/list any recording server got (both servers of the exec run and of the app-server run) and every resources/read of the app-server run whose caller sent none must carry none of the three sandbox keys in _meta; in the fixed sequence's reads that forge them, any sandbox entry that is not the caller's own value is the host's.",
  why: 'Listing and reading run nothing; sandbox authority on them is noise at best and confuses servers that key sessions on it.',
  typicalMistake: 'A shared "add Codex metadata" step applied to every request.',
  fix: 'Add the sandbox entries where tools/call requests are built, not in a generic request hook.',
  needs: [],
  transports: BOTH,
  scenario: 'exec + app-server',
  judge(ctx) {
    const lists = [ctx.exec.records, ctx.exec.plainRecords, ctx.app.records, ctx.app.plainRecords].flatMap((records) => withMethod(records, 'tools/list'));
    const reads = withMethod(ctx.app.records, 'resources/read');
    if (lists.length === 0) return whyMissing('no tools/list reached the recording server', ctx.exec.problems, ctx.app.problems);
    const carrying = [...lists, ...reads].filter((r) => SANDBOX_META_KEYS.some((k) => hasOwn(metaOf(r) ?? {}, k)));
    if (carrying.length === 0) return pass(`${lists.length} tools/list, ${reads.length} resources/read checked`);
    return fail('sandbox keys on requests that run nothing', {
      expected: 'no sandbox keys',
      actual: carrying.map((r) => ({ method: r.message.method, keys: SANDBOX_META_KEYS.filter((k) => hasOwn(metaOf(r) ?? {}, k)) })),
    });
  },
};

/** The HOST-1 checks, in report order. */
export const host1Checks: HostCheck[] = [
  stateKeysIdentical,
  launcherOverStdio,
  launcherVerified,
  noLauncherOverHttp,
  noSandboxKeysWithoutOptIn,
  sandboxKeysOnlyOnToolsCall,
];
