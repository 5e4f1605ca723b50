/** The JDK the stack's daemons run on, and running a command to its end with a log. */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DaemonStartError, MissingPrerequisiteError, requireCommand } from './process.js';
import { verifyDownload } from './downloads.js';

/** The major version `command -version` reports (`version "25.0.3"`, or `"1.8.0_392"` up to Java 8); 0 when it does not run. */
export function javaMajor(command: string): number {
  const probe = spawnSync(command, ['-version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return 0;
  const [, first, second] = /version "(\d+)(?:\.(\d+))?/.exec(probe.stderr) ?? [];
  return Number(first === '1' ? second : first) || 0;
}

/**
 * A `java` of at least `minMajor`: JAVA_HOME's, then PATH's, then any JDK under
 * /usr/lib/jvm (the default `java` may be a 17 that suits Kafka but not the registry).
 */
export function findJava(minMajor: number, howToInstall: string): string {
  const jvmRoot = '/usr/lib/jvm';
  const installed = existsSync(jvmRoot) ? readdirSync(jvmRoot).sort().map((dir) => join(jvmRoot, dir, 'bin', 'java')) : [];
  const candidates = [...(process.env.JAVA_HOME ? [join(process.env.JAVA_HOME, 'bin', 'java')] : []), 'java', ...installed];
  const found = candidates.find((command) => javaMajor(command) >= minMajor);
  if (found === undefined) throw new MissingPrerequisiteError(`Java ${minMajor}+`, howToInstall);
  return found;
}

/** Runs a command to its end with its output appended to `log`; unless it exits 0, throws an error that points at the log. */
export function runLogged(failure: string, command: string, args: string[], options: { log: string; timeoutMs: number; cwd?: string }): void {
  const out = openSync(options.log, 'a');
  try {
    const result = spawnSync(command, args, { cwd: options.cwd, stdio: ['ignore', out, out], timeout: options.timeoutMs });
    if (result.error || result.status !== 0) {
      throw new DaemonStartError(`${failure} (${result.error?.message ?? `exit ${result.status}`}); see ${options.log}`);
    }
  } finally {
    closeSync(out);
  }
}

/** Written last into a fetched folder: its absence means the fetch did not finish. */
export const completeMarker = '.complete';

/**
 * A folder of the download cache made by `fill`, unless an earlier fetch completed it. `fill`
 * builds it inside a scratch folder that is renamed into place after the marker is written,
 * so a fetch cut short is never mistaken for a complete one, and two checkouts fetching at
 * once both end with a whole folder. `pinned`: the folder's name in the download cache
 * (src/stack/downloads.sha256), whose pinned sums the fetch must match before it is marked
 * complete, and a complete folder before it is returned for use.
 */
export function fetchIntoCache(folder: string, what: string, options: { say: (line: string) => void; pinned?: string }, fill: (scratch: string) => string): string {
  const verify = (dir: string) => {
    if (options.pinned !== undefined) verifyDownload(dir, options.pinned, { skip: [completeMarker] });
  };
  if (existsSync(join(folder, completeMarker))) {
    verify(folder);
    return folder;
  }
  requireCommand('mvn', 'apt-get install maven');
  options.say(`fetching ${what} from Maven Central into ${folder}`);
  const root = join(folder, '..');
  mkdirSync(root, { recursive: true });
  const scratch = mkdtempSync(join(root, 'fetch-'));
  try {
    const built = fill(scratch);
    verify(built);
    writeFileSync(join(built, completeMarker), `${what}\n`);
    rmSync(folder, { recursive: true, force: true });
    try {
      renameSync(built, folder);
    } catch (error) {
      // Another checkout finished the same fetch first.
      if (!existsSync(join(folder, completeMarker))) throw error;
    }
    return folder;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Maven's arguments common to every fetch. */
const mavenFetch = [
  '-B',
  '--no-transfer-progress',
  // A file whose published .sha1 differs fails the fetch (Maven's default only warns).
  '--strict-checksums',
];
/** Pinned: the plugin version a bare `dependency:` resolves to differs between Maven releases. */
const dependencyPlugin = 'org.apache.maven.plugins:maven-dependency-plugin:3.8.1';

/** The runtime jars `pom` depends on, fetched from Maven Central into `folder` (Maven's copy-dependencies), as fetchIntoCache says. */
export function fetchMavenLibs(folder: string, pom: string, what: string, options: { log: string; say: (line: string) => void; pinned?: string }): string {
  return fetchIntoCache(folder, what, options, (scratch) => {
    writeFileSync(join(scratch, 'pom.xml'), pom);
    runLogged(`mvn could not fetch ${what}`, 'mvn', [...mavenFetch, `${dependencyPlugin}:copy-dependencies`, '-DincludeScope=runtime', `-DoutputDirectory=${join(scratch, 'libs')}`], {
      cwd: scratch, log: options.log, timeoutMs: 15 * 60_000,
    });
    return join(scratch, 'libs');
  });
}

/**
 * Unpacks one archive from Maven Central (`group:artifact:version:type[:classifier]`) into
 * `into`, run from `cwd` (a folder of its own: a pom.xml in the caller's folder would make mvn build that project).
 */
export function unpackMavenArchive(artifact: string, into: string, options: { cwd: string; log: string }): void {
  runLogged(`mvn could not fetch ${artifact}`, 'mvn', [...mavenFetch, `${dependencyPlugin}:unpack`, `-Dartifact=${artifact}`, `-DoutputDirectory=${into}`], {
    cwd: options.cwd, log: options.log, timeoutMs: 15 * 60_000,
  });
}
