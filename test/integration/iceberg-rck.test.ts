/**
 * Iceberg's REST Compatibility Kit (iceberg-open-api 1.11.0's RESTCompatibilityKitSuite:
 * the Java RESTCatalog driven through iceberg-core's CatalogTests and ViewCatalogTests),
 * run by the JUnit console launcher against serve's Iceberg catalog. Nearly every test
 * creates a namespace or a table first; the Java client refuses those writes itself, since
 * config's endpoints name none. What is recorded: which tests pass, and that every other
 * one fails on a write the catalog does not serve (or on one of the reasons listed here).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { IcebergCatalog } from '../../src/iceberg/rest.js';
import { testEngine } from '../helpers/engine.js';
import { rckJars } from '../helpers/iceberg-jars.js';
import { listeningReader, type ListeningReader } from '../helpers/reader-server.js';

let engine: Engine;
let reader: ListeningReader | undefined;
let endpoint: string;

beforeAll(async () => {
  engine = await testEngine('iceberg_rck');
  const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka));
  reader = await listeningReader(readerHandler(service, { token: null, catalog: new IcebergCatalog(service) }));
  endpoint = reader.url;
}, 120_000);

afterAll(async () => {
  await reader?.stop();
  await engine?.close();
});

interface Outcome {
  test: string;
  result: 'passed' | 'skipped' | 'failed';
  message: string;
}

/** The test cases of a JUnit XML report (the console launcher's legacy format). */
function outcomes(xml: string): Outcome[] {
  const found: Outcome[] = [];
  for (const match of xml.matchAll(/<testcase name="([^"]*)" classname="([^"]*)"[^>]*?(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const body = match[3] ?? '';
    const test = `${match[2]!.split('.').at(-1)}.${match[1]}`;
    const failure = /<(?:failure|error)[^>]*?(?:message="([^"]*)")?[^>]*>([\s\S]*?)<\/(?:failure|error)>/.exec(body);
    if (/<skipped/.test(body)) found.push({ test, result: 'skipped', message: '' });
    else if (failure) found.push({ test, result: 'failed', message: `${failure[1] ?? ''}\n${failure[2] ?? ''}` });
    else found.push({ test, result: 'passed', message: '' });
  }
  return found;
}

describe("Iceberg's REST Compatibility Kit against serve's catalog", () => {
  it('passes the tests a read-only catalog can pass; every other fails on a write the catalog does not serve, or on a reason recorded here', async () => {
    const reports = mkdtempSync(join(tmpdir(), 'offsetlake-rck-'));
    await new Promise<void>((resolve) => {
      execFile('java', ['-Drck.local=false', '-cp', rckJars().join(':'), 'org.junit.platform.console.ConsoleLauncher', 'execute',
        '--select-class', 'org.apache.iceberg.rest.RESTCompatibilityKitSuite', '--details=none', `--reports-dir=${reports}`],
      { env: { ...process.env, CATALOG_URI: `${endpoint}/iceberg`, CATALOG_WAREHOUSE: 'offsetlake' }, timeout: 600_000, maxBuffer: 64 * 1024 * 1024 },
      // the launcher exits 1 when any test fails: the report says which and why
      () => resolve());
    });
    const report = readFileSync(join(reports, 'TEST-junit-platform-suite.xml'), 'utf8');
    rmSync(reports, { recursive: true, force: true });
    const all = outcomes(report);
    expect(all.length).toBe(157);
    const passed = all.filter((o) => o.result === 'passed').map((o) => o.test).sort();
    expect(passed).toEqual([
      'RESTCompatibilityKitCatalogTests.testLoadMissingTable()',
      'RESTCompatibilityKitCatalogTests.testLoadTableWithNonExistingNamespace()',
    ]);
    const failed = all.filter((o) => o.result === 'failed');
    const write = /Server does not support endpoint: (POST|DELETE|PUT) \/v1\//;
    const otherReasons: Record<string, RegExp> = {
      // we add what there is to Iceberg's own words; this test wants them alone
      'RESTCompatibilityKitCatalogTests.testListNonExistingNamespace()': /Expecting message to be:\s+"Namespace does not exist: non-existing"\s+but was:\s+"Namespace does not exist: non-existing \(this catalog has one namespace, main, holding every table\)"/,
      // the catalog serves no views: the client refuses to load one before asking
      'RESTCompatibilityKitViewCatalogTests.loadViewWithNonExistingNamespace()': /Server does not support endpoint GET \/v1\/\{prefix\}\/namespaces\/\{namespace\}\/views\/\{view\}/,
    };
    for (const outcome of failed) {
      const reason = otherReasons[outcome.test];
      expect(outcome.message, outcome.test).toMatch(reason ?? write);
    }
    expect(failed.length).toBe(142);
    // skipped by the kit itself: what its catalog under test says it does not support (nested namespaces, dots, slashes, …)
    expect(all.filter((o) => o.result === 'skipped').length).toBe(13);
  }, 660_000);
});
