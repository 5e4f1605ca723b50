import { execFileSync } from 'node:child_process';
import { defineConfig } from 'vitest/config';

// Every Python the tests start (the readers and clients we did not write) is the project's
// own environment, exactly as pinned (test/python-env.sh: checked, and completed if need be):
// first on PATH, and no PYTHONPATH or user site of the caller's can put other versions ahead.
const python = execFileSync('bash', ['test/python-env.sh'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
process.env.PATH = `${python}/bin:${process.env.PATH ?? ''}`;
delete process.env.PYTHONPATH;
delete process.env.PYTHONHOME;
process.env.PYTHONNOUSERSITE = '1';

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
