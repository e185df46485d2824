import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that keep both cores busy on their own (many servers at once) start first; the rest,
 * many of which mostly wait (timeouts, a real Codex thinking), fill the third worker around them.
 * Vitest's own order (longest cached duration, else the largest file) would start the matrix,
 * whose cases live in test/matrix-cases.ts, last, and leave a long tail.
 */
const CPU_BOUND = ['matrix.test.ts', 'matrix-2.test.ts', 'explore.test.ts', 'unusual.test.ts'];

export default class CpuBoundFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = CPU_BOUND.flatMap((name) => sorted.filter((file) => file.moduleId.endsWith(`/test/${name}`)));
    return [...first, ...sorted.filter((file) => !first.includes(file))];
  }
}
