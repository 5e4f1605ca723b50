#!/usr/bin/env node
// The CLI runs as JavaScript bundled from the TypeScript sources by esbuild (dist/): made
// the first time and again whenever a source is newer (about 0.5 s), so that other starts
// skip transpiling through tsx. Each build goes to a folder of its own and `dist/current`
// names the newest, so a start never reads a build that is being written. If a bundle
// cannot be made, the sources run through tsx as before.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundleAliases } from './bundle-aliases.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pointer = join(dist, 'current');

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Packages stay external (loaded from node_modules as they are), except the Kafka client
 * and the JavaScript it imports, which go into the bundle: loading its ~330 modules and
 * ajv's one by one costs about as much CPU as running them (docs/measurements.md, "Start-up"). Kept
 * external among those: packages that read files beside their own (wasm-utils reads its
 * .wasm), native code, and the schema libraries our own modules import as well.
 */
const loadedFromNodeModules = new Set(['@platformatic/wasm-utils', '@node-rs/crc32', 'avsc', 'protobufjs']);
const kafkaClientBundled = {
  name: 'kafka-client-bundled',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      const name = args.path.split('/').slice(0, args.path.startsWith('@') ? 2 : 1).join('/');
      const bundled = (name === '@platformatic/kafka' || name === 'ajv' || args.importer.includes('/node_modules/')) && !loadedFromNodeModules.has(name);
      return bundled ? undefined : { external: true };
    });
  },
};

/** The entry module of a bundle at least as new as every source, made if needed; undefined if it cannot be. */
async function bundledEntry() {
  const newest = Math.max(newestSource(join(root, 'src')), newestSource(join(root, 'infra')), statSync(join(root, 'package.json')).mtimeMs, statSync(join(root, 'bin', 'bundle-aliases.js')).mtimeMs);
  if (existsSync(pointer) && statSync(pointer).mtimeMs >= newest) {
    const entry = join(dist, readFileSync(pointer, 'utf8').trim(), 'main.js');
    if (existsSync(entry)) return entry;
  }
  try {
    const esbuild = await import('esbuild');
    const name = `build-${Date.now()}-${process.pid}`;
    await esbuild.build({
      // the build workers' module (src/build/pool.ts) beside the CLI's
      entryPoints: { main: join(root, 'src', 'cli', 'main.ts'), 'build-worker': join(root, 'src', 'build', 'worker.ts') },
      bundle: true,
      splitting: true, // commands load what they need (DuckDB, the CDK app) only when they run
      platform: 'node',
      format: 'esm',
      plugins: [kafkaClientBundled],
      alias: bundleAliases(root),
      // the CommonJS packages bundled with the Kafka client (debug) call require()
      banner: { js: "import { createRequire as __offsetlakeRequire } from 'node:module'; const require = __offsetlakeRequire(import.meta.url);" },
      target: 'node22',
      logLevel: 'silent',
      outdir: join(dist, name),
    });
    writeFileSync(`${pointer}.${process.pid}`, name);
    renameSync(`${pointer}.${process.pid}`, pointer);
    // builds older than an hour: no start can still be reading them
    for (const old of readdirSync(dist)) {
      if (old.startsWith('build-') && old !== name && Date.now() - statSync(join(dist, old)).mtimeMs > 3_600_000) rmSync(join(dist, old), { recursive: true, force: true });
    }
    return join(dist, name, 'main.js');
  } catch {
    return undefined;
  }
}

mkdirSync(dist, { recursive: true });
const entry = await bundledEntry();
let main;
if (entry) {
  ({ main } = await import(pathToFileURL(entry).href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli/main.ts'));
}
process.exitCode = await main(process.argv.slice(2));
