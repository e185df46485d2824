import { realpathSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LAUNCHER_KEY, SANDBOX_META_KEYS, STATE_KEY, STATE_KEY_DEPRECATED, type Transport } from '../../harness/codex-wire.js';
import {
  APP_INPUTS,
  POLICY_CHANGES,
  observeAppServer,
  observeExec,
  resourceMarker,
  toolMarker,
  type AppObservation,
  type AppStep,
  type ExecObservation,
  type HostTarget,
} from '../../harness/host-mode/drive.js';
import { PROBE_ARGS } from '../../harness/host-mode/probe.js';
import { withMethod, type RecordedMessage } from '../../harness/host-mode/recording.js';
import type { TranscriptEntry } from '../../harness/transcript.js';
import { isObject } from '../../harness/json.js';
import { keyOrderDifferences, structuralDiff } from '../engine/judge.js';
import {
  couldNotRun,
  fail,
  notApplicable,
  pass,
  type CheckDef,
  type HostDriveContext,
  type HostDriven,
  type HostScenario,
  type Verdict,
} from '../engine/model.js';
import { runSuite, type RunPlan, type RunReport } from '../engine/runner.js';

/**
 * Host mode: the mirror image of the suite. A recording MCP server watches a host (real Codex, or
 * a build or fake with the same CLI) and these checks judge what it sent against CONTRACT.md §2
 * and §4 (HOST-1..HOST-4). The host is driven (and the launchers it sends are probed) by
 * harness/host-mode/drive.ts; this file only judges what was observed.
 */

/** Everything observed on one transport. */
export interface HostObservations {
  transport: Transport;
  exec: ExecObservation;
  app: AppObservation;
  /** How many times the app-server session changed the policy between turns. */
  policyChanges: number;
}

type JudgeContext = HostObservations;

/** The host runs a check judges. */
type HostRun = 'exec' | 'app-server' | 'exec + app-server';

interface HostCheck extends CheckDef {
  transports: Transport[];
  scenario: HostRun;
  judge(ctx: JudgeContext): Verdict | Promise<Verdict>;
}

// ------------------------------------------------------------------------------------------
// What the recording server saw, picked apart
// ------------------------------------------------------------------------------------------

const metaOf = (record: RecordedMessage | undefined): Record<string, unknown> | undefined => {
  const params = record?.message.params;
  return isObject(params) && isObject(params._meta) ? params._meta : undefined;
};
const argumentsNote = (record: RecordedMessage): unknown => {
  const params = record.message.params;
  return isObject(params) && isObject(params.arguments) ? params.arguments.note : undefined;
};
const uriOf = (record: RecordedMessage): unknown => (isObject(record.message.params) ? record.message.params.uri : undefined);

/** The model-initiated tools/calls of the exec run (every call there came from the model). */
const execCalls = (ctx: HostObservations) => withMethod(ctx.exec.records, 'tools/call');
/** The model-initiated tools/calls of the app-server turns, by the call ids the model issued. */
function turnCalls(ctx: HostObservations): { turn: AppObservation['turns'][number]; record?: RecordedMessage }[] {
  const calls = withMethod(ctx.app.records, 'tools/call');
  return ctx.app.turns.map((turn) => ({ turn, record: calls.find((r) => turn.callIds.includes(String(metaOf(r)?.callId))) }));
}
const directCall = (ctx: HostObservations, name: string) => withMethod(ctx.app.records, 'tools/call').find((r) => argumentsNote(r) === toolMarker(name));
const resourceRead = (ctx: HostObservations, name: string) => withMethod(ctx.app.records, 'resources/read').find((r) => uriOf(r) === resourceMarker(name));
const step = (ctx: HostObservations, name: string): AppStep | undefined => ctx.app.steps.find((s) => s.name === name);
const stepsUnder = (ctx: HostObservations, prefix: string): AppStep[] => ctx.app.steps.filter((s) => s.name.startsWith(prefix));
const modelCalls = (ctx: HostObservations): RecordedMessage[] => [...execCalls(ctx), ...turnCalls(ctx).flatMap((t) => (t.record ? [t.record] : []))];

const label = (record: RecordedMessage, ctx: HostObservations): string => {
  const meta = metaOf(record);
  const note = argumentsNote(record);
  const where = ctx.exec.records.includes(record) ? 'exec' : 'app-server';
  return typeof note === 'string' && note.startsWith('conformance:')
    ? `${where} direct call ${note.slice('conformance:'.length)}`
    : `${where} model call ${String(meta?.callId ?? `#${String(record.message.id)}`)}`;
};

/** A judge of the direct call with verbatim caller _meta, given its _meta as the recording server got it (several HOST-4 checks). */
const onVerbatimCall =
  (judge: (ctx: HostObservations, meta: Record<string, unknown>) => Verdict) =>
  (ctx: HostObservations): Verdict => {
    const record = directCall(ctx, 'tool-call/verbatim');
    if (!record) return whyMissing('the direct call did not reach the recording server', [json(step(ctx, 'tool-call/verbatim')?.outcome)], ctx.app.problems);
    return judge(ctx, metaOf(record) ?? {});
  };
