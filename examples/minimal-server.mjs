#!/usr/bin/env node
// A minimal MCP server that runs commands for OpenAI Codex inside Codex's sandbox: the file to
// copy. One `exec` tool, stdio only. Rule IDs (CAP-1, FWD-1 ...) are those of CONTRACT.md in
// mcp-sandbox-conformance; check it with `npx mcp-sandbox-conformance ./minimal-server.mjs`.
//
// The whole contract, in short: opt in; for every call, take the sandbox state and the launcher
// from that call's `_meta` (never from the arguments, never from an earlier call), run
// `<codexExecutable> sandbox --sandbox-state-json <state> -- <argv>`, and when either is missing or
// malformed, refuse and run nothing.
//
// Needs: npm install @modelcontextprotocol/sdk zod

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const STATE_KEY = 'codex/sandbox-state';
const DEPRECATED_STATE_KEY = 'codex/sandbox-state-meta'; // older Codex builds send only this one
const LAUNCHER_KEY = 'codex/sandbox-launcher';
const TIMEOUT_MS = 60_000;

const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);

// The state of this call, or a reason to refuse. The current key wins when both are present
// (ALIAS-2); the two are never merged. Anything but an object counts as no state (LAUNCH-3).
function readState(meta) {
  const key = STATE_KEY in meta ? STATE_KEY : DEPRECATED_STATE_KEY;
  if (!(key in meta)) return { refuse: 'no sandbox state in _meta' };
  if (!isObject(meta[key])) return { refuse: `the sandbox state in _meta (${key}) is not a JSON object` };
  return { state: meta[key] };
}

// The launcher of this call, or a reason to refuse. Only an absolute path to an executable file
// will do: a relative path or a bare name would be resolved against our cwd or PATH, i.e. would run
// something Codex never checked (LAUNCH-1, LAUNCH-3).
function readLauncher(meta) {
  const launcher = meta[LAUNCHER_KEY];
  if (launcher === undefined) return { refuse: 'no sandbox launcher in _meta' };
  const exe = isObject(launcher) ? launcher.codexExecutable : undefined;
  if (typeof exe !== 'string' || !path.isAbsolute(exe)) return { refuse: 'the sandbox launcher has no absolute codexExecutable' };
  try {
    if (!fs.statSync(exe).isFile()) return { refuse: `the sandbox launcher ${exe} is not a file` };
    fs.accessSync(exe, fs.constants.X_OK);
  } catch {
    return { refuse: `the sandbox launcher ${exe} does not exist or is not executable` };
  }
  return { exe };
}

// Run one process to completion, without a shell. A spawn failure (say, the launcher vanished)
// comes back as `error`; it is reported, never retried another way (LAUNCH-3).
function run(file, args, signal) {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], signal, timeout: TIMEOUT_MS });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (err) => resolve({ output, error: err.message }));
    child.on('close', (code, sig) => resolve({ output, code, sig }));
  });
}

const text = (message, isError) => ({ content: [{ type: 'text', text: message }], isError });

// Opting in (CAP-1, CAP-2): without this key Codex sends no sandbox metadata at all.
const server = new McpServer({ name: 'minimal-sandbox-server', version: '0.1.0' }, { capabilities: { experimental: { [STATE_KEY]: {} } } });

server.registerTool(
  'exec',
  {
    description: 'Run a command (argv, no shell) inside the Codex sandbox. Refuses when no sandbox is available.',
    // looseObject: extra argument properties are ignored rather than rejected. Nothing in the
    // arguments is authority, whatever it claims to be (AUTH-1); only `command` is read.
    inputSchema: z.looseObject({ command: z.array(z.string()).min(1).describe('The command and its arguments.') }),
  },
  async (args, extra) => {
    // Everything comes from this call's _meta, fresh: no cache, no "current sandbox" kept between
    // calls, so each call runs under exactly its own authority (AUTH-2, AUTH-3).
    const meta = isObject(extra._meta) ? extra._meta : {};
    const launcher = readLauncher(meta);
    const state = readState(meta);
    // Fail closed (LAUNCH-2, LAUNCH-3): no fallback to running the command directly.
    const refusal = launcher.refuse ?? state.refuse;
    if (refusal) return text(`Refused: ${refusal}, so there is no sandbox to run in. Nothing was run.`, true);

    // The state goes on as received: the parsed value itself, serialized once, so unknown fields,
    // key order, nulls and empty containers survive (FWD-2, FWD-3). Never a typed copy.
    const launch = ['sandbox', '--sandbox-state-json', JSON.stringify(state.state), '--', ...args.command]; // FWD-1
    const r = await run(launcher.exe, launch, extra.signal);
    if (r.error !== undefined) return text(`${r.output}Failed to run the sandbox launcher: ${r.error}. Nothing else was tried.`, true);
    // Report the exit status: a failing command must not look like a success.
    const status = r.code ?? `none (killed by ${r.sig})`;
    return text(`${r.output}${r.output && !r.output.endsWith('\n') ? '\n' : ''}exit code: ${status}`, r.code !== 0);
  },
);

await server.connect(new StdioServerTransport());
