import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

/**
 * What Codex CLI 0.171.0 puts on the wire, reproduced key for key (and in the same key order)
 * from shared/reference/codex-wire.json. Change this file when Codex changes.
 */
export const CODEX_VERSION = '0.171.0';
export const PROTOCOL_VERSION = '2025-06-18';

export const STATE_KEY = 'codex/sandbox-state';
export const STATE_KEY_DEPRECATED = 'codex/sandbox-state-meta';
export const LAUNCHER_KEY = 'codex/sandbox-launcher';
export const SANDBOX_META_KEYS = [STATE_KEY, STATE_KEY_DEPRECATED, LAUNCHER_KEY] as const;

export type Transport = 'stdio' | 'http';

/** Codex's initialize params: over HTTP it advertises no `experimental` at all. */
export function initializeParams(transport: Transport): Record<string, unknown> {
  const capabilities: Record<string, unknown> =
    transport === 'stdio'
      ? { experimental: { 'codex/auth-change': {} }, elicitation: { form: {}, url: {} } }
      : { elicitation: { form: {}, url: {} } };
  return {
    protocolVersion: PROTOCOL_VERSION,
    capabilities,
    clientInfo: { name: 'codex-mcp-client', title: 'Codex', version: CODEX_VERSION },
  };
}

/** A UUIDv7-shaped id, like Codex's thread and turn ids. */
function uuidV7(): string {
  const hex = Date.now().toString(16).padStart(12, '0');
  const rest = randomUUID().replace(/-/g, '');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${rest.slice(13, 16)}-${rest.slice(16, 20)}-${rest.slice(20, 32)}`;
}

/** One Codex thread: the ids its calls share. */
export interface CodexThread {
  threadId: string;
  turnId: string;
  turnStartedAt: number;
  sandboxMode: string;
}

export function newThread(sandboxMode = 'workspace-write'): CodexThread {
  return { threadId: uuidV7(), turnId: uuidV7(), turnStartedAt: Date.now(), sandboxMode };
}

/** The host-owned `_meta` entries Codex puts on every model-initiated tools/call, in its order. */
export function hostOwnedMeta(thread: CodexThread, call: number): Record<string, unknown> {
  return {
    callId: `call_${call}`,
    'x-codex-turn-metadata': {
      session_id: thread.threadId,
      thread_id: thread.threadId,
      model: 'gpt-5.1',
      turn_id: thread.turnId,
      turn_started_at_unix_ms: thread.turnStartedAt,
      thread_source: 'user',
      turn_trigger: 'exec',
      sandbox: thread.sandboxMode === 'danger-full-access' ? 'none' : 'seccomp',
      sandbox_mode: thread.sandboxMode,
      auto_review_enabled: false,
      node_repl_auto_review_required: false,
      node_repl_disabled: false,
      codex_version: CODEX_VERSION,
    },
    threadId: thread.threadId,
    sessionId: thread.threadId,
    windowId: `${thread.threadId}:0`,
    itemId: `fc_${call}`,
  };
}

/** Which sandbox entries a call carries; scenarios vary these to probe one rule at a time. */
export interface SandboxEntries {
  /** Value under `codex/sandbox-state`; `undefined` leaves the key out. */
  state?: unknown;
  /** Value under `codex/sandbox-state-meta`; `undefined` leaves the key out. */
  stateDeprecated?: unknown;
  /** Value under `codex/sandbox-launcher`; `undefined` leaves the key out. */
  launcher?: unknown;
}

/** The entries Codex sends for a state: both keys with identical values, launcher only over stdio. */
export function codexSandboxEntries(
  state: unknown,
  transport: Transport,
  codexExecutable?: string,
): SandboxEntries {
  return {
    state,
    stateDeprecated: state,
    launcher: transport === 'stdio' && codexExecutable ? { codexExecutable } : undefined,
  };
}

/** A full tools/call `_meta` as Codex builds it: host-owned keys, sandbox keys, progressToken. */
export function toolCallMeta(
  thread: CodexThread,
  call: number,
  sandbox: SandboxEntries,
  progressToken: number,
): Record<string, unknown> {
  const meta = hostOwnedMeta(thread, call);
  if (sandbox.state !== undefined) meta[STATE_KEY] = sandbox.state;
  if (sandbox.stateDeprecated !== undefined) meta[STATE_KEY_DEPRECATED] = sandbox.stateDeprecated;
  if (sandbox.launcher !== undefined) meta[LAUNCHER_KEY] = sandbox.launcher;
  meta.progressToken = progressToken;
  return meta;
}

/** Unknown fields the suite plants at several depths; a faithful forwarder keeps every one. */
export const CANARY = {
  topLevel: 'conformanceCanary',
  inProfile: 'conformanceProfileCanary',
  inEntry: 'conformanceEntryCanary',
  fidelity: 'conformanceFidelity',
} as const;

/** Nests `leaf` `depth` objects deep. */
const nest = (depth: number, leaf: unknown): unknown => (depth === 0 ? leaf : { level: nest(depth - 1, leaf) });

/**
 * What a typed re-serialization tends to lose and a faithful forwarder keeps (FWD-3): the order
 * of non-index keys, non-ASCII text, empty containers, nulls, deep nesting. Only values every
 * JSON parser round-trips exactly: no index-like keys, no 1.0, no \u escapes, no big integers.
 */
export const FIDELITY_CANARY = {
  zeta: 'keys in this order: zeta, alpha, mid',
  alpha: 'non-ASCII: café, naïve, 日本語, emoji 🧪',
  mid: { emptyObject: {}, emptyArray: [], nothing: null, listOfNulls: [null, null] },
  deep: nest(12, { bottom: true }),
};

/**
 * A workspace-write state that the real `codex sandbox` accepts (CONTRACT.md §5), pointed at the
 * scenario's workspace, plus canary fields. `codexLinuxSandboxExe` is null: a stale helper path
 * would break the real sandbox.
 */
export function defaultState(workspaceDir: string): Record<string, unknown> {
  return {
    permissionProfile: {
      type: 'managed',
      file_system: {
        type: 'restricted',
        entries: [
          { path: { type: 'special', value: { kind: 'root' } }, access: 'read' },
          {
            path: { type: 'special', value: { kind: 'current_working_directory' } },
            access: 'write',
            [CANARY.inEntry]: { since: 'future-codex', flags: [true, null] },
          },
        ],
      },
      network: 'restricted',
      [CANARY.inProfile]: 'kept-as-is',
    },
    sandboxCwd: pathToFileURL(workspaceDir).href,
    codexLinuxSandboxExe: null,
    useLegacyLandlock: false,
    useMxc: false,
    [CANARY.topLevel]: { note: 'unknown to every server', list: [{ depth: 3, items: [1, 'two', {}] }, []] },
    [CANARY.fidelity]: FIDELITY_CANARY,
  };
}
