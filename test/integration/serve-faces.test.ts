/**
 * `offsetlake serve` (the command, in a child process) against requests that lie about the
 * address they were sent to or name what cannot be a table: a forged Host and
 * X-Forwarded-Proto walked through the whole Iceberg catalog by requests and fastavro
 * (test/integration/iceberg_forged_host.py), a page rebound to this machine (DNS
 * rebinding) reading a --no-auth serve, a NUL in a table name, one connection too many,
 * a bucket named like serve's own routes. Answers are read over raw sockets and by
 * clients we did not write.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTable } from '../../src/catalog/tables.js';
import type { TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';

const token = 'faces-token';
const forged = 'evil.example:666';
let engine: Engine;
let table: TableRecord;
const children: ChildProcess[] = [];

beforeAll(async () => {
  engine = await testEngine('faces');
  const topic = await newTopic(engine, 1, 'faces');
  const created = await testTable(engine, topic, { granularity: 'hour' });
  const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000;
  // two hours: two manifests in the snapshot
  await produce(engine.kafka, topic, Array.from({ length: 40 }, (_, i) => ({ value: JSON.stringify({ i }), timestamp: hour + (i % 2) * 3_600_000 + i, partition: 0 })));
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  table = await findTable(engine.catalog, created.name);
}, 180_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await engine?.close();
});

interface Served {
  child: ChildProcess;
  said: string;
  url: string;
  port: number;
}

/** `offsetlake serve` with these flags, once it says where it listens. */
async function serve(...flags: string[]): Promise<Served> {
  const child = spawn(process.execPath, ['bin/offsetlake.js', 'serve', '--port', '0', ...flags], { env: { ...process.env, DATABASE_URL: engine.config.databaseUrl }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let said = '';
  for await (const chunk of child.stderr!) {
    said += String(chunk);
    if (said.includes('Ctrl-C stops')) break;
  }
  const url = /serving (https?:\/\/127\.0\.0\.1:(\d+))\/tables/.exec(said);
  if (!url) throw new Error(`serve did not start: ${said}`);
  return { child, said, url: url[1]!, port: Number(url[2]) };
}

async function stop(served: Served): Promise<void> {
  served.child.kill('SIGTERM');
  if (served.child.exitCode === null) await once(served.child, 'exit');
}

/** The exit code and error of a serve that must refuse to start. */
function refusedStart(...flags: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/offsetlake.js', 'serve', '--port', '0', ...flags], { env: { ...process.env, DATABASE_URL: engine.config.databaseUrl }, timeout: 60_000 }, (error, _out, stderr) => resolve({ code: error ? (error as { code: number }).code : 0, stderr }));
  });
}

/** One GET with exactly these headers (Host included: fetch would not send a forged one). */
function get(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (response) => {
      let body = '';
      response.setEncoding('latin1').on('data', (piece: string) => (body += piece)).on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }));
    }).on('error', reject).end();
  });
}

function python<T>(script: string, job: unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const child = execFile('python3', [fileURLToPath(new URL(`./${script}`, import.meta.url))], { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 }, (error, out, err) =>
      (error ? reject(new Error(`${script} failed: ${err.slice(-4000) || error.message}`)) : resolve(JSON.parse(out.trim().split('\n').at(-1)!) as T)));
    child.stdin!.end(JSON.stringify(job));
  });
}

function pythonCode<T>(code: string, job: unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const child = execFile('python3', ['-c', code], { timeout: 60_000 }, (error, out, err) =>
      (error ? reject(new Error(`python failed: ${err.slice(-4000) || error.message}`)) : resolve(JSON.parse(out.trim().split('\n').at(-1)!) as T)));
    child.stdin!.end(JSON.stringify(job));
  });
}

interface Walk {
  endpoint: string | null;
  bodies: Record<string, string>;
  cacheControl: Record<string, string | null>;
}

