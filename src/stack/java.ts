/** The JDK the stack's daemons run on, and running a command to its end with a log. */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DaemonStartError, MissingPrerequisiteError } from './process.js';

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
