import { resourceMarker, toolMarker, type AppObservation, type AppStep } from '../../harness/host-mode/drive.js';
import { withMethod, type RecordedMessage } from '../../harness/host-mode/recording.js';
import { isObject } from '../../harness/json.js';
import { couldNotRun, type Verdict } from '../engine/model.js';
import type { HostObservations } from './host-check.js';

/** What the recording servers saw, picked apart for the host checks' judges. */

export const metaOf = (record: RecordedMessage | undefined): Record<string, unknown> | undefined => {
  const params = record?.message.params;
  return isObject(params) && isObject(params._meta) ? params._meta : undefined;
};
export const argumentsNote = (record: RecordedMessage): unknown => {
  const params = record.message.params;
  return isObject(params) && isObject(params.arguments) ? params.arguments.note : undefined;
};
const uriOf = (record: RecordedMessage): unknown => (isObject(record.message.params) ? record.message.params.uri : undefined);

/** The model-initiated tools/calls of the exec run (every call there came from the model). */
export const execCalls = (ctx: HostObservations) => withMethod(ctx.exec.records, 'tools/call');
/** The model-initiated tools/calls of the app-server turns, by the call ids the model issued. */
export function turnCalls(ctx: HostObservations): { turn: AppObservation['turns'][number]; record?: RecordedMessage }[] {
  const calls = withMethod(ctx.app.records, 'tools/call');
  return ctx.app.turns.map((turn) => ({ turn, record: calls.find((r) => turn.callIds.includes(String(metaOf(r)?.callId))) }));
}
export const directCall = (ctx: HostObservations, name: string) => withMethod(ctx.app.records, 'tools/call').find((r) => argumentsNote(r) === toolMarker(name));
export const resourceRead = (ctx: HostObservations, name: string) =>
  withMethod(ctx.app.records, 'resources/read').find((r) => uriOf(r) === resourceMarker(name));
export const step = (ctx: HostObservations, name: string): AppStep | undefined => ctx.app.steps.find((s) => s.name === name);
export const stepsUnder = (ctx: HostObservations, prefix: string): AppStep[] => ctx.app.steps.filter((s) => s.name.startsWith(prefix));
export const modelCalls = (ctx: HostObservations): RecordedMessage[] => [...execCalls(ctx), ...turnCalls(ctx).flatMap((t) => (t.record ? [t.record] : []))];

export const label = (record: RecordedMessage, ctx: HostObservations): string => {
  const meta = metaOf(record);
  const note = argumentsNote(record);
  const where = ctx.exec.records.includes(record) ? 'exec' : 'app-server';
  return typeof note === 'string' && note.startsWith('conformance:')
    ? `${where} direct call ${note.slice('conformance:'.length)}`
    : `${where} model call ${String(meta?.callId ?? `#${String(record.message.id)}`)}`;
};

/** A judge of the direct call with verbatim caller _meta, given its _meta as the recording server got it (several HOST-4 checks). */
export const onVerbatimCall =
  (judge: (ctx: HostObservations, meta: Record<string, unknown>) => Verdict) =>
  (ctx: HostObservations): Verdict => {
    const record = directCall(ctx, 'tool-call/verbatim');
    if (!record) return whyMissing('the direct call did not reach the recording server', [json(step(ctx, 'tool-call/verbatim')?.outcome)], ctx.app.problems);
    return judge(ctx, metaOf(record) ?? {});
  };
export function whyMissing(what: string, ...problems: string[][]): Verdict {
  const all = problems.flat();
  return couldNotRun(`${what}${all.length ? `: ${all.join('; ')}` : ' (the host never made it; its transcript has what was seen)'}`);
}

export const json = (value: unknown) => JSON.stringify(value);
export const hasOwn = (object: Record<string, unknown>, key: string) => Object.prototype.hasOwnProperty.call(object, key);
