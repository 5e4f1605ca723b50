/**
 * What installs and downloads run, checked against what the repository pins: every npm
 * package with an install script is reviewed in package.json's `allowScripts`, Node 22
 * comes from the lockfile, and the stack's Maven downloads verify against
 * src/stack/downloads.sha256 (and are refused when a file is changed, added or missing), and
 * the Python readers install from a lock that pins every distribution with its sha256s.
 * Hashes are computed by coreutils' sha256sum, not by the verifier under test.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DownloadVerificationError, pinsFile, readPins, verifyDownload } from '../../src/stack/downloads.js';
import { kafkaVersion } from '../../src/stack/kafka.js';
import { registryVersion } from '../../src/stack/registry.js';
import { icebergVersion } from '../helpers/iceberg-jars.js';
import { trinoVersion } from '../helpers/trino.js';

const root = join(import.meta.dirname, '..', '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  allowScripts: Record<string, boolean>;
  devDependencies: Record<string, string>;
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; integrity?: string; hasInstallScript?: boolean; optional?: boolean }> };
const cache = process.env.OFFSETLAKE_CACHE ?? join(homedir(), '.cache', 'offsetlake');
const scratch = mkdtempSync(join(tmpdir(), 'offsetlake-supply-chain-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const sha256sum = (file: string) => execFileSync('sha256sum', [file], { encoding: 'utf8' }).split(' ')[0]!;

describe('npm install scripts', () => {
  it('every package of the lockfile with an install script is reviewed in allowScripts, and an unreviewed one fails the install', () => {
    const withScripts = [...new Set(Object.entries(lock.packages).filter(([path, entry]) => path !== '' && entry.hasInstallScript).map(([path]) => path.replace(/^.*node_modules\//, '')))].sort();
    expect(withScripts.length).toBeGreaterThan(0);
    expect(Object.keys(manifest.allowScripts).sort()).toEqual(withScripts);
    // esbuild's postinstall would only fetch its binary outside the lockfile when the platform package is missing.
    expect(manifest.allowScripts.esbuild).toBe(false);
    // CI installs strictly (one not listed fails it); .npmrc cannot, or npx's own install of the checkout is refused.
    expect(readFileSync(join(root, '.ci/run'), 'utf8')).toMatch(/^npm ci .*--strict-allow-scripts\b/m);
    expect(readFileSync(join(root, '.npmrc'), 'utf8')).not.toMatch(/^strict-allow-scripts\s*=\s*true/m);
  });

  it('Node 22 comes from the lockfile: exact versions with integrity, no package that installs it by a script', () => {
    expect({ ...manifest.dependencies, ...manifest.devDependencies }).not.toHaveProperty('node');
    expect(lock.packages['node_modules/node']).toBeUndefined();
    for (const cpu of ['x64', 'arm64']) {
      const name = `node-linux-${cpu}`;
      expect(manifest.optionalDependencies[name]).toMatch(/^22\.\d+\.\d+$/);
      expect(lock.packages[`node_modules/${name}`]).toMatchObject({ version: manifest.optionalDependencies[name], optional: true, integrity: expect.stringMatching(/^sha512-/) });
      expect(lock.packages[`node_modules/${name}`]!.hasInstallScript).toBeUndefined();
    }
  });
});

describe('Maven downloads: pinned sha256', () => {
  const kafka = `kafka-${kafkaVersion}/libs`;
  const registry = `apicurio-registry-${registryVersion}`;

  it('pins every file of the versions the stack runs', () => {
    const pins = readPins();
    const kafkaJars = [...pins.keys()].filter((path) => path.startsWith(`${kafka}/`));
    expect(kafkaJars).toContain(`${kafka}/kafka_2.13-${kafkaVersion}.jar`);
    expect([...pins.keys()].filter((path) => path.startsWith(`${registry}/`))).toContain(`${registry}/quarkus-run.jar`);
    for (const folder of [`spark-iceberg-${icebergVersion}`, `iceberg-rck-${icebergVersion}`]) expect([...pins.keys()].some((path) => path.startsWith(`${folder}/iceberg-`)), folder).toBe(true);
    // Trino: the server's lib/ and the Iceberg plugin (test/helpers/trino.ts)
    const trino = `trino-server-${trinoVersion}`;
    expect([...pins.keys()]).toContain(`${trino}/lib/io.trino_trino-main-${trinoVersion}.jar`);
    expect([...pins.keys()]).toContain(`${trino}/plugin/iceberg/io.trino_trino-iceberg-${trinoVersion}.jar`);
    const folders = new Set([...pins.keys()].map((path) => path.split('/')[0]));
    expect([...folders].sort()).toEqual([registry, `iceberg-rck-${icebergVersion}`, `kafka-${kafkaVersion}`, `spark-iceberg-${icebergVersion}`, trino]);
  });

  it.skipIf(!existsSync(join(cache, kafka)) || !existsSync(join(cache, registry)))('the downloads in the cache verify, by sha256sum -c and by the stack', () => {
    // coreutils checks the pins of every folder this cache holds (the test-only Iceberg jars
    // are fetched by the tests that need them), from the cache's root: it fails on any line it cannot verify.
    const lines = readFileSync(pinsFile, 'utf8').split('\n').filter((line) => line !== '' && existsSync(join(cache, line.slice(66).split('/')[0]!)));
    expect(lines.length).toBeGreaterThan(500);
    execFileSync('sha256sum', ['--strict', '--quiet', '-c', '-'], { cwd: cache, input: `${lines.join('\n')}\n`, stdio: ['pipe', 'pipe', 'pipe'] });
    expect(() => verifyDownload(join(cache, kafka), kafka, { skip: ['.complete'] })).not.toThrow();
    expect(() => verifyDownload(join(cache, registry), registry, { skip: ['.complete'] })).not.toThrow();
  });

  describe('refuses a download that differs from its pins, naming the file', () => {
    const pins = new Map([
      ['kafka-9.9.9/libs/a.jar', sha256OfText('jar a')],
      ['kafka-9.9.9/libs/sub/b.jar', sha256OfText('jar b')],
    ]);
    function folder(files: Record<string, string>): string {
      const dir = mkdtempSync(join(scratch, 'libs-'));
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeText(join(dir, path), text);
      }
      return dir;
    }

    it('accepts exactly the pinned files (its own marker skipped)', () => {
      const dir = folder({ 'a.jar': 'jar a', 'sub/b.jar': 'jar b', '.complete': 'ours' });
      expect(() => verifyDownload(dir, 'kafka-9.9.9/libs', { skip: ['.complete'], pins })).not.toThrow();
    });

    it('a tampered file: expected and actual sha256', () => {
      const dir = folder({ 'a.jar': 'jar a, tampered', 'sub/b.jar': 'jar b' });
      const actual = sha256sum(join(dir, 'a.jar'));
      expect(() => verifyDownload(dir, 'kafka-9.9.9/libs', { pins })).toThrow(DownloadVerificationError);
      expect(() => verifyDownload(dir, 'kafka-9.9.9/libs', { pins })).toThrow(`${join(dir, 'a.jar')}: sha256 ${actual}, expected ${pins.get('kafka-9.9.9/libs/a.jar')}`);
    });

    it('a file added (a jar more on the classpath) or missing', () => {
      const added = folder({ 'a.jar': 'jar a', 'sub/b.jar': 'jar b', 'evil.jar': 'not pinned' });
      expect(() => verifyDownload(added, 'kafka-9.9.9/libs', { pins })).toThrow(`${join(added, 'evil.jar')}: not pinned (sha256 ${sha256sum(join(added, 'evil.jar'))}), but the download holds it`);
      const missing = folder({ 'a.jar': 'jar a' });
      expect(() => verifyDownload(missing, 'kafka-9.9.9/libs', { pins })).toThrow(`${join(missing, 'sub/b.jar')}: missing (expected sha256 ${pins.get('kafka-9.9.9/libs/sub/b.jar')})`);
    });

    it('a download nothing is pinned for', () => {
      const dir = folder({ 'a.jar': 'jar a' });
      expect(() => verifyDownload(dir, 'kafka-10.0.0/libs', { pins })).toThrow(/no sha256 is pinned for kafka-10\.0\.0\/libs/);
    });
  });
});

describe('PyPI: the Python readers come from a lock with sha256', () => {
  const envScript = readFileSync(join(root, 'test/python-env.sh'), 'utf8');
  // what pip-compile --generate-hashes writes: `name==version \`, then one `--hash=sha256:` line per file, then `# via` comments
  function readLock(path: string): Map<string, { version: string; hashes: string[] }> {
    const entries = new Map<string, { version: string; hashes: string[] }>();
    let current: { version: string; hashes: string[] } | undefined;
    for (const line of readFileSync(join(root, path), 'utf8').split('\n')) {
      if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
      const hash = /^ {4}--hash=sha256:([0-9a-f]{64})( \\)?$/.exec(line);
      if (hash) {
        expect(current, `${path}: a hash before any pin: ${line}`).toBeDefined();
        current!.hashes.push(hash[1]!);
        continue;
      }
      const pin = /^([a-z0-9][a-z0-9._-]*)==([0-9][0-9A-Za-z.+!-]*) \\$/.exec(line);
      expect(pin, `${path}: neither a pin with hashes to follow nor a hash (an option, a URL, a range?): ${line}`).not.toBeNull();
      expect(entries.has(pin![1]!), `${path}: ${pin![1]} twice`).toBe(false);
      current = { version: pin![2]!, hashes: [] };
      entries.set(pin![1]!, current);
    }
    return entries;
  }
  const normalized = (name: string) => name.toLowerCase().replace(/[-_.]+/g, '-');

  for (const requirements of ['test/integration/requirements-reader.txt', 'bench/peers/requirements.txt']) {
    const lockPath = requirements.replace(/\.txt$/, '.lock.txt');

    it(`${lockPath}: every distribution pinned == with a sha256 for each of its files, every requirement of ${requirements} at its version`, () => {
      const lock = readLock(lockPath);
      expect(lock.size).toBeGreaterThan(10);
      for (const [name, { version, hashes }] of lock) {
        expect(hashes.length, `${name}==${version} has no sha256`).toBeGreaterThan(0);
        expect(new Set(hashes).size, `${name}: a hash twice`).toBe(hashes.length);
      }
      const wanted = readFileSync(join(root, requirements), 'utf8').split('\n').map((line) => line.split('#')[0]!.trim()).filter((line) => line !== '');
      expect(wanted.length).toBeGreaterThan(5);
      for (const line of wanted) {
        const [name, version] = line.split('==');
        expect(lock.get(normalized(name!))?.version, `${requirements}'s ${line} in ${lockPath}`).toBe(version);
      }
      // the header says how to make it again
      expect(readFileSync(join(root, lockPath), 'utf8')).toContain(`#    bash test/python-lock.sh ${requirements}\n`);
    });
  }

  it('the lock is what pip sees: a many-platform wheel set (pyarrow) carries every platform\'s hash', () => {
    // one hash per file PyPI holds: pyarrow 26 ships wheels for several Pythons, OSes and CPUs
    expect(readLock('test/integration/requirements-reader.lock.txt').get('pyarrow')!.hashes.length).toBeGreaterThan(20);
  });

  it('test/python-env.sh installs only from the lock, hashes required, no dependency resolved outside it, keyed on the lock', () => {
    const installs = envScript.split('\n').filter((line) => /pip install\b/.test(line) && !line.trimStart().startsWith('#'));
    expect(installs.length).toBeGreaterThan(0);
    for (const line of installs) expect(line).toMatch(/--require-hashes --no-deps/);
    expect(envScript).toMatch(/^ {2}pip_install --no-build-isolation -r "\$lock"$/m);
    expect(envScript).toMatch(/^lock="\$\{requirements%\.txt\}\.lock\.txt"$/m);
    expect(envScript).toMatch(/^venv="\$cache\/python-\$\(sha256sum "\$lock" \| cut -c1-12\)"$/m);
    expect(envScript).toMatch(/python_pins\.py "\$lock" --exactly/);
  });
});

function writeText(file: string, text: string): string {
  writeFileSync(file, text);
  return file;
}

function sha256OfText(text: string): string {
  const file = writeText(join(scratch, `pin-${Math.random().toString(36).slice(2)}`), text);
  return sha256sum(file);
}
