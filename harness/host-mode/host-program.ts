import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { locateRealCodex } from '../real-codex.js';

/**
 * The host under test: real Codex, or any program with the same CLI subset (`exec
 * --skip-git-repo-check <prompt>` and `app-server`, both reading `$CODEX_HOME/config.toml`).
 * A `.js/.mjs/.cjs` file runs with this node (the broken-host fixture is one).
 */
export interface HostProgram {
  command: string;
  args: string[];
  /** As the user named it, for reports. */
  display: string;
}

/** No host to run: `given` is the path asked for (undefined: none was, and none is installed); the message says why. */
export class HostNotFound extends Error {
  constructor(
    readonly given: string | undefined,
    reason: string,
  ) {
    super(reason);
  }
}

/**
 * `--codex PATH`, or when not given the real Codex of the `@openai/codex` devDependency (the
 * platform package's native binary, found by harness/real-codex.ts; that path, not the npm shim,
 * is also what Codex sends as `codexExecutable`).
 */
export function hostProgram(given: string | undefined): HostProgram {
  if (given === undefined) {
    const bundled = locateRealCodex();
    if ('missing' in bundled) throw new HostNotFound(undefined, bundled.missing);
    return { command: bundled.path, args: [], display: bundled.path };
  }
  const file = resolve(given);
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch {
    throw new HostNotFound(given, 'no such file');
  }
  if (!isFile) throw new HostNotFound(given, 'not a file');
  if (/\.(m|c)?js$/.test(file)) return { command: process.execPath, args: [file], display: given };
  try {
    accessSync(file, constants.X_OK);
  } catch {
    throw new HostNotFound(given, 'not executable');
  }
  return { command: file, args: [], display: given };
}