describe("serve's Iceberg catalog never names an address a request sent", () => {
  it('a forged Host and X-Forwarded-Proto appear in no answer (config, LoadTable with the S3 key pair, metadata, manifest list, manifests), nor in what an honest client gets after; the files below metadata/ are private to the token holder', async () => {
    const served = await serve('--token', token, '--s3-access-key-id', 'faces-key', '--s3-secret-access-key', 'faces-secret', '--iceberg-snapshot-interval', '1ms');
    try {
      const walks = await python<{ forged: Walk; honest: Walk }>('iceberg_forged_host.py', { endpoint: served.url, token, table: table.name, forged });
      for (const walk of [walks.forged, walks.honest]) {
        expect(walk.endpoint).toBe(served.url);
        const urls = Object.keys(walk.bodies);
        // config, LoadTable, the metadata file, a manifest list and the two hours' manifests
        expect(urls.length).toBeGreaterThanOrEqual(6);
        expect(urls.filter((url) => walk.bodies[url]!.includes('evil.example') || walk.bodies[url]!.includes('https://'))).toEqual([]);
        const metadataFiles = urls.filter((url) => url.includes(`/tables/${table.name}/metadata/`));
        expect(metadataFiles.length).toBeGreaterThanOrEqual(4);
        expect(new Set(metadataFiles.map((url) => walk.cacheControl[url]))).toEqual(new Set(['private, max-age=31536000, immutable']));
        expect(walk.cacheControl[`${served.url}/iceberg/v1/offsetlake/namespaces/main/tables/${table.name}`]).toBe('private, no-cache');
      }
    } finally {
      await stop(served);
    }
  }, 180_000);

  it("without the S3 face, files are named by --public-url (or the address the connection reached), never by the Host sent; a --public-url with a path is refused", async () => {
    const headers = { host: forged, 'x-forwarded-proto': 'https', authorization: `Bearer ${token}` };
    const loadTable = `/iceberg/v1/offsetlake/namespaces/main/tables/${table.name}`;
    const published = await serve('--token', token, '--public-url', 'https://lake.example.test:8443/', '--iceberg-snapshot-interval', '1ms');
    try {
      const answer = await get(published.port, loadTable, headers);
      expect(answer.status).toBe(200);
      const loaded = JSON.parse(answer.body) as { 'metadata-location': string; metadata: { location: string } };
      expect(loaded['metadata-location']).toMatch(new RegExp(`^https://lake\\.example\\.test:8443/tables/${table.name}/metadata/`));
      expect(loaded.metadata.location).toBe(`https://lake.example.test:8443/tables/${table.name}`);
      expect(answer.body).not.toContain('evil.example');
    } finally {
      await stop(published);
    }
    const plain = await serve('--token', token, '--iceberg-snapshot-interval', '1ms');
    try {
      const answer = await get(plain.port, loadTable, headers);
      expect((JSON.parse(answer.body) as { metadata: { location: string } }).metadata.location).toBe(`${plain.url}/tables/${table.name}`);
    } finally {
      await stop(plain);
    }
    const refused = await refusedStart('--token', token, '--public-url', 'https://lake.example.test/offsetlake');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--public-url: "https://lake.example.test/offsetlake" must be http:// or https:// with a host and an optional port, no path');
  }, 120_000);
});

