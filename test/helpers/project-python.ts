/**
 * Every Python the tests and benchmarks start (the readers and clients we did not write) is
 * the project's own environment, exactly as pinned (test/python-env.sh: checked, and
 * completed if need be): put first on PATH, and no PYTHONPATH or user site of the caller's
 * can put other versions ahead. vitest's config calls it for the tests; a benchmark that
 * audits with those readers (load-run, chaos) calls it before it starts them.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

export function useProjectPython(env: NodeJS.ProcessEnv = process.env): string {
  const python = execFileSync('bash', [join(root, 'test/python-env.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], cwd: root }).trim();
  env.PATH = `${python}/bin:${env.PATH ?? ''}`;
  delete env.PYTHONPATH;
  delete env.PYTHONHOME;
  env.PYTHONNOUSERSITE = '1';
  return python;
}

/**
 * Daft's Python, in an environment of its own (test/integration/requirements-daft.txt: daft
 * needs an older pyarrow than the readers' environment pins), made and checked as the readers' is.
 */
export function daftPython(): string {
  return `${execFileSync('bash', [join(root, 'test/python-env.sh'), 'test/integration/requirements-daft.txt'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], cwd: root }).trim()}/bin/python`;
}
