/**
 * Iceberg's jars from Maven Central, fetched once into the shared download cache: the
 * Spark 4.1 runtime and AWS bundle (S3FileIO) for test/integration/iceberg.test.ts, and
 * the REST Compatibility Kit (iceberg-open-api's tests and test fixtures, iceberg-core's
 * CatalogTests, run by the JUnit console launcher) for test/integration/iceberg-rck.test.ts.
 */
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fetchMavenLibs, javaMajor } from '../../src/stack/java.js';

export const icebergVersion = '1.11.0';

const pom = `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>offsetlake</groupId><artifactId>spark-iceberg</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-spark-runtime-4.1_2.13</artifactId><version>${icebergVersion}</version></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-aws-bundle</artifactId><version>${icebergVersion}</version></dependency>
  </dependencies>
</project>
`;

const dependency = (group: string, artifact: string, version: string, classifier?: string) =>
  `<dependency><groupId>${group}</groupId><artifactId>${artifact}</artifactId><version>${version}</version>${classifier ? `<classifier>${classifier}</classifier>` : ''}</dependency>`;

/**
 * The kit and what its tests load: Iceberg's core (tests included: CatalogTests), data,
 * Parquet and AWS modules, Hadoop's shaded client (the kit makes a Configuration), JUnit 5
 * with the suite engine and console launcher, AssertJ, Awaitility, Mockito.
 */
const rckPom = `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>offsetlake</groupId><artifactId>iceberg-rck</artifactId><version>1</version>
  <dependencies>
    ${dependency('org.apache.iceberg', 'iceberg-open-api', icebergVersion, 'tests')}
    ${dependency('org.apache.iceberg', 'iceberg-open-api', icebergVersion, 'test-fixtures')}
    ${dependency('org.apache.iceberg', 'iceberg-core', icebergVersion, 'tests')}
    ${dependency('org.apache.iceberg', 'iceberg-core', icebergVersion)}
    ${dependency('org.apache.iceberg', 'iceberg-api', icebergVersion, 'tests')}
    ${dependency('org.apache.iceberg', 'iceberg-data', icebergVersion)}
    ${dependency('org.apache.iceberg', 'iceberg-parquet', icebergVersion)}
    ${dependency('org.apache.iceberg', 'iceberg-aws', icebergVersion)}
    ${dependency('org.apache.hadoop', 'hadoop-client-api', '3.4.1')}
    ${dependency('org.apache.hadoop', 'hadoop-client-runtime', '3.4.1')}
    ${dependency('org.junit.jupiter', 'junit-jupiter', '5.13.4')}
    ${dependency('org.junit.platform', 'junit-platform-suite', '1.13.4')}
    ${dependency('org.junit.platform', 'junit-platform-console-standalone', '1.13.4')}
    ${dependency('org.assertj', 'assertj-core', '3.27.3')}
    ${dependency('org.awaitility', 'awaitility', '4.3.0')}
    ${dependency('org.mockito', 'mockito-core', '5.18.0')}
  </dependencies>
</project>
`;

function fetched(name: string, pomText: string, what: string): string[] {
  const cache = process.env.OFFSETLAKE_CACHE ?? join(homedir(), '.cache', 'offsetlake');
  const folder = fetchMavenLibs(join(cache, name), pomText, what, {
    log: join(cache, `${name}-fetch.log`),
    say: (line) => process.stderr.write(`${name}: ${line}\n`),
    // every jar as pinned in src/stack/downloads.sha256, before it is marked complete and before each use
    pinned: name,
  });
  return readdirSync(folder).filter((file) => file.endsWith('.jar')).map((file) => join(folder, file));
}

/** Spark's jars' paths (both bundles shade what they need). */
export function sparkIcebergJars(): string[] {
  return fetched(`spark-iceberg-${icebergVersion}`, pom, `Iceberg ${icebergVersion} for Spark 4.1`);
}

/** The REST Compatibility Kit's class path. */
export function rckJars(): string[] {
  return fetched(`iceberg-rck-${icebergVersion}`, rckPom, `Iceberg ${icebergVersion}'s REST Compatibility Kit`);
}

/**
 * A JAVA_HOME Spark 4.1 runs on (Java 17 or 21: the machine's default `java` may be
 * another, such as the 25 the registry may use): JAVA_HOME's, PATH's, then any under /usr/lib/jvm.
 */
export function sparkJavaHome(): string {
  const jvmRoot = '/usr/lib/jvm';
  const onPath = (() => {
    try {
      return realpathSync(execFileSync('which', ['java'], { encoding: 'utf8' }).trim());
    } catch {
      return undefined;
    }
  })();
  const candidates = [
    ...(process.env.JAVA_HOME ? [join(process.env.JAVA_HOME, 'bin', 'java')] : []),
    ...(onPath ? [onPath] : []),
    ...(existsSync(jvmRoot) ? readdirSync(jvmRoot).sort().map((dir) => join(jvmRoot, dir, 'bin', 'java')) : []),
  ];
  const found = candidates.find((command) => [17, 21].includes(javaMajor(command)));
  if (!found) throw new Error('Spark 4.1 needs Java 17 or 21 (apt-get install openjdk-17-jre-headless)');
  return dirname(dirname(found));
}
