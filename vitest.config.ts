import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';
import { useProjectPython } from './test/helpers/project-python.js';

useProjectPython();

/**
 * The files that take longest (a minute or more alone: stacks of their own, Spark, Trino,
 * the arm64 bundles under QEMU), longest first. They start before every other file, so that
 * the run does not end on one of them with the other worker idle: a fresh clone has no
 * timings of earlier runs, and vitest then starts the largest files first, which put the
 * 90 s chaos file last (docs/measurements.md, "The test suite and CI").
 */
const longestFirst = [
  'test/integration/iceberg-engines.test.ts',
  'test/integration/chaos.test.ts',
  'test/integration/chaos-cluster.test.ts',
  'test/integration/lambda-bundles.test.ts',
  'test/integration/trino.test.ts',
  'test/integration/iceberg.test.ts',
  'test/integration/runner.test.ts',
  'test/integration/codecs.test.ts',
];

class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification): number => {
      const at = longestFirst.findIndex((path) => file.moduleId.endsWith(`/${path}`));
      return at === -1 ? longestFirst.length : at;
    };
    // Array.prototype.sort is stable: the other files keep vitest's order
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Brings up the real local stack (idempotent) once, before any test file runs.
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: LongestFirstSequencer },
  },
});
