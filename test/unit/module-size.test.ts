/**
 * A module of src/ is one concept and small enough to read whole: at most 600 lines, as
 * hyparquet's modules (35–480 lines, one Parquet concept each) are. The numbered catalog
 * migrations are the one exception: they are append-only, one list read in order.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAX_LINES = 600;
const exceptions = new Set(['src/catalog/migrations.ts']);

function modules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return modules(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Lines as an editor counts them: a final newline ends the last line, it does not start another. */
export function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

describe('module size', () => {
  it('counts lines as wc -l does for a file that ends in a newline, and one more without', () => {
    expect(lineCount('')).toBe(0);
    expect(lineCount('a\n')).toBe(1);
    expect(lineCount('a\nb\n')).toBe(2);
    expect(lineCount('a\nb')).toBe(2);
  });

  it(`no module of src/ is over ${MAX_LINES} lines, the numbered migrations excepted`, () => {
    const over = modules(join(root, 'src'))
      .map((path) => ({ module: relative(root, path), lines: lineCount(readFileSync(path, 'utf8')) }))
      .filter(({ module, lines }) => lines > MAX_LINES && !exceptions.has(module))
      .map(({ module, lines }) => `${module}: ${lines} lines`);
    expect(over, `split these by what each part does (docs/development.md, "Layout")`).toEqual([]);
  });

  it('each exception still exists (a removed one is taken off the list)', () => {
    for (const module of exceptions) expect(statSync(join(root, module)).isFile(), module).toBe(true);
  });
});