function whyMissing(what: string, ...problems: string[][]): Verdict {
  const all = problems.flat();
  return couldNotRun(`${what}${all.length ? `: ${all.join('; ')}` : ' (the host never made it; its transcript has what was seen)'}`);
}

const json = (value: unknown) => JSON.stringify(value);
const hasOwn = (object: Record<string, unknown>, key: string) => Object.prototype.hasOwnProperty.call(object, key);

/** What kind of sandbox a state's permission profile describes, for the policy checks. */
export function profileKind(state: unknown, workspace: string): string {
  if (!isObject(state) || !isObject(state.permissionProfile)) return 'no permissionProfile';
  const profile = state.permissionProfile;
  if (profile.type === 'disabled') return 'danger-full-access';
  if (profile.type !== 'managed') return `type ${json(profile.type)}`;
  const fileSystem = isObject(profile.file_system) ? profile.file_system : {};
  const entries = Array.isArray(fileSystem.entries) ? fileSystem.entries.filter(isObject) : [];
  const writes = entries.filter((e) => e.access === 'write');
  if (writes.length === 0) return 'read-only';
  const roots = new Set([workspace, realpath(workspace)]);
  const writesWorkspace = writes.some((e) => {
    const path = isObject(e.path) ? e.path : {};
    if (path.type === 'path' && typeof path.path === 'string') return roots.has(path.path);
    const kind = isObject(path.value) ? path.value.kind : undefined;
    return path.type === 'special' && (kind === 'current_working_directory' || kind === 'project_roots');
  });
  return writesWorkspace ? 'workspace-write' : 'writes outside the workspace only';
}

function realpath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Why a codex/sandbox-launcher value is not {"codexExecutable": <absolute path>}, or undefined. */
function launcherShapeProblem(launcher: unknown): string | undefined {
  if (launcher === undefined) return `no ${LAUNCHER_KEY}`;
  if (!isObject(launcher) || json(Object.keys(launcher)) !== json(['codexExecutable'])) return `${json(launcher)} is not {"codexExecutable": ...}`;
  if (typeof launcher.codexExecutable !== 'string' || !isAbsolute(launcher.codexExecutable))
    return `codexExecutable ${json(launcher.codexExecutable)} is not an absolute path`;
  return undefined;
}

const workspaceUris = (workspace: string) => new Set([pathToFileURL(workspace).href, pathToFileURL(realpath(workspace)).href]);

// ------------------------------------------------------------------------------------------
// The checks
// ------------------------------------------------------------------------------------------

const BOTH: Transport[] = ['stdio', 'http'];

export const hostChecks: HostCheck[] = [
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
    id: 'host/sandbox-keys-only-on-tools-call',
    rule: 'HOST-1',
    level: 'MUST',
    title: 'tools/list and resources/read carry no sandbox keys',
    summary: 'The host adds sandbox keys only to tools/call: tools/list and resources/read never carry them (CONTRACT.md §2).',
    observes:
      'Every tools/list any recording server got (both servers of the exec run and of the app-server run) and every resources/read of the app-server run must carry none of the three sandbox keys in _meta.',
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
  },
  {
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
  },
  {
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
  },
  {
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
          Object.keys(pick(now)).length
            ? 'replaced by the current entries'
            : 'removed, as on a call without them (host/direct-call-sandbox-entries judges that)',
        );
      return fail(problems.join('; '), { expected: pick(now), actual: pick(got), diff: structuralDiff(pick(now), pick(got)) });
    },
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
        const ok =
          o.kind === 'error' && o.error.code === -32600 && message.startsWith('Invalid request: invalid type: ') && message.endsWith(', expected a map');
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
  },
  {
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
  },
  {
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
  },
];

/** The checks as `list`/`explain` know them (one entry per id). */
export const hostCheckDefs: CheckDef[] = hostChecks.map(({ transports: _t, scenario: _s, judge: _j, ...def }) => def);

/** The transports a host check runs over, for `list`. */
export const hostTransportsOf = (checkId: string): Transport[] => hostChecks.find((c) => c.id === checkId)?.transports ?? [];

// ------------------------------------------------------------------------------------------
// Running host mode: host scenarios on the runner
// ------------------------------------------------------------------------------------------

const emptyExec = (transport: Transport): ExecObservation => ({
  transport,
  workspace: '',
  httpRequests: [],
  records: [],
  plainRecords: [],
  stdout: '',
  stderr: '',
  modelRequests: [],
  problems: [],
  launcherProbes: {},
  durationMs: 0,
});
const emptyApp = (transport: Transport): AppObservation => ({
  transport,
  workspace: '',
  steps: [],
  turns: [],
  records: [],
  plainRecords: [],
  stderr: '',
  problems: [],
  launcherProbes: {},
  durationMs: 0,
});

/**
 * What one host run showed the recording servers, as transcript entries: a note naming the run,
 * each request the host sent, then what went wrong while driving it and its stderr's tail.
 */
