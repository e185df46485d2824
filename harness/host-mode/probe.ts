import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { LAUNCHER_KEY } from '../codex-wire.js';
import type { RecordedMessage } from './recording.js';

/**
 * The launcher probe: what Codex runs on its own executable before it offers the path to
 * servers. Host mode runs it on every `codexExecutable` a host sent, while that host's run is
 * still in place (a host may point at a file under its CODEX_HOME or a per-process temp dir).
 */
export interface ProbeResult {
  ok: boolean;
  detail: string;
}

export const PROBE_ARGS = ['sandbox', '--sandbox-state-json', '{}', '--help'];

export function probeLauncher(path: string, timeoutMs = 20_000): Promise<ProbeResult> {
  if (!isAbsolute(path)) return Promise.resolve({ ok: false, detail: `${JSON.stringify(path)} is not an absolute path` });
  try {
    if (!statSync(path).isFile()) return Promise.resolve({ ok: false, detail: `${path} is not a regular file` });
    accessSync(path, constants.X_OK);
  } catch {
    return Promise.resolve({ ok: false, detail: `${path} does not exist or is not executable` });
  }
  return new Promise((resolve) => {
    const child = spawn(path, PROBE_ARGS, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve({ ok: false, detail: `${path} could not run: ${error.message}` });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const command = `${path} ${PROBE_ARGS.join(' ')}`;
      if (code === 0) resolve({ ok: true, detail: `${command} exited 0` });
      else
        resolve({
          ok: false,
          detail: `${command} exited with ${signal ?? `code ${code}`}${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-2).join(' | ')}` : ''}`,
        });
    });
  });
}

/** Probes every distinct `codexExecutable` that arrived in a tools/call `_meta`. */
export async function probeLaunchers(records: RecordedMessage[]): Promise<Record<string, ProbeResult>> {
  const paths = new Set<string>();
  for (const record of records) {
    const params = record.message.params as { _meta?: Record<string, unknown> } | undefined;
    const launcher = params?._meta?.[LAUNCHER_KEY] as { codexExecutable?: unknown } | undefined;
    if (record.message.method === 'tools/call' && typeof launcher?.codexExecutable === 'string') paths.add(launcher.codexExecutable);
  }
  const entries = await Promise.all([...paths].map(async (path) => [path, await probeLauncher(path)] as const));
  return Object.fromEntries(entries);
}
