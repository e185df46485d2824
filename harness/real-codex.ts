import { accessSync, constants, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, relative, isAbsolute } from 'node:path';

/**
 * The real Codex CLI for the enforcement tier, found the way the official npm shim
 * (`@openai/codex/bin/codex.js`) finds it: through the platform package that `@openai/codex`
 * pulls in as an optional dependency, never through PATH.
 */

const TARGET_TRIPLES: Record<string, string | undefined> = {
  'linux-x64': 'x86_64-unknown-linux-musl',
  'linux-arm64': 'aarch64-unknown-linux-musl',
  'android-x64': 'x86_64-unknown-linux-musl',
  'android-arm64': 'aarch64-unknown-linux-musl',
  'darwin-x64': 'x86_64-apple-darwin',
  'darwin-arm64': 'aarch64-apple-darwin',
};
const PLATFORM_PACKAGES: Record<string, string> = {
  'x86_64-unknown-linux-musl': '@openai/codex-linux-x64',
  'aarch64-unknown-linux-musl': '@openai/codex-linux-arm64',
  'x86_64-apple-darwin': '@openai/codex-darwin-x64',
  'aarch64-apple-darwin': '@openai/codex-darwin-arm64',
};

export interface RealCodex {
  /** Absolute path of the native `codex` executable. */
  path: string;
  /** Version of the `@openai/codex` package it came with. */
  version: string;
}

/**
 * The native codex binary of the installed `@openai/codex` package, or a reason why there is
 * none (package not installed, unsupported platform, platform package missing). `codex sandbox`
 * only enforces a Linux sandbox here, so only Linux triples are looked up by the tests.
 */
export function locateRealCodex(): RealCodex | { missing: string } {
  const require = createRequire(import.meta.url);
  let codexPackageJson: string;
  try {
    codexPackageJson = require.resolve('@openai/codex/package.json');
  } catch {
    return { missing: 'the @openai/codex package is not installed (it is a devDependency: npm ci)' };
  }
  const triple = TARGET_TRIPLES[`${process.platform}-${process.arch}`];
  const platformPackage = triple ? PLATFORM_PACKAGES[triple] : undefined;
  if (!triple || !platformPackage) return { missing: `no native Codex build for ${process.platform}-${process.arch}` };
  let vendorRoot: string;
  try {
    const fromCodex = createRequire(codexPackageJson);
    vendorRoot = join(dirname(fromCodex.resolve(`${platformPackage}/package.json`)), 'vendor');
  } catch {
    return { missing: `${platformPackage} (the native build @openai/codex installs for this platform) is not installed` };
  }
  const path = join(vendorRoot, triple, 'bin', 'codex');
  if (!existsSync(path)) return { missing: `${path} does not exist` };
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return { missing: `${path} is not executable` };
  }
  const version = (JSON.parse(readFileSync(codexPackageJson, 'utf8')) as { version?: string }).version ?? 'unknown';
  return { path, version };
}

const inside = (child: string, parent: string): boolean => {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

const realpathOr = (path: string): string => {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
};

/**
 * A writable directory that is neither /tmp nor the temp dir: /var/tmp, else the home
 * directory. Codex treats the temp dir specially (workspace-write can grant it; CODEX_HOME
 * there draws a warning), so both the private CODEX_HOME and the "outside" target of the
 * enforcement probe live elsewhere. Undefined when there is no such directory.
 */
export function scratchBaseOutsideTmp(): string | undefined {
  const temps = [tmpdir(), '/tmp'].map(realpathOr);
  for (const candidate of ['/var/tmp', homedir()]) {
    try {
      if (!statSync(candidate).isDirectory()) continue;
      accessSync(candidate, constants.W_OK);
    } catch {
      continue;
    }
    const real = realpathOr(candidate);
    if (temps.some((t) => inside(real, t))) continue;
    return real;
  }
  return undefined;
}

let codexHome: string | undefined;

/**
 * A private, existing CODEX_HOME for every real codex this process starts, so that the user's
 * own ~/.codex (config, a broken config.toml) cannot change or break the run. One per process
 * (Codex keeps per-process helper dirs under it, with locks); removed when the process exits.
 * `fallbackParent` is used when there is no place outside the temp dir (Codex then only warns).
 */
export function privateCodexHome(fallbackParent: string): string {
  if (codexHome && existsSync(codexHome)) return codexHome;
  const base = scratchBaseOutsideTmp();
  const home = mkdtempSync(join(base ?? fallbackParent, 'msc-codex-home-'));
  codexHome = home;
  process.once('exit', () => rmSync(home, { recursive: true, force: true }));
  return home;
}

/** Removes the private CODEX_HOME now (tests call it; the CLI relies on the exit hook). */
export function removePrivateCodexHome(): void {
  if (codexHome) rmSync(codexHome, { recursive: true, force: true });
  codexHome = undefined;
}

const liveOutsideDirs = new Set<string>();
let outsideHookInstalled = false;

/**
 * A fresh directory outside the workspace and outside /tmp (under `scratchBaseOutsideTmp()`, else
 * `fallbackParent`) for the enforcement probe to try writing into. Removed by `remove()`, or when
 * the process exits (an interrupted run included).
 */
export function makeOutsideDir(fallbackParent: string): { path: string; remove: () => void } {
  const path = mkdtempSync(join(scratchBaseOutsideTmp() ?? fallbackParent, 'msc-outside-'));
  liveOutsideDirs.add(path);
  if (!outsideHookInstalled) {
    outsideHookInstalled = true;
    process.once('exit', () => {
      for (const dir of liveOutsideDirs) rmSync(dir, { recursive: true, force: true });
    });
  }
  return {
    path,
    remove: () => {
      rmSync(path, { recursive: true, force: true });
      liveOutsideDirs.delete(path);
    },
  };
}
