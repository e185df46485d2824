import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isObject } from './json.js';

/**
 * What Codex CLI 0.171.0 puts on the wire, reproduced key for key (and in the same key order)
 * from the capture vendored as test/fixtures/codex-wire-0.171.0.json. Change this file when Codex changes.
 */
export const CODEX_VERSION = '0.171.0';
export const PROTOCOL_VERSION = '2025-06-18';

export const STATE_KEY = 'codex/sandbox-state';
export const STATE_KEY_DEPRECATED = 'codex/sandbox-state-meta';
export const LAUNCHER_KEY = 'codex/sandbox-launcher';

/**
 * The older sandbox-state protocol: Codex sent a server that advertised `codex/sandbox-state`
 * its state once, in a `codex/sandbox-state/update` request after initialize, and the server kept
 * it for every later call. Codex 0.171.0 never sends that request (its binary holds no such
 * method name); it sends the state with each tools/call, in `_meta`. Servers of that time
 * advertise the capability with a version (@openai/codex-shell-tool-mcp 0.97.0:
 * `{"version": "1.0.0"}`), where the current contract's value is an opaque object, `{}` in Codex's
 * own examples. Returns the advertised value as JSON when it has that shape, else undefined.
 */
export const OLDER_STATE_UPDATE_METHOD = 'codex/sandbox-state/update';
export function olderSandboxStateProtocol(initializeResult: Record<string, unknown>): string | undefined {
  const experimental = isObject(initializeResult.capabilities) ? initializeResult.capabilities.experimental : undefined;
  if (!isObject(experimental)) return undefined;
  for (const key of [STATE_KEY, STATE_KEY_DEPRECATED]) {
    const value = experimental[key];
    if (isObject(value) && typeof value.version === 'string') return `"${key}": ${JSON.stringify(value)}`;
  }
  return undefined;
}
export const SANDBOX_META_KEYS = [STATE_KEY, STATE_KEY_DEPRECATED, LAUNCHER_KEY] as const;

export type Transport = 'stdio' | 'http';

/**
 * Why a connection is opened. Codex opens `model` connections to call tools, and short-lived
 * `inventory` ones (app-server `mcpServerStatus/list`) that only list tools, resources and
 * resource templates; a server sees both from one Codex.
 */
export type ConnectionPurpose = 'model' | 'inventory';

/**
 * Codex's initialize params. `experimental` (`codex/auth-change`) is only advertised on a model
 * connection over stdio: never over HTTP, never on an inventory connection.
 */
export function initializeParams(transport: Transport, purpose: ConnectionPurpose = 'model'): Record<string, unknown> {
  const capabilities: Record<string, unknown> =
    transport === 'stdio' && purpose === 'model'
      ? { experimental: { 'codex/auth-change': {} }, elicitation: { form: {}, url: {} } }
      : { elicitation: { form: {}, url: {} } };
  return {
    protocolVersion: PROTOCOL_VERSION,
    capabilities,
    clientInfo: { name: 'codex-mcp-client', title: 'Codex', version: CODEX_VERSION },
  };
}

/** What an inventory connection lists after tools/list; Codex sends the two at once, in no fixed order. */
export const INVENTORY_LISTS = ['resources/list', 'resources/templates/list'] as const;

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

/**
 * The host-owned `_meta` entries Codex puts on every model-initiated tools/call, in its order.
 * The turn metadata names the sandbox mode of `sandboxMode` (that of the state the call carries)
 * or else the thread's.
 */
