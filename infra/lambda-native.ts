/**
 * The native (napi-rs) binaries the Lambda bundles carry, for the functions' architecture.
 *
 * snappy, lz4-napi and @toondepauw/node-zstd (our writer's compressors) and @node-rs/crc32 (the record batches'
 * CRC-32C, 6-8× the JavaScript one) are JavaScript loaders of a platform
 * package each (@napi-rs/snappy-linux-arm64-gnu, @antoniomuso/lz4-napi-linux-x64-gnu, …),
 * which npm lists as optional dependencies with cpu/os/libc filters and installs only for
 * the machine it runs on. An x64 laptop or CI machine therefore has no arm64 binary to put
 * in an ARM_64 function's bundle, and `cdk synth` must not need the network. So `npm ci`'s
 * postinstall (infra/lambda-native-install.ts) installs, for each Lambda architecture, the
 * platform packages package-lock.json already pins (npm records every optional platform
 * package of a dependency, with its version and integrity) into
 * node_modules/.offsetlake-lambda-native/linux-<cpu>-gnu/, by `npm ci --os=linux
 * --cpu=<cpu> --libc=glibc` on a lock derived from ours: npm fetches each tarball and checks
 * it against our lock's integrity. Nothing is pinned twice; upgrading snappy in
 * package.json upgrades what the bundles carry.
 *
 * Bundling (infra/stack.ts) keeps esbuild away from the platform packages (a `.node` file is
 * no JavaScript) and copies each binary of the function's architecture next to index.mjs,
 * under the name the library's loader asks for first, relative to itself
 * (`require('./snappy.linux-arm64-gnu.node')`): in the bundle that is relative to
 * index.mjs, so the binary loads from /var/task without any node_modules.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from './root.js';

/** A Lambda architecture in Node's words (`process.arch`): ARM_64 is arm64, X86_64 is x64. */
export type LambdaCpu = 'arm64' | 'x64';
export const lambdaCpus: readonly LambdaCpu[] = ['arm64', 'x64'];

/** The libraries whose native binding every function bundle carries (functions/native.ts imports them). */
export const nativeLibraries = ['snappy', 'lz4-napi', '@toondepauw/node-zstd', '@node-rs/crc32'] as const;

export interface NativeBinding {
  library: string;
  /** The platform package of the library for linux-<cpu>-gnu, as package-lock.json pins it. */
  package: string;
  version: string;
  integrity: string;
  /** Its file name in the bundle: the one the library's loader requires first (`<binaryName>.linux-<cpu>-gnu.node`). */
  bundleFile: string;
  /** Where the postinstall put it (absent until it ran). */
  installedFile: string;
}

