/**
 * serve's limits against clients that misbehave on purpose, over real sockets to the node
 * server, the broker and Postgres: clients that open reads needing a rebuild and never read
 * the bodies (they held the shared response budget forever, so every rebuild waited), a
 * client that reads steadily but slowly (it held its share for as long as its file took),
 * and a client that keeps uploading a body after its 401 (serve read it all).
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { listeningReader, type ListeningReader } from '../helpers/reader-server.js';

const token = 'limits-token';
let engine: Engine;
let table: TableRecord;
let files: CatalogFile[];
let service: ReaderService;
let reader: ListeningReader | undefined;
let port: number;

// Two files of ~8 MB of random hex, one per hour, pages uncompressed (ZSTD, the default,
// would halve hex): larger than what a client that does not read can take into its socket
// buffers, so its response stalls.
beforeAll(async () => {
  engine = await testEngine('limits');
  const topic = await newTopic(engine, 1, 'limits');
  const created = await testTable(engine, topic, { row_group_rows: '2000', file_window: '2h', granularity: 'hour', compression: 'none' });
  const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000;
  for (let bucket = 0; bucket < 2; bucket += 1) {
    for (let from = 0; from < 8_000; from += 4_000) {
      await produce(engine.kafka, topic, Array.from({ length: 4_000 }, (_, j) => ({ value: JSON.stringify({ i: from + j, hex: randomBytes(500).toString('hex') }), timestamp: hour + bucket * 3_600_000 + from + j, partition: 0 })));
    }
  }
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  table = await findTable(engine.catalog, created.name);
  files = await listFiles(engine.catalog, table.tableId);
  // Room for one file's response at a time: one stalled client is enough to block the rest.
  service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024, responseBytes: 10 * 1024 * 1024, responseWaitMs: 3_000, publishEveryMs: 0 });
  reader = await listeningReader(readerHandler(service, { token }), { writeTimeoutMs: 2_000, onWriteTimeout: () => service.meter.count('writeTimeouts') });
  port = reader.port;
}, 180_000);

afterAll(async () => {
  await reader?.stop();
  await engine?.close();
});

const filePath = (file: CatalogFile) => `/tables/${table.name}/files/${file.dataFileId}.parquet`;

/** A raw connection that sends one GET and reads nothing until `read()` is called. */
function silentReader(path: string): { socket: Socket; read: () => Promise<Buffer> } {
  const socket = connect(port, '127.0.0.1');
  socket.pause();
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  const read = async () => {
    const pieces: Buffer[] = [];
    socket.on('data', (piece: Buffer) => pieces.push(piece));
    socket.on('error', () => {});
    socket.resume();
    if (!socket.closed) await once(socket, 'close');
    return Buffer.concat(pieces);
  };
  return { socket, read };
}

/**
 * A raw connection that sends one GET and reads the answer at about `bytesPerSecond`, in
 * the pieces the socket gives, pausing between them only as long as the pace asks.
 */
function pacedReader(to: number, path: string, bytesPerSecond: number): { done: Promise<Buffer>; longestPauseMs: () => number; hurry: () => void } {
  const socket = connect(to, '127.0.0.1');
  const pieces: Buffer[] = [];
  let received = 0;
  let longest = 0;
  const startedAt = performance.now();
  let paced = true;
  socket.on('data', (piece: Buffer) => {
    pieces.push(piece);
    received += piece.byteLength;
    if (!paced) return;
    const ahead = startedAt + (received / bytesPerSecond) * 1000 - performance.now();
    if (ahead > 0) {
      longest = Math.max(longest, ahead);
      socket.pause();
      setTimeout(() => socket.resume(), ahead);
    }
  });
  socket.on('error', () => {});
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  const done = new Promise<Buffer>((resolve) => socket.once('close', () => resolve(Buffer.concat(pieces))));
  return { done, longestPauseMs: () => longest, hurry: () => (paced = false) };
}

