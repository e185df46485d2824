import type { ProgressEvent } from '../suites/engine/runner.js';

/**
 * The live progress line on a terminal: `[done/total] elapsed  running: <scenarios in flight>`,
 * redrawn in place on stderr and erased before the report is written. Nothing at all when stdout
 * or stderr is not a terminal, or under CI.
 */
export interface Progress {
  onProgress?: (event: ProgressEvent) => void;
  /** Erases the line (call before writing the report). */
  stop(): void;
}

export interface ProgressOptions {
  stream?: NodeJS.WriteStream;
  /** Whether stdout is a terminal (the report goes there). */
  stdoutIsTTY?: boolean;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  /** Redraw period for the elapsed time, ms. */
  tickMs?: number;
}

/** CI is set (to anything but "", "0" or "false"). */
export function inCI(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env.CI;
  return value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';
}

export function progressLine(done: number, total: number, elapsedMs: number, running: string[], width: number): string {
  const head = `[${done}/${total}] ${(elapsedMs / 1000).toFixed(1)} s`;
  const tail = running.length ? `  running: ${running.join(', ')}` : '';
  const line = head + tail;
  const max = Math.max(20, width - 1);
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function createProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  const stdoutIsTTY = options.stdoutIsTTY ?? Boolean(process.stdout.isTTY);
  const env = options.env ?? process.env;
  const now = options.now ?? Date.now;
  if (!stream.isTTY || !stdoutIsTTY || inCI(env)) return { stop: () => undefined };

  const started = now();
  let done = 0;
  let total = 0;
  // In flight, in start order; a scenario run over both transports shows once per transport.
  const running: string[] = [];
  let shown = false;
  const draw = () => {
    const width = stream.columns || 80;
    stream.write(`\r\x1b[2K${progressLine(done, total, now() - started, running, width)}`);
    shown = true;
  };
  const timer = setInterval(draw, options.tickMs ?? 250);
  timer.unref();
  const label = (scenario: string, transport: string) => (transport === 'stdio' ? scenario : `${scenario} (${transport})`);
  return {
    onProgress: (event) => {
      if (event.kind === 'start') total = event.total;
      else if (event.kind === 'scenario-start') running.push(label(event.scenario, event.transport));
      else if (event.kind === 'scenario-note') {
        // A long scenario says how far it got (exploration: sequences run): shown beside its name.
        const at = running.findIndex((r) => r === label(event.scenario, event.transport) || r.startsWith(`${label(event.scenario, event.transport)} [`));
        if (at >= 0) running[at] = `${label(event.scenario, event.transport)} [${event.note}]`;
      } else {
        done = event.done;
        total = event.total;
        const at = running.findIndex((r) => r === label(event.scenario, event.transport) || r.startsWith(`${label(event.scenario, event.transport)} [`));
        if (at >= 0) running.splice(at, 1);
      }
      draw();
    },
    stop: () => {
      clearInterval(timer);
      if (shown) stream.write('\r\x1b[2K');
      shown = false;
    },
  };
}
