import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { userServerEnvironment } from '../harness/codex-environment.js';
import { trackTempDir } from '../harness/process-registry.js';
import { connect, type StdioTarget } from '../harness/target.js';

/**
 * Why a stdio server cannot start under Codex: Codex gives it a short environment it builds
 * (harness/codex-environment.ts), and a server that needs a variable exported only in its user's
 * shell dies before it answers `initialize`. Then the server is started once more with the
 * suite's full environment, for diagnosis only; if that works, the variables it needs are found by
 * bisection (at most MAX_SEARCH_STARTS more starts). Only names are ever reported, never a value.
 */

/** Starts of the server the bisection may spend, beyond the one with the full environment. */
export const MAX_SEARCH_STARTS = 8;

export interface NeededVariables {
  /** Variables the server needs (each shown necessary by a start with and one without it). */
  needed: string[];
  /** When the budget ran out: the variables among which it needs one or more besides `needed`. */
  unresolved: string[];
  /** Server starts spent. */
  starts: number;
}

/**
 * The variables of `candidates` the server needs, given `works(subset)`: whether it starts with
 * Codex's environment plus that subset (it does with all of them, not with none). Assumes more
 * variables never hurt: finds the shortest working prefix of the candidates by binary search, whose
 * last name is needed, then looks for the rest before it, at most `budget` calls of `works`.
 */
export async function findNeededVariables(
  candidates: string[],
  works: (subset: string[]) => Promise<boolean>,
  budget = MAX_SEARCH_STARTS,
): Promise<NeededVariables> {
  const needed: string[] = [];
  let pool = [...candidates];
  let starts = 0;
  const tryWith = (subset: string[]) => {
    starts++;
    return works(subset);
  };
  // Known: works(needed + pool), and not works(needed).
  while (pool.length > 0) {
    let lo = 0;
    let hi = pool.length - 1;
    while (lo < hi) {
      if (starts >= budget) return { needed, unresolved: pool.slice(0, hi + 1), starts };
      const mid = (lo + hi) >> 1;
      if (await tryWith([...needed, ...pool.slice(0, mid + 1)])) hi = mid;
      else lo = mid + 1;
    }
    needed.push(pool[lo]!);
    pool = pool.slice(0, lo);
    if (pool.length === 0) break;
    if (starts >= budget) return { needed, unresolved: pool, starts };
    if (await tryWith(needed)) break;
  }
  return { needed, unresolved: [], starts };
}

export interface EnvironmentDiagnosis {
  /** Lines that follow the start failure's message (names only). */
  lines: string[];
}

const list = (names: string[], max = 40) => names.slice(0, max).join(', ') + (names.length > max ? `, … (${names.length - max} more)` : '');

/**
 * Diagnoses a stdio target that ended before answering `initialize` under Codex's environment
 * (`target.environment`). `parent` is the suite's own environment, `env` the server's `env` table
 * (kept in every start), `server` the Codex config entry's name when there is one.
 */
export async function diagnoseEnvironment(
  target: StdioTarget,
  options: { parent: NodeJS.ProcessEnv; env: Record<string, string>; startupTimeoutMs: number; server?: string },
): Promise<EnvironmentDiagnosis> {
  const codexEnvironment = target.environment;
  const full = userServerEnvironment(options.parent, options.env);
  const extra = Object.keys(full)
    .filter((name) => !(name in codexEnvironment))
    .sort();
  const passed = `Codex passed it only: ${list(Object.keys(codexEnvironment).sort())}`;
  if (extra.length === 0) return { lines: [passed, 'the suite has no other variable that Codex left out: the environment is not why it fails'] };

  const trapDir = mkdtempSync(join(tmpdir(), 'msc-diagnose-'));
  const forget = trackTempDir(trapDir);
  const startsWith = async (environment: Record<string, string>): Promise<{ ok: true } | { ok: false; why: string }> => {
    try {
      const connection = await connect({ ...target, environment }, trapDir, options.startupTimeoutMs);
      await connection.close();
      return { ok: true };
    } catch (error) {
      return { ok: false, why: (error as Error).message };
    }
  };
  try {
    const withAll = await startsWith(full);
    if (!withAll.ok) {
      return { lines: [passed, `it does not start with the suite's full environment either (${withAll.why}): the environment is not the only problem`] };
    }
    const subset = (names: string[]) => ({ ...codexEnvironment, ...Object.fromEntries(names.map((n) => [n, full[n]!])) });
    const found = await findNeededVariables(extra, async (names) => (await startsWith(subset(names))).ok);
    const names = [...found.needed, ...found.unresolved];
    const needs = found.unresolved.length
      ? `${found.needed.length ? `${found.needed.join(', ')} and ` : ''}one or more of: ${list(found.unresolved)} (${found.starts} more starts could not tell which)`
      : found.needed.join(', ');
    const table = options.server ? `[mcp_servers.${options.server}]` : '[mcp_servers.<name>]';
    return {
      lines: [
        "the server cannot start with the environment Codex gives it; it starts with the suite's full environment",
        passed,
        `it needs: ${needs}`,
        `fix: ${names.map((n) => `--env-var ${n}`).join(' ')}, or in Codex's config.toml under ${table}: env_vars = [${names.map((n) => JSON.stringify(n)).join(', ')}]`,
      ],
    };
  } finally {
    rmSync(trapDir, { recursive: true, force: true });
    forget();
  }
}