/** Until `condition` holds (the server has taken the requests in); not a timing assertion. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("serve's limits on clients that misbehave", () => {
  it('20 clients that never read their rebuilt files are cut off or told 503 with Retry-After, a client that leaves while queued is dropped, and a reader honouring Retry-After gets its own rebuilt file whole', async () => {
    expect(files.length).toBe(2);
    const [stalled, wanted] = files as [CatalogFile, CatalogFile];
    expect(Number(stalled.fileSizeBytes)).toBeGreaterThan(6 * 1024 * 1024);
    const before = service.metrics.requests;
    const silent = Array.from({ length: 20 }, () => silentReader(filePath(stalled)));
    await until(() => service.metrics.requests >= before + 20);
    // Clients that leave while they wait for room: their place in line is given up.
    const leaving = Array.from({ length: 3 }, () => silentReader(filePath(stalled)));
    await until(() => service.metrics.requests >= before + 23);
    for (const { socket } of leaving) socket.destroy();

    const rebuildsBefore = service.metrics.granuleRebuilds;
    let answer: Response | undefined;
    const retryAfter: string[] = [];
    for (let attempt = 0; attempt < 60; attempt += 1) {
      answer = await fetch(`http://127.0.0.1:${port}${filePath(wanted)}`, { headers: { authorization: `Bearer ${token}` } });
      if (answer.status !== 503) break;
      const told = answer.headers.get('retry-after');
      retryAfter.push(told ?? 'none');
      expect(JSON.parse(await answer.text()).error).toMatch(/^the server is busy: no room for this response came free within \d+ s/);
      await new Promise((resolve) => setTimeout(resolve, Number(told) * 1000));
    }
    expect(answer!.status).toBe(200);
    const body = Buffer.from(await answer!.arrayBuffer());
    expect(body.byteLength).toBe(Number(wanted.fileSizeBytes));
    expect(createHash('sha256').update(body).digest('hex')).toBe(wanted.sha256.toString('hex'));
    expect(service.metrics.granuleRebuilds).toBeGreaterThan(rebuildsBefore);
    for (const told of retryAfter) expect(told).toMatch(/^\d+$/);

    // Each silent client, reading at last, finds the server gave up on it: a 503, or its
    // file cut short of its Content-Length (the connection closed by the write deadline).
    const outcomes = await Promise.all(silent.map(async ({ read }) => {
      const got = await read();
      const head = got.subarray(0, Math.max(0, got.indexOf('\r\n\r\n'))).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
      const bodyBytes = got.byteLength - head.length - 4;
      return status === 503 ? 'busy' : status === 200 && bodyBytes < length ? 'cut off' : `${status}: ${bodyBytes} of ${length} bytes`;
    }));
    expect(outcomes.filter((o) => o !== 'busy' && o !== 'cut off')).toEqual([]);
    expect(outcomes).toContain('cut off');
    expect(outcomes).toContain('busy');
    expect(service.metrics.writeTimeouts).toBe(outcomes.filter((o) => o === 'cut off').length);
    expect(service.metrics.abandoned).toBe(3);
    // Everything the stalled responses held is back.
    await until(() => service.serving.budget.bytes.inUse === 0);
    expect(service.serving.budget.bytes.queued).toBe(0);
  }, 240_000);

  it('a client that reads its file steadily but slowly (250 KB/s, never stalling) is cut off by the least rate, and frees the response budget for a whole-file read that must wait for it', async () => {
    // One file of ~20 MB (pages uncompressed, as above): after the kernels' buffers take their few MB, a client taking
    // 250 KB/s needs a minute more to be handed the rest. The write deadline alone (20 s
    // with no byte taken) never fires for it; the least rate (1 MiB/s over those 20 s)
    // cuts it off at the first window.
    const topic = await newTopic(engine, 1, 'limits_large');
    const created = await testTable(engine, topic, { row_group_rows: '4000', file_window: '2h', granularity: 'hour', compression: 'none' });
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000;
    for (let from = 0; from < 20_000; from += 4_000) {
      await produce(engine.kafka, topic, Array.from({ length: 4_000 }, (_, j) => ({ value: JSON.stringify({ i: from + j, hex: randomBytes(500).toString('hex') }), timestamp: hour + from + j, partition: 0 })));
    }
    await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
    const [large] = await listFiles(engine.catalog, (await findTable(engine.catalog, created.name)).tableId);
    expect(Number(large!.fileSizeBytes)).toBeGreaterThan(18 * 1024 * 1024);
    // Room for the large file's share (16 MiB, what a streamed response holds at most) and not one more file.
    const paced = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024, responseBytes: 20 * 1024 * 1024, responseWaitMs: 3_000, publishEveryMs: 0 });
    const server = await listeningReader(readerHandler(paced, { token }), { writeTimeoutMs: 20_000, minRateBytesPerSecond: 1024 * 1024, onWriteTimeout: () => paced.meter.count('writeTimeouts') });
    try {
      const wanted = files[1]!;
      const slow = pacedReader(server.port, `/tables/${created.name}/files/${large!.dataFileId}.parquet`, 250_000);
      await until(() => paced.serving.budget.bytes.inUse > 0);
      const startedAt = performance.now();
      let answer: Response | undefined;
      // Retrying as told for at most 45 s: the slow client holds its share longer than that
      // unless it is cut off (the window is 20 s).
      while (performance.now() - startedAt < 45_000) {
        answer = await fetch(`http://127.0.0.1:${server.port}${filePath(wanted)}`, { headers: { authorization: `Bearer ${token}` } });
        if (answer.status !== 503) break;
        await answer.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, Number(answer!.headers.get('retry-after')) * 1000));
      }
      expect(answer!.status).toBe(200);
      const body = Buffer.from(await answer!.arrayBuffer());
      expect(createHash('sha256').update(body).digest('hex')).toBe(wanted.sha256.toString('hex'));
      // what the kernels still hold for the slow client, read at once
      const pausedAtMost = slow.longestPauseMs();
      slow.hurry();
      const got = await slow.done;
      const head = got.subarray(0, got.indexOf('\r\n\r\n')).toString('latin1');
      expect(head).toMatch(/^HTTP\/1\.1 200 /);
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
      expect(length).toBe(Number(large!.fileSizeBytes));
      // cut off short of its Content-Length, having read steadily all along
      expect(got.byteLength - head.length - 4).toBeLessThan(length);
      expect(pausedAtMost).toBeLessThan(2_000);
      expect(paced.metrics.writeTimeouts).toBe(1);
      await until(() => paced.serving.budget.bytes.inUse === 0);
    } finally {
      await server.stop();
    }
  }, 240_000);

  it('a client that keeps sending a huge request body after its 401 gets the 401 and is cut off: the server stops reading and closes the connection', async () => {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(`POST /tables HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: ${1024 ** 4}\r\n\r\n`);
    const received: Buffer[] = [];
    socket.on('data', (piece: Buffer) => received.push(piece));
    socket.on('error', () => {});
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    let stopped = false;
    void closed.then(() => (stopped = true));
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    let sent = 0;
    // Upload as fast as the server takes it, up to 4 GiB: a server that kept reading would take it all.
    while (!stopped && !socket.destroyed && sent < 4 * 1024 ** 3) {
      if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed]);
      sent += chunk.byteLength;
    }
    await closed;
    const answer = Buffer.concat(received).toString('latin1');
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer).toContain('this server needs a bearer token');
    // What the kernels' buffers took before the close, not the 4 GiB.
    expect(sent).toBeLessThan(256 * 1024 * 1024);
  }, 120_000);
});