describe("serve's names and limits", () => {
  it("a NUL (or any character a name cannot have) in a table name is a 400 in our words on the Iceberg, console and HTTP paths, never Postgres's text", async () => {
    const served = await serve('--token', token);
    try {
      const auth = { host: `127.0.0.1:${served.port}`, authorization: `Bearer ${token}` };
      const cases = [
        `/iceberg/v1/offsetlake/namespaces/main/tables/a%00b`,
        `/console/api/tables/a%00b/files`,
        `/console/api/tables/a%00b/files/1`,
        `/tables/a%00b/files`,
        `/iceberg/v1/offsetlake/namespaces/main/tables/Events`,
      ];
      for (const path of cases) {
        const answer = await get(served.port, path, auth);
        const error = JSON.parse(answer.body) as { error: string | { message: string; type: string } };
        const message = typeof error.error === 'string' ? error.error : error.error.message;
        expect({ path, status: answer.status }).toEqual({ path, status: 400 });
        expect(message).toMatch(/^table name "(a\\u0000b|Events)" must start with a lowercase letter or _, then lowercase letters, digits or _ \(at most 63\)/);
        expect(message).not.toMatch(/invalid byte sequence|UTF8|0x00/);
        if (typeof error.error !== 'string') expect(error.error.type).toBe('BadRequestException');
      }
      // a name that could be a table's and is not one is still a 404
      expect((await get(served.port, '/iceberg/v1/offsetlake/namespaces/main/tables/no_such_table', auth)).status).toBe(404);
      expect((await get(served.port, '/console/api/tables/no_such_table/files', auth)).status).toBe(404);
    } finally {
      await stop(served);
    }
  }, 60_000);

  it('with --no-auth it answers only for loopback names and its own: a page rebound to this machine (DNS rebinding) gets a 421 in our words; --allow-host adds a name', async () => {
    const served = await serve('--no-auth', '--allow-host', 'lake.internal');
    try {
      for (const host of [`127.0.0.1:${served.port}`, `localhost:${served.port}`, `[::1]:${served.port}`, 'LOCALHOST', `lake.internal:${served.port}`]) {
        expect({ host, status: (await get(served.port, '/tables', { host })).status }).toEqual({ host, status: 200 });
      }
      for (const path of ['/tables', `/tables/${table.name}/files`, '/console/api/overview', '/iceberg/v1/config', '/offsetlake?list-type=2']) {
        const rebound = await get(served.port, path, { host: `attacker.example:${served.port}` });
        expect({ path, status: rebound.status }).toEqual({ path, status: 421 });
        expect(JSON.parse(rebound.body).error).toBe('this server does not answer for the host "attacker.example": without authentication it answers only for its own names and loopback ones (give serve --allow-host to add a name)');
        expect(rebound.body).not.toContain(table.name);
      }
    } finally {
      await stop(served);
    }
  }, 60_000);

  it('--max-connections: one connection more is answered a 503 in our words and closed, before its request is read; once one closes, the next is served', async () => {
    const served = await serve('--token', token, '--max-connections', '3');
    const held: Socket[] = [];
    try {
      for (let i = 0; i < 3; i += 1) {
        const socket = connect(served.port, '127.0.0.1');
        await once(socket, 'connect');
        held.push(socket);
      }
      const extra = connect(served.port, '127.0.0.1');
      const pieces: Buffer[] = [];
      extra.on('data', (piece: Buffer) => pieces.push(piece));
      extra.on('error', () => {});
      extra.write(`GET /tables HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
      await once(extra, 'close');
      const answer = Buffer.concat(pieces).toString('latin1');
      expect(answer).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
      expect(answer.toLowerCase()).toContain('connection: close');
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error).toBe('the server is busy: it has 3 connections open, its most (serve --max-connections); try again later, or reuse a connection');
      // one answer only: the request it sent was never handled
      expect(answer.match(/HTTP\/1\.1 /g)).toHaveLength(1);
      held.pop()!.destroy();
      let status = 0;
      for (let attempt = 0; attempt < 50 && status !== 200; attempt += 1) {
        status = (await get(served.port, '/tables', { host: '127.0.0.1', authorization: `Bearer ${token}` })).status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
      await stop(served);
    }
  }, 60_000);

  it('with --tls-cert and --tls-key it speaks HTTPS (a certificate openssl made, verified by requests), and the Iceberg catalog names its files https://', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'offsetlake-tls-'));
    const cert = join(folder, 'cert.pem');
    const key = join(folder, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
    const served = await serve('--token', token, '--tls-cert', cert, '--tls-key', key, '--iceberg-snapshot-interval', '1ms');
    try {
      expect(served.url).toMatch(/^https:\/\//);
      const seen = await pythonCode<{ tables: string[]; location: string; plain: string }>(`
import json, sys, requests
job = json.load(sys.stdin)
auth = {"Authorization": "Bearer " + job["token"]}
tables = requests.get(job["url"] + "/tables", headers=auth, verify=job["cert"], timeout=30).json()["tables"]
loaded = requests.get(job["url"] + "/iceberg/v1/offsetlake/namespaces/main/tables/" + job["table"], headers=auth, verify=job["cert"], timeout=30).json()
try:
    requests.get(job["url"].replace("https://", "http://") + "/tables", headers=auth, timeout=10)
    plain = "answered"
except requests.exceptions.RequestException as error:
    plain = type(error).__name__
print(json.dumps({"tables": [t["name"] for t in tables], "location": loaded["metadata"]["location"], "plain": plain}))
`, { url: served.url, token, cert, table: table.name });
      expect(seen.tables).toContain(table.name);
      expect(seen.location).toBe(`${served.url}/tables/${table.name}`);
      expect(seen.plain).not.toBe('answered');
    } finally {
      await stop(served);
    }
    const half = await refusedStart('--token', token, '--tls-cert', cert);
    rmSync(folder, { recursive: true, force: true });
    expect([half.code, half.stderr.includes('HTTPS needs both --tls-cert (the certificate chain, PEM) and --tls-key (its private key, PEM)')]).toEqual([2, true]);
  }, 60_000);

  it('refuses at start an S3 bucket named like one of its own routes (iceberg, console, tables, metrics), which would take their requests', async () => {
    for (const bucket of ['iceberg', 'console', 'tables', 'metrics']) {
      const refused = await refusedStart('--token', token, '--s3-access-key-id', 'k', '--s3-secret-access-key', 's', '--s3-bucket', bucket);
      expect({ bucket, code: refused.code }).toEqual({ bucket, code: 2 });
      expect(refused.stderr).toContain(`--s3-bucket: "${bucket}" is a path of serve's own (/tables, /metrics, /iceberg, /console are taken); choose another bucket name`);
    }
  }, 120_000);
});
