/**
 * A build worker: runs `checkedChunks` and `buildRangeFiles` for the pool (src/files/pool.ts) on its own thread.
 * Records arrive packed (their bytes moved, not cloned) and chunks go back moved too. A
 * schema is sent once per worker and kept by its key (a schema version never changes), so
 * that the decoders cached per schema object are made once.
 */
import { parentPort } from 'node:worker_threads';
import { checkedChunks } from './granule-chunks.js';
import { buildRangeFiles } from './files.js';
import { unpackRecords } from './record-transfer.js';
import type { WorkerAnswer, WorkerJob } from './pool.js';
import type { TableSchema } from '../schema/table-schema.js';

const schemas = new Map<string, TableSchema>();

parentPort!.on('message', (job: WorkerJob) => {
  let answer: WorkerAnswer;
  const transfer: ArrayBuffer[] = [];
  try {
    if (job.schema) schemas.set(job.schemaKey, job.schema);
    const schema = schemas.get(job.schemaKey);
    if (!schema) throw new Error(`build worker: schema ${job.schemaKey} was never sent`);
    if (job.kind === 'range') {
      const files = job.files.map((file) => ({ bucket: file.bucket, records: unpackRecords(file.records) }));
      // footers, checksums and statistics: small, cloned back
      answer = { id: job.id, range: buildRangeFiles({ ...job.build, schema, range: { ...job.range, files } }) };
    } else {
      const result = checkedChunks({ ...job.chunk, schema, records: unpackRecords(job.records) });
      if ('mismatch' in result) answer = { id: job.id, mismatch: result.mismatch };
      else {
        const chunks = [...result.chunks];
        // bytesOfRange gives each chunk a buffer of its own: moved back, not copied
        for (const [, bytes] of chunks) transfer.push(bytes.buffer as ArrayBuffer);
        answer = { id: job.id, chunks, ...(result.fileBytes ? { fileBytes: result.fileBytes } : {}) };
      }
    }
  } catch (error) {
    const failure = error as Error;
    answer = { id: job.id, error: { name: failure.name, message: failure.message, stack: failure.stack ?? '' } };
  }
  parentPort!.postMessage(answer, transfer);
});