function transcriptOf(o: ExecObservation | AppObservation, kind: 'exec' | 'app-server', started: number): TranscriptEntry[] {
  const records = [...o.records, ...o.plainRecords].sort((a, b) => a.t - b.t);
  if (records.length === 0 && o.problems.length === 0 && !o.stderr.trim()) return [];
  const first = records[0]?.t ?? started;
  // Notes come after the requests: at the last one's time.
  const end = records.at(-1)?.t ?? started;
  const stderr = o.stderr.trim().split('\n').slice(-5).join('\n');
  return [
    { t: first - started, dir: 'note', text: `${kind}: what the recording servers got from this run` },
    ...records.map((r): TranscriptEntry => ({ t: r.t - started, dir: 'host->server', message: r.message })),
    ...o.problems.map((text): TranscriptEntry => ({ t: end - started, dir: 'note', text: `${kind}: ${text}` })),
    ...(stderr ? [{ t: end - started, dir: 'note' as const, text: `${kind}: the host's stderr ends with:\n${stderr}` }] : []),
  ];
}

/**
 * The host scenario of one transport: the exec run and the app-server session side by side (each
 * only when a selected check judges it, so --only 'host/resource-*' runs no exec), then every
 * selected check judged on what the recording servers saw.
 */
async function driveAndJudge(checks: HostCheck[], ctx: HostDriveContext): Promise<HostDriven> {
  const started = Date.now();
  const { host, transport, signal } = ctx;
  const policyChanges = host.policyChanges ?? POLICY_CHANGES;
  const options = { ...host, transport, signal, policyChanges };
  const selected = checks.filter((c) => ctx.selected(c.id));
  const needs = (scenario: 'exec' | 'app-server') => selected.some((c) => c.scenario.includes(scenario));
  const observed: HostObservations = { transport, exec: emptyExec(transport), app: emptyApp(transport), policyChanges };
  await Promise.all([
    needs('exec') ? observeExec(options).then((o) => void (observed.exec = o)) : undefined,
    needs('app-server') ? observeAppServer(options).then((o) => void (observed.app = o)) : undefined,
  ]);
  const transcript = [...transcriptOf(observed.exec, 'exec', started), ...transcriptOf(observed.app, 'app-server', started)];
  // The host failed to start when a run of it failed and not one request reached a recording server.
  const hostFailed = observed.exec.hostFailed ?? observed.app.hostFailed;
  if (hostFailed && observed.exec.records.length === 0 && observed.app.records.length === 0) {
    const problems = [...new Set([...observed.exec.problems, ...observed.app.problems])];
    return {
      verdicts: new Map(),
      transcript,
      startFailure: { message: `${host.host.display} never reached the recording server`, stderrTail: problems.join('\n') },
    };
  }
  const verdicts = new Map<string, Verdict>();
  for (const check of selected) {
    try {
      verdicts.set(check.id, await check.judge(observed));
    } catch (error) {
      verdicts.set(check.id, { status: 'error', message: (error as Error).stack ?? String(error) });
    }
  }
  return { verdicts, transcript };
}

/** Host mode's scenarios, one per transport (a check is on the transports it is for). */
export const hostScenarios: HostScenario[] = BOTH.map((transport) => {
  const checks = hostChecks.filter((c) => c.transports.includes(transport));
  return {
    id: 'host',
    title: `the host, with its MCP servers over ${transport}`,
    checks,
    needs: [],
    transports: [transport],
    drive: (ctx) => driveAndJudge(checks, ctx),
  };
});

export interface HostPlan extends HostTarget {
  /** Transports checked at once (each runs its exec and app-server hosts side by side). */
  jobs: number;
  select?: (checkId: string) => boolean;
  onProgress?: RunPlan['onProgress'];
}

/** Slack beyond one host run's budget for a scenario (its runs go side by side): starting, probing, stopping. */
const HOST_SCENARIO_SLACK_MS = 30_000;

/** Runs the host scenarios on the runner, as server mode runs its own: a RunReport for cli/results.ts. */
export function runHostChecks(plan: HostPlan): Promise<RunReport> {
  const { jobs, select = () => true, onProgress, ...host } = plan;
  return runSuite(
    {
      targets: {},
      host,
      // Server-mode budgets, unused by host scenarios (a host run's own budget is timeoutMs).
      options: { assumeOptIn: false, startupTimeoutMs: host.timeoutMs, callTimeoutMs: host.timeoutMs },
      jobs,
      select,
      // Both budgets follow from one host run's (--timeout): a scenario's runs go side by side,
      // and the run lasts at most one scenario per transport, one after another.
      scenarioTimeoutMs: host.timeoutMs + HOST_SCENARIO_SLACK_MS,
      runTimeoutMs: host.transports.length * (host.timeoutMs + HOST_SCENARIO_SLACK_MS) + HOST_SCENARIO_SLACK_MS,
      onProgress,
    },
    // Only the plan's transports: a transport left out is not checked (rather than "not applicable").
    hostScenarios.filter((scenario) => scenario.transports.every((t) => host.transports.includes(t))),
  );
}
