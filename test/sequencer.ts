import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { WHOLE_PROOF } from './tier.js';

/**
 * The files that keep both cores busy on their own (many servers at once) start first; the rest,
 * many of which mostly wait (timeouts, a real Codex thinking), fill the third worker around them.
 * Vitest's own order (longest cached duration, else the largest file) would start the matrix,
 * whose cases live in test/matrix-cases.ts, last, and leave a long tail.
 */
const CPU_BOUND = ['matrix.test.ts', 'matrix-2.test.ts', 'explore.test.ts', 'unusual.test.ts'];
/** In the gate (test/tier.ts), the files that take longest, mostly waiting on CLI runs, start first. */
const LONGEST_IN_GATE = ['cli.test.ts', 'unit/runner.test.ts', 'baseline.test.ts', 'cli-errors.test.ts', 'host-mode.test.ts'];

export default class CpuBoundFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (WHOLE_PROOF ? CPU_BOUND : LONGEST_IN_GATE).flatMap((name) => sorted.filter((file) => file.moduleId.endsWith(`/test/${name}`)));
    return [...first, ...sorted.filter((file) => !first.includes(file))];
  }
}
