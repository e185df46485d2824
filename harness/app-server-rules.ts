/**
 * Codex's app-server rules for caller `_meta` on `mcpServer/resource/read` (CONTRACT.md §4
 * HOST-3), reproduced so the fake host answers a resource read with caller metadata exactly as
 * Codex would, before anything reaches the server.
 */

export const CODEX_APPS_SERVER = 'codex_apps';
const ALWAYS_RESERVED = ['threadId', 'x-codex-turn-metadata', 'codex/connectionLease'];
const CODEX_APPS_RESERVED = ['connector_id', 'link_id'];

export type MetaCheck = { ok: true; forwarded: Record<string, unknown> | undefined } | { ok: false; code: number; message: string };

/** How serde names an unexpected JSON value in "invalid type" errors. */
function serdeKind(value: unknown): string {
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  if (typeof value === 'boolean') return `boolean \`${value}\``;
  if (typeof value === 'number') return Number.isInteger(value) ? `integer \`${value}\`` : `floating point \`${value}\``;
  if (Array.isArray(value)) return 'sequence';
  return 'unit value';
}

/**
 * Validates caller `_meta` for a resource read on `server`. Returns the `_meta` Codex would
 * forward (the caller's, verbatim, plus a progress token; a caller `progressToken` keeps its
 * position and gets Codex's value, as the spread below does), or the JSON-RPC error it answers.
 */
export function checkResourceReadMeta(meta: unknown, server: string, progressToken: number): MetaCheck {
  if (meta === undefined || meta === null) return { ok: true, forwarded: { progressToken } };
  if (typeof meta !== 'object' || Array.isArray(meta)) {
    return { ok: false, code: -32600, message: `Invalid request: invalid type: ${serdeKind(meta)}, expected a map` };
  }
  const record = meta as Record<string, unknown>;
  const reserved = server === CODEX_APPS_SERVER ? [...ALWAYS_RESERVED, ...CODEX_APPS_RESERVED] : ALWAYS_RESERVED;
  for (const key of Object.keys(record)) {
    if (reserved.includes(key)) return { ok: false, code: -32600, message: `reserved resource read metadata key: ${key}` };
    if (server === CODEX_APPS_SERVER && key === '_codex_apps') {
      const nested = record[key];
      if (typeof nested === 'object' && nested !== null && 'resource_uri' in nested) {
        return { ok: false, code: -32600, message: 'reserved resource read metadata key: _codex_apps.resource_uri' };
      }
    }
  }
  return { ok: true, forwarded: { ...record, progressToken } };
}
