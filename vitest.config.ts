import { defineConfig } from 'vitest/config';
import { useProjectPython } from './test/helpers/project-python.js';

useProjectPython();

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
  },
});
