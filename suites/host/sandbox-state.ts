import { realpathSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LAUNCHER_KEY } from '../../harness/codex-wire.js';
import { isObject } from '../../harness/json.js';
import { json } from './observed.js';

/** What the sandbox entries a host sent describe: a state's policy, a launcher's shape, a workspace's URIs. */

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
export function launcherShapeProblem(launcher: unknown): string | undefined {
  if (launcher === undefined) return `no ${LAUNCHER_KEY}`;
  if (!isObject(launcher) || json(Object.keys(launcher)) !== json(['codexExecutable'])) return `${json(launcher)} is not {"codexExecutable": ...}`;
  if (typeof launcher.codexExecutable !== 'string' || !isAbsolute(launcher.codexExecutable))
    return `codexExecutable ${json(launcher.codexExecutable)} is not an absolute path`;
  return undefined;
}

export const workspaceUris = (workspace: string) => new Set([pathToFileURL(workspace).href, pathToFileURL(realpath(workspace)).href]);
