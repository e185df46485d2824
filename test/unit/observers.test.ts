import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { ScenarioObservers } from '../../harness/observers.js';

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
