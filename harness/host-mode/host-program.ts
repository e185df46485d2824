import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { packageRoot } from '../paths.js';

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

export class HostNotFound extends Error {}

/**
 * The real Codex binary of the `@openai/codex` devDependency: the platform package's vendored
 * executable (`@openai/codex-linux-x64/vendor/<triple>/bin/codex`), which is also the path Codex
 * sends as `codexExecutable` (the npm `codex` shim only starts it). Undefined when not installed.
 */
export function bundledCodexPath(): string | undefined {
  const triples: Record<string, [string, string]> = {
    'linux-x64': ['@openai/codex-linux-x64', 'x86_64-unknown-linux-musl'],
    'linux-arm64': ['@openai/codex-linux-arm64', 'aarch64-unknown-linux-musl'],
    'darwin-x64': ['@openai/codex-darwin-x64', 'x86_64-apple-darwin'],
    'darwin-arm64': ['@openai/codex-darwin-arm64', 'aarch64-apple-darwin'],
  };
  const platform = triples[`${process.platform}-${process.arch}`];
  if (!platform) return undefined;
  try {
    const fromRoot = createRequire(join(packageRoot(), 'package.json'));
    const codexPackage = fromRoot.resolve('@openai/codex/package.json');
    const platformPackage = createRequire(codexPackage).resolve(`${platform[0]}/package.json`);
    const binary = join(dirname(platformPackage), 'vendor', platform[1], 'bin', 'codex');
    return existsSync(binary) ? binary : undefined;
  } catch {
    return undefined;
  }
}

/** `--codex PATH` (or the bundled Codex when not given). */
export function hostProgram(given: string | undefined): HostProgram {
  if (given === undefined) {
    const bundled = bundledCodexPath();
    if (!bundled) throw new HostNotFound('no Codex to check: give --codex PATH (the @openai/codex devDependency is not installed)');
    return { command: bundled, args: [], display: bundled };
  }
  const file = resolve(given);
  let isFile = false;
  try {
    isFile = statSync(file).isFile();
  } catch {
    throw new HostNotFound(`--codex ${given}: no such file`);
  }
  if (!isFile) throw new HostNotFound(`--codex ${given}: not a file`);
  if (/\.(m|c)?js$/.test(file)) return { command: process.execPath, args: [file], display: given };
  try {
    accessSync(file, constants.X_OK);
  } catch {
    throw new HostNotFound(`--codex ${given}: not executable`);
  }
  return { command: file, args: [], display: given };
}
