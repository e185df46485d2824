import type { SandboxEntries } from '../../harness/codex-wire.js';
import { isRefusal, type RawOutcome } from '../../harness/codex-session.js';
import { argumentsShape, readSessionId, toolArguments, type ExecAdapter, type SessionAdapter, type ToolAccount } from '../../harness/exec-adapter.js';
import type { CallOptions, IsolatedContext } from './model.js';

/**
 * The suites' side of the one seam that builds a tool call's arguments (harness/exec-adapter.ts
 * toolArguments): which optional values a call sets, as a model would choose them. Every check,
 * the resident, exploration and the soak build their calls through execProbe (server-calls.ts) and
 * the session calls below, so a choice made here reaches them all.
 */

/** Optional properties of a tool's schema set on a call, by name (a working directory, a timeout, a boolean, an enum…). */
export type OptionalValues = Readonly<Record<string, unknown>>;

/** No optional property set: what every call sends today (the template's own properties only). */
export const NO_OPTIONAL_VALUES: OptionalValues = Object.freeze({});

/** The choices of optional values a tool's calls are sent with: one, the empty one, today. */
export function optionalChoices(adapter: ExecAdapter): OptionalValues[] {
  void adapter;
  return [NO_OPTIONAL_VALUES];
}

/** A listed tool's account with the argument shapes its calls are sent, where they say more than its template (the report header). */
export function withShapes(account: ToolAccount): ToolAccount {
  const adapter = account.adapter;
  if (!adapter) return account;
  const shapes = optionalChoices(adapter).map((optional) => argumentsShape(adapter, optional));
  const said = shapes.some((shape) => JSON.stringify(shape) !== JSON.stringify(adapter.arguments));
  return said ? { ...account, shapes } : account;
}

/** Opens a session through the session adapter's open tool (it runs the session shell); the id read from the result, when there is one. */
export async function openSession(
  ctx: Pick<IsolatedContext, 'callTool' | 'observers'>,
  adapter: SessionAdapter,
  sandbox: SandboxEntries,
  options: CallOptions,
): Promise<{ outcome: RawOutcome; id?: string }> {
  const built = toolArguments(adapter.open, { argv: [ctx.observers.sessionShellPath] });
  const outcome = await ctx.callTool(adapter.open.tool, built.arguments, sandbox, options);
  const id = outcome.kind === 'result' && !isRefusal(outcome) ? readSessionId(outcome.result, adapter.sessionId) : undefined;
  return { outcome, ...(id !== undefined ? { id } : {}) };
}

/** Sends the probe (with a fresh nonce) to session `id` through the session adapter's send tool. */
export async function sendToSession(
  ctx: Pick<IsolatedContext, 'callTool' | 'observers'>,
  adapter: SessionAdapter,
  id: string,
  sandbox: SandboxEntries,
  options: Omit<CallOptions, 'nonce'>,
): Promise<{ nonce: string; outcome: RawOutcome }> {
  const nonce = ctx.observers.newNonce();
  const built = toolArguments(adapter.send, { argv: ctx.observers.probeCommand(nonce) }, { vars: { sessionId: id } });
  // A send template that is a bare string gets the command line itself.
  const args = typeof built.arguments === 'string' ? built.line : built.arguments;
  return { nonce, outcome: await ctx.callTool(adapter.send.tool, args, sandbox, { ...options, nonce }) };
}
