/**
 * Loaded with `node --import` (Node strips the types): records every package a process
 * loads, and writes their names, one a line, to the file LOADED_PACKAGES_FILE names when
 * the process exits. Tests use it to see what a command loaded, e.g. that `--help` loaded
 * no Kafka client.
 *
 * A package counts when a module of it is resolved (by `import` or `require`) from
 * node_modules, or when a module resolved elsewhere holds its code: bin/offsetlake.js
 * bundles the Kafka client into dist/, and esbuild marks each bundled module with a
 * `// node_modules/NAME/…` line.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

const packageOf = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//;
const packages = new Set<string>();
const bundles = new Set<string>();

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    const match = packageOf.exec(resolved.url.slice(resolved.url.lastIndexOf('/node_modules/')));
    if (match) packages.add(match[1]!);
    else if (resolved.url.startsWith('file:') && resolved.url.endsWith('.js')) bundles.add(fileURLToPath(resolved.url));
    return resolved;
  },
});

process.on('exit', () => {
  for (const file of bundles) {
    for (const match of readFileSync(file, 'utf8').matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)) packages.add(match[1]!);
  }
  writeFileSync(process.env.LOADED_PACKAGES_FILE!, [...packages].sort().join('\n'));
});
