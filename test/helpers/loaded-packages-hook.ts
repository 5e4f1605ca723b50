/**
 * Loaded with `node --import` (Node strips the types): records every package a process
 * resolves, by `import` or `require`, and writes their names, one a line, to the file
 * LOADED_PACKAGES_FILE names when the process exits. Tests use it to see what a command
 * loaded, e.g. that `--help` loaded no Kafka client.
 */
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const packages = new Set<string>();

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    // the package is the path after the last node_modules/: `name` or `@scope/name`
    const match = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url);
    if (match) packages.add(match[1]!);
    return resolved;
  },
});

process.on('exit', () => {
  writeFileSync(process.env.LOADED_PACKAGES_FILE!, [...packages].sort().join('\n'));
});
