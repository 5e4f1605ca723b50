/**
 * A client of `offsetlake serve` during a scenario: the real CLI as a child process, and a
 * loop that asks it for whole files of the table (each rebuilt from Kafka, through
 * whichever broker leads its partition now) and compares every answer's SHA-256 with the
 * catalog's (which the audit checks against an independent rebuild). Reports what a
 * reader saw: files served, read errors, wrong files.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { listFiles } from '../../src/catalog/file-reads.js';
import type { TableRecord } from '../../src/table/record.js';
import { sleep } from '../../src/stack/process.js';
import type { IndexerProcess } from './indexer-process.js';
import type { ChaosStack } from './stack.js';

export interface ServeReadCounts {
  /** Whole files served whose SHA-256 is the catalog's. */
  served: number;
  /** Answers that were not a file (a status other than 200, a connection error): what a client saw fail. */
  errors: number;
  /** Files served whose bytes are not the catalog's: must be 0. */
  wrong: number;
  /** The first few errors, in the server's words. */
  said: string[];
}

function get(port: number, path: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, timeout: 60_000 }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    })
      .on('timeout', function (this: { destroy(error: Error): void }) {
        this.destroy(new Error('no answer within 60 s'));
      })
      .on('error', reject)
      .end();
  });
}

export interface ServeReads {
  /** Waits until `more` files more than now were answered (served, wrong or failed), or `timeoutMs`: a fault between two reads is met by the second. */
  answered(more: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<ServeReadCounts>;
}

/** Starts serve (`start` makes the child) and reads until `stop()`, once a first file was answered (so the faults that follow meet a reader). */
export async function startServeReads(stack: ChaosStack, table: TableRecord, random: () => number, start: (watch: RegExp, args: string[]) => IndexerProcess, log: (line: string) => void): Promise<ServeReads> {
  const began = Date.now();
  const server = start(/serving http:\/\/[^:]+:\d+\//, ['serve', '--no-auth', '--port', '0']);
  const deadline = Date.now() + 60_000;
  while (server.matched.length === 0) {
    if (Date.now() > deadline || (await server.exitedWithin(0))) throw new Error(`serve did not start: ${server.output}`);
    await sleep(100);
  }
  const port = Number(/serving http:\/\/[^:]+:(\d+)\//.exec(server.matched[0]!)![1]);
  log(`  serve answers on port ${port} after ${((Date.now() - began) / 1000).toFixed(1)} s`);
  const counts: ServeReadCounts = { served: 0, errors: 0, wrong: 0, said: [] };
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const files = await listFiles(stack.engine.catalog, table.tableId).catch(() => []);
      if (files.length === 0) {
        await sleep(200);
        continue;
      }
      const file = files[Math.floor(random() * files.length)]!;
      try {
        const answer = await get(port, `/tables/${table.name}/files/${file.dataFileId}.parquet`);
        if (answer.status !== 200) throw new Error(`status ${answer.status}: ${answer.body.toString().slice(0, 200)}`);
        if (createHash('sha256').update(answer.body).digest().equals(file.sha256)) counts.served += 1;
        else counts.wrong += 1;
      } catch (error) {
        counts.errors += 1;
        if (counts.said.length < 3) counts.said.push(`file ${file.dataFileId}: ${(error as Error).message}`);
      }
    }
  })();
  const total = () => counts.served + counts.errors + counts.wrong;
  const answered = async (more: number, timeoutMs = 30_000) => {
    const until = total() + more;
    const deadline = Date.now() + timeoutMs;
    while (total() < until && Date.now() < deadline) await sleep(50);
  };
  await answered(1, 60_000);
  return {
    answered,
    async stop() {
      stopping = true;
      await loop;
      await server.stop();
      return counts;
    },
  };
}
