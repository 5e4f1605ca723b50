import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's folder (the one with package.json), found upwards from this module:
 * the same whether the module runs from infra/ (tsx, cdk) or from a bundle under dist/.
 */
export function projectRoot(from: string = fileURLToPath(import.meta.url)): string {
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'functions'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no project folder (package.json and functions/) above ${from}`);
  }
}
