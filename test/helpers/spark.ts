/**
 * Iceberg's Spark 4.1 runtime and AWS bundle (S3FileIO), fetched once from Maven Central
 * into the shared download cache, for the Spark side of test/integration/iceberg.test.ts.
 */
import { readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fetchMavenLibs } from '../../src/stack/java.js';

export const icebergVersion = '1.11.0';

const pom = `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>offsetlake</groupId><artifactId>spark-iceberg</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-spark-runtime-4.1_2.13</artifactId><version>${icebergVersion}</version></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-aws-bundle</artifactId><version>${icebergVersion}</version></dependency>
  </dependencies>
</project>
`;

/** The jars' paths (both bundles shade what they need). */
export function sparkIcebergJars(): string[] {
  const cache = process.env.OFFSETLAKE_CACHE ?? join(homedir(), '.cache', 'offsetlake');
  const folder = fetchMavenLibs(join(cache, `spark-iceberg-${icebergVersion}`), pom, `Iceberg ${icebergVersion} for Spark 4.1`, {
    log: join(cache, `spark-iceberg-${icebergVersion}-fetch.log`),
    say: (line) => process.stderr.write(`spark: ${line}\n`),
  });
  return readdirSync(folder).filter((name) => name.endsWith('.jar')).map((name) => join(folder, name));
}
