import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { ScenarioObservers, unrecordedProbeLines } from '../../harness/observers.js';

test('a probe record created but not written (yet, or ever) is no record: no reader takes it for a run outside any launch', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'msc-observers-test-'));
  try {
    const observers = await ScenarioObservers.create(dir);
    const record = (name: string, text: string) => writeFileSync(join(observers.markerDir, name), text);
    record('probe.0123456789ab.100-0.ran', '');
    record('probe.0123456789ab.101-0.ran', 'launch=\npid=101\nppid=1\ncwd=/w\ninvoked=/w/task\nargc=3\n');
    const { probeRuns } = await observers.read();
    expect(probeRuns).toEqual([{ nonce: '0123456789ab', launchId: '', cwd: '/w', pid: '101', invoked: '/w/task' }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the launcher keeps the head of what a launch printed, passing it all through with its exit status; the reader skips its fifos', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'msc-observers-test-'));
  try {
    const observers = await ScenarioObservers.create(dir);
    const script = 'echo out; echo "SyntaxError: invalid syntax" >&2; head -c 9000 /dev/zero | tr "\\0" x; exit 3';
    const launch = () =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = execFile(observers.launcherPath, ['sandbox', '--sandbox-state-json', '{}', '--', '/bin/sh', '-c', script], (error, stdout) =>
          resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout }),
        );
        child.stdin?.end();
      });
    // Outside a control's call the launcher keeps nothing, and says so.
    const unkept = await launch();
    expect([unkept.code, unkept.stdout.length]).toEqual([3, 'out\n'.length + 9000]);
    const [first] = (await observers.read()).launches;
    expect(await observers.printed(first!.id)).toEqual({ stdout: '', stderr: '', kept: false });
    const done = await observers.keepingOutput(launch);
    expect(done.code).toBe(3);
    expect(done.stdout.length).toBe('out\n'.length + 9000);
    expect(readdirSync(join(observers.logDir)).filter((name) => name === 'keep-output')).toEqual([]);
    const launches = (await observers.read()).launches.filter((l) => l.id !== first!.id);
    expect(launches).toHaveLength(1);
    const printed = await observers.printed(launches[0]!.id);
    expect(printed.stderr).toBe('SyntaxError: invalid syntax\n');
    expect(printed.stdout.startsWith('out\nxxx')).toBe(true);
    // Bounded: the launcher keeps at most 4 KB a stream, the suite reads at most 2 KB.
    expect(printed.stdout.length).toBeLessThanOrEqual(2048);
    expect(await observers.printed('../../etc/passwd')).toEqual({ stdout: '', stderr: '', kept: false });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a probe's stdout line is a record only when it says it left none, and only for the launch whose output holds it", () => {
  const stdout = 'ok 0123456789ab launch-1-2-a unrecorded\nok 0123456789ab launch-1-2-a recorded\nok 0123456789ab launch-9-9-a unrecorded\nnoise\n';
  expect(unrecordedProbeLines(stdout, 'launch-1-2-a')).toEqual([
    { nonce: '0123456789ab', launchId: 'launch-1-2-a', cwd: '', pid: '', invoked: '', via: 'stdout' },
  ]);
});
