/**
 * The native binaries the Lambda bundles carry (infra/lambda-native.ts): for each Lambda
 * architecture, the platform packages of snappy, lz4-napi, @toondepauw/node-zstd and @node-rs/crc32 that package-lock.json pins,
 * installed by npm ci's postinstall whatever this machine's processor. The bundles
 * themselves, on both processors, are test/integration/lambda-bundles.test.ts's.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lambdaCpus, nativeBindings, nativeInstallDir, nativeLibraries, nativePlatformPackages, type LambdaCpu } from '../../infra/lambda-native.js';
import { projectRoot } from '../../infra/root.js';

const root = projectRoot();
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
const manifest = readJson(join(root, 'package.json')) as { dependencies: Record<string, string>; scripts: Record<string, string> };
const lock = readJson(join(root, 'package-lock.json')) as { packages: Record<string, { version: string; integrity: string }> };
/** ELF e_machine of the two Lambda architectures. */
const elfMachine: Record<LambdaCpu, number> = { arm64: 183, x64: 62 };

describe('the native bindings of the Lambda bundles', () => {
  it('snappy, lz4-napi, @toondepauw/node-zstd and @node-rs/crc32 are pinned exactly: a compressor\'s version shapes our writer\'s bytes', () => {
    for (const library of nativeLibraries) expect(manifest.dependencies[library], library).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('per architecture, the linux glibc platform package of each library, at the version and integrity package-lock.json pins', () => {
    expect(lambdaCpus).toEqual(['arm64', 'x64']);
    for (const cpu of lambdaCpus) {
      expect(nativeBindings(cpu).map(({ library, package: name, version, bundleFile }) => ({ library, name, version, bundleFile }))).toEqual([
        { library: 'snappy', name: `@napi-rs/snappy-linux-${cpu}-gnu`, version: manifest.dependencies.snappy, bundleFile: `snappy.linux-${cpu}-gnu.node` },
        { library: 'lz4-napi', name: `@antoniomuso/lz4-napi-linux-${cpu}-gnu`, version: manifest.dependencies['lz4-napi'], bundleFile: `lz4-napi.linux-${cpu}-gnu.node` },
        { library: '@toondepauw/node-zstd', name: `@toondepauw/node-zstd-linux-${cpu}-gnu`, version: manifest.dependencies['@toondepauw/node-zstd'], bundleFile: `node-zstd.linux-${cpu}-gnu.node` },
        { library: '@node-rs/crc32', name: `@node-rs/crc32-linux-${cpu}-gnu`, version: manifest.dependencies['@node-rs/crc32'], bundleFile: `crc32.linux-${cpu}-gnu.node` },
      ]);
      for (const binding of nativeBindings(cpu)) expect(binding.integrity).toBe(lock.packages[`node_modules/${binding.package}`]!.integrity);
    }
  });

  it('esbuild leaves every platform package of the libraries alone (musl, other systems and the wasm fallback included)', () => {
    expect(nativePlatformPackages()).toEqual(['@napi-rs/snappy-*', '@antoniomuso/lz4-napi-*', '@toondepauw/node-zstd-*', '@node-rs/crc32-*']);
    // Every name the loaders require (their index.js), but for the relative `./<binary>.<platform>.node` they try first.
    nativeLibraries.forEach((library, at) => {
      const required = [...readFileSync(join(root, 'node_modules', library, 'index.js'), 'utf8').matchAll(/require\((['"])([^'"]+)\1\)/g)].map((m) => m[2]!);
      const packages = required.filter((name) => name.startsWith('@'));
      expect(packages.length, library).toBeGreaterThan(10);
      const prefix = nativePlatformPackages()[at]!.slice(0, -1);
      expect(packages.filter((name) => !name.startsWith(prefix)), library).toEqual([]);
    });
  });

  it('npm ci\'s postinstall installed both architectures\' binaries: ELF shared objects of the right processor, from the pinned tarballs', () => {
    expect(manifest.scripts.postinstall).toContain('infra/lambda-native-install.ts');
    for (const cpu of lambdaCpus) {
      const derived = readJson(join(nativeInstallDir(cpu), 'package-lock.json')) as { packages: Record<string, { version: string; integrity: string }> };
      for (const binding of nativeBindings(cpu)) {
        expect(derived.packages[`node_modules/${binding.package}`], binding.package).toMatchObject({ version: binding.version, integrity: binding.integrity });
        const installed = readJson(join(nativeInstallDir(cpu), 'node_modules', binding.package, 'package.json')) as { version: string; main: string };
        expect([installed.version, installed.main]).toEqual([binding.version, binding.bundleFile]);
        const header = readFileSync(binding.installedFile).subarray(0, 20);
        expect([header.subarray(0, 4).toString('latin1'), header[4], header[5], header.readUInt16LE(16), header.readUInt16LE(18)], binding.installedFile).toEqual(['\x7fELF', 2, 1, 3, elfMachine[cpu]]);
      }
    }
  });

  it('this machine\'s architecture: the binaries are the very files npm installed for the libraries, and compress (or checksum) as they do', () => {
    const cpu = process.arch as LambdaCpu;
    if (!lambdaCpus.includes(cpu)) return;
    const require = createRequire(join(root, 'package.json'));
    const input = Buffer.from(Array.from({ length: 20_000 }, (_, i) => `{"i":${i},"k":"${(i * 2654435761 >>> 0).toString(36)}"}`).join('\n'));
    for (const binding of nativeBindings(cpu)) {
      const own = require.resolve(`${binding.package}/${binding.bundleFile}`);
      const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
      expect(sha(binding.installedFile), binding.package).toBe(sha(own));
      type Zstd = new (level: number) => { encodeSync(data: Buffer): Buffer };
      const carried = require(binding.installedFile) as { compressSync?(data: Buffer): Buffer; crc32c?(data: Buffer): number; Encoder?: Zstd };
      const library = require(binding.library) as typeof carried;
      if (library.compressSync) expect(carried.compressSync!(input).equals(library.compressSync(input)), binding.library).toBe(true);
      else if (library.Encoder) expect(new carried.Encoder!(1).encodeSync(input).equals(new library.Encoder(1).encodeSync(input)), binding.library).toBe(true);
      else expect(carried.crc32c!(input), binding.library).toBe(library.crc32c!(input));
    }
  });
});