interface LockEntry {
  version: string;
  integrity?: string;
  resolved?: string;
  license?: string;
  cpu?: string[];
  os?: string[];
  libc?: string[];
  engines?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

interface Lock {
  packages: Record<string, LockEntry>;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

/** Where the postinstall installs the platform packages of one Lambda architecture. */
export function nativeInstallDir(cpu: LambdaCpu, root = projectRoot()): string {
  return join(root, 'node_modules', '.offsetlake-lambda-native', `linux-${cpu}-gnu`);
}

function lockOf(root: string): Lock {
  return readJson<Lock>(join(root, 'package-lock.json'));
}

/**
 * The platform packages of the native libraries, every system and the wasm fallback
 * included, as esbuild externals: `<napi.packageName>-*` (`@napi-rs/snappy-*`). The loaders
 * require them inside try blocks; esbuild must leave each of them alone.
 */
export function nativePlatformPackages(root = projectRoot()): string[] {
  return nativeLibraries.map((library) => `${napiOf(root, library).packageName}-*`);
}

function napiOf(root: string, library: string): { binaryName: string; packageName: string } {
  const manifest = readJson<{ name: string; napi?: { binaryName?: string; packageName?: string } }>(join(root, 'node_modules', library, 'package.json'));
  const napi = manifest.napi;
  if (!napi?.binaryName) throw new Error(`${library} names no napi.binaryName in its package.json: is it still a napi-rs package?`);
  // napi-rs names the platform packages after the package itself unless told otherwise
  return { binaryName: napi.binaryName, packageName: napi.packageName ?? manifest.name };
}

function libraryEntry(lock: Lock, library: string): LockEntry {
  const entry = lock.packages[`node_modules/${library}`];
  if (!entry) throw new Error(`package-lock.json has no node_modules/${library}: npm install --save-exact ${library}`);
  return entry;
}

/** The binaries a bundle for `cpu` carries: one per native library, linux, glibc (Lambda's Amazon Linux 2023). */
export function nativeBindings(cpu: LambdaCpu, root = projectRoot()): NativeBinding[] {
  const lock = lockOf(root);
  return nativeLibraries.map((library) => {
    const candidates = Object.keys(libraryEntry(lock, library).optionalDependencies ?? {})
      .map((name) => [name, lock.packages[`node_modules/${name}`]] as const)
      .filter((pair): pair is readonly [string, LockEntry] => pair[1] !== undefined)
      .filter(([, entry]) => entry.os?.includes('linux') && entry.cpu?.includes(cpu) && entry.libc?.includes('glibc'));
    if (candidates.length !== 1) {
      throw new Error(`package-lock.json should name one linux ${cpu} glibc package among ${library}'s optional dependencies, found ${candidates.map(([name]) => name).join(', ') || 'none'}`);
    }
    const [name, entry] = candidates[0]!;
    if (!entry.integrity) throw new Error(`package-lock.json has no integrity for ${name}`);
    const { binaryName, packageName } = napiOf(root, library);
    if (!name.startsWith(`${packageName}-`)) throw new Error(`${name} is not one of ${library}'s platform packages (${packageName}-*)`);
    const bundleFile = `${binaryName}.linux-${cpu}-gnu.node`;
    return { library, package: name, version: entry.version, integrity: entry.integrity, bundleFile, installedFile: join(nativeInstallDir(cpu, root), 'node_modules', name, bundleFile) };
  });
}

/** The installed binaries of `cpu`, each checked to exist: what bundling copies. */
export function installedNativeBindings(cpu: LambdaCpu, root = projectRoot()): NativeBinding[] {
  const bindings = nativeBindings(cpu, root);
  const missing = bindings.filter((binding) => !existsSync(binding.installedFile));
  if (missing.length > 0) {
    throw new Error(`the Lambda bundles for ${cpu} need ${missing.map((b) => `${b.package}@${b.version}`).join(', ')}, which npm ci's postinstall installs into ${nativeInstallDir(cpu, root)} (missing: ${missing.map((b) => b.installedFile).join(', ')}). Run: npm run lambda-native`);
  }
  return bindings;
}

/**
 * Installs the platform packages of every Lambda architecture with npm, each folder a
 * project of its own whose lock is taken from ours (versions and integrity), so that
 * `npm ci` installs exactly those bytes for that cpu whatever this machine is. A folder
 * whose lock is unchanged and whose binaries are there is left as it is.
 */
export function installNativeBindings(root = projectRoot(), log: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): void {
  const lock = lockOf(root);
  for (const cpu of lambdaCpus) {
    const bindings = nativeBindings(cpu, root);
    const dir = nativeInstallDir(cpu, root);
    const name = `offsetlake-lambda-native-linux-${cpu}-gnu`;
    const dependencies = Object.fromEntries(bindings.map((b) => [b.package, b.version]));
    // Optional dependencies, as in the libraries themselves: npm applies --os/--cpu/--libc to
    // optional packages only (a plain dependency is checked against this machine).
    const manifest = { name, version: '0.0.0', private: true, description: 'Written by infra/lambda-native.ts: the native bindings a Lambda bundle for this architecture carries.', optionalDependencies: dependencies };
    const packages: Record<string, unknown> = { '': { name, version: '0.0.0', optionalDependencies: dependencies } };
    for (const binding of bindings) {
      const { version, integrity, resolved, license, cpu: cpus, os, libc, engines } = lock.packages[`node_modules/${binding.package}`]!;
      packages[`node_modules/${binding.package}`] = { version, ...(resolved ? { resolved } : {}), integrity, ...(license ? { license } : {}), cpu: cpus, optional: true, os, libc, ...(engines ? { engines } : {}) };
    }
    const derivedLock = `${JSON.stringify({ name, version: '0.0.0', lockfileVersion: 3, requires: true, packages }, null, 2)}\n`;
    const lockFile = join(dir, 'package-lock.json');
    if (existsSync(lockFile) && readFileSync(lockFile, 'utf8') === derivedLock && bindings.every((b) => existsSync(b.installedFile))) {
      log(`lambda-native: linux-${cpu}-gnu up to date (${bindings.map((b) => `${b.package}@${b.version}`).join(', ')})`);
      continue;
    }
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    writeFileSync(lockFile, derivedLock);
    // Settings of the npm that runs this postinstall reach the inner one through npm_config_*
    // variables: the registry and cache should, but not a platform, prefix or workspace of its own.
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_config_(os|cpu|libc|prefix|local_prefix|global|location|workspaces?|include_workspace_root|omit|include|package_lock_only)$/i.test(key)));
    const execPath = process.env.npm_execpath;
    const [command, prefix] = execPath && /npm-cli\.c?js$/.test(execPath) ? [process.execPath, [execPath]] : ['npm', []];
    execFileSync(command, [...prefix, 'ci', '--os=linux', `--cpu=${cpu}`, '--libc=glibc', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, env, stdio: ['ignore', 'inherit', 'inherit'] });
    const missing = bindings.filter((b) => !existsSync(b.installedFile));
    if (missing.length > 0) throw new Error(`npm ci in ${dir} did not install ${missing.map((b) => b.installedFile).join(', ')}`);
    log(`lambda-native: linux-${cpu}-gnu installed (${bindings.map((b) => `${b.package}@${b.version}`).join(', ')})`);
  }
}