export function hostOwnedMeta(thread: CodexThread, call: number, sandboxMode = thread.sandboxMode): Record<string, unknown> {
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
      sandbox: sandboxMode === 'danger-full-access' ? 'none' : 'seccomp',
      sandbox_mode: sandboxMode,
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
export function codexSandboxEntries(state: unknown, transport: Transport, codexExecutable?: string): SandboxEntries {
  return {
    state,
    stateDeprecated: state,
    launcher: transport === 'stdio' && codexExecutable ? { codexExecutable } : undefined,
  };
}

/** A full tools/call `_meta` as Codex builds it: host-owned keys, sandbox keys, progressToken. */
export function toolCallMeta(thread: CodexThread, call: number, sandbox: SandboxEntries, progressToken: number): Record<string, unknown> {
  const meta = hostOwnedMeta(thread, call, sandboxModeOfState(sandbox.state));
  if (sandbox.state !== undefined) meta[STATE_KEY] = sandbox.state;
  if (sandbox.stateDeprecated !== undefined) meta[STATE_KEY_DEPRECATED] = sandbox.stateDeprecated;
  if (sandbox.launcher !== undefined) meta[LAUNCHER_KEY] = sandbox.launcher;
  meta.progressToken = progressToken;
  return meta;
}

/**
 * `_meta` of a resources/read as Codex forwards it: the caller's entries verbatim and in order,
 * then Codex's progressToken; a caller `progressToken` is overwritten where it stands (assigning
 * an existing key keeps its place). Always present, even without caller entries.
 */
export function resourceReadMeta(callerMeta: Record<string, unknown> | undefined, progressToken: number): Record<string, unknown> {
  return { ...callerMeta, progressToken };
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
 * The sandbox modes Codex's config offers (`sandbox_mode`), plus workspace-write with
 * `[sandbox_workspace_write] network_access = true`: one state shape each.
 */
export const STATE_PROFILES = ['read-only', 'workspace-write', 'workspace-write-network', 'danger-full-access'] as const;
export type StateProfile = (typeof STATE_PROFILES)[number];

/** The `sandbox_mode` of a profile, as x-codex-turn-metadata names it. */
export const sandboxModeOf = (profile: StateProfile): string => (profile === 'workspace-write-network' ? 'workspace-write' : profile);

/** Workspace subdirectories Codex 0.171.0 keeps read-only under workspace-write, in its order. */
export const PROTECTED_WORKSPACE_NAMES = ['.git', '.agents', '.codex', '.aws'] as const;

export interface StateOptions {
  /**
   * `codexLinuxSandboxExe`. Codex normally sends a per-process helper under `$CODEX_HOME/tmp/arg0/`
   * that lives as long as that Codex (its own executable's path only when CODEX_HOME is under a
   * temp dir). The real `codex sandbox` runs it as its Linux helper (`--sandbox-policy-cwd …`), so
   * when one enforces the state it must lead to a real Codex: a stale path breaks the sandbox.
   */
  linuxSandboxExe: string;
  /** Plant the canary fields (default true); false gives exactly what Codex sends. */
  canaries?: boolean;
}

const special = (kind: string) => ({ type: 'special', value: { kind } });
const atPath = (path: string) => ({ type: 'path', path });

/**
 * The state Codex 0.171.0 sends for `profile` on `workspaceDir`, field for field and in its order
 * (test/fixtures/codex-wire-0.171.0.json, test/differential.test.ts), with the canary fields added on
 * top unless `canaries: false`: at the end of the top level, of permissionProfile, and of the
 * workspace's write entry (the root read entry for read-only).
 */
export function codexState(profile: StateProfile, workspaceDir: string, options: StateOptions): Record<string, unknown> {
  let permissionProfile: Record<string, unknown> = { type: 'disabled' };
  if (profile !== 'danger-full-access') {
    const entries: Record<string, unknown>[] = [{ path: special('root'), access: 'read' }];
    if (profile !== 'read-only') {
      entries.push(
        { path: atPath(workspaceDir), access: 'write' },
        { path: special('slash_tmp'), access: 'write' },
        { path: special('tmpdir'), access: 'write' },
        ...PROTECTED_WORKSPACE_NAMES.map((name) => ({ path: atPath(join(workspaceDir, name)), access: 'read', missing_path_behavior: 'skip' })),
      );
    }
    permissionProfile = {
      type: 'managed',
      file_system: { type: 'restricted', entries },
      network: profile === 'workspace-write-network' ? 'enabled' : 'restricted',
    };
  }
  const state: Record<string, unknown> = {
    permissionProfile,
    codexLinuxSandboxExe: options.linuxSandboxExe,
    sandboxCwd: pathToFileURL(workspaceDir).href,
    useLegacyLandlock: false,
    useMxc: false,
  };
  if (options.canaries === false) return state;
  const entries = (permissionProfile.file_system as { entries?: Record<string, unknown>[] } | undefined)?.entries;
  const entry = entries?.[1] ?? entries?.[0];
  if (entry) entry[CANARY.inEntry] = { since: 'future-codex', flags: [true, null] };
  permissionProfile[CANARY.inProfile] = 'kept-as-is';
  state[CANARY.topLevel] = { note: 'unknown to every server', list: [{ depth: 3, items: [1, 'two', {}] }, []] };
  state[CANARY.fidelity] = FIDELITY_CANARY;
  return state;
}

/**
 * The sandbox mode a state stands for, when it has the shape of one of Codex's (undefined for
 * anything else: the suite also sends malformed states on purpose).
 */
export function sandboxModeOfState(state: unknown): string | undefined {
  const profile = isObject(state) && isObject(state.permissionProfile) ? state.permissionProfile : undefined;
  if (profile?.type === 'disabled') return 'danger-full-access';
  const entries = profile?.type === 'managed' && isObject(profile.file_system) ? profile.file_system.entries : undefined;
  if (!Array.isArray(entries)) return undefined;
  return entries.some((e) => isObject(e) && e.access === 'write') ? 'workspace-write' : 'read-only';
}
