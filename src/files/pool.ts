/**
 * Builds on every core: a pool of worker threads that run `checkedChunks` (a granule's
 * chunks encoded and checked, for `serve`) and `buildRangeFiles` (a sealed range's files,
 * for `run`) beside the thread that serves or reads Kafka, so that a process with two
 * cores builds two at once. The bytes are the same on any thread (the encoder is a pure
 * function of its input; tests build on both and compare). Workers start on first use and
 * hold the process open only while they have work.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ChunkJob, ChunkResult } from './granule-chunks.js';
import type { RangeBuildInput } from './files.js';
import { packedBuffers, packRecords, type PackedRecords } from './record-transfer.js';
import type { TableSchema } from '../schema/table-schema.js';
import type { NewRange } from '../catalog/file-writes.js';
import type { SealedRange } from '../ranges/sealer.js';

/** A sealed range without its records, which travel packed, one set per file. */
export type RangeShape = Omit<SealedRange, 'files'>;

/** A job without its records and schema, which travel apart. */
export type JobBody =
  | { kind: 'chunks'; chunk: Omit<ChunkJob, 'records' | 'schema'>; records: PackedRecords }
  | { kind: 'range'; build: Omit<RangeBuildInput, 'schema' | 'range'>; range: RangeShape; files: { bucket: number; records: PackedRecords }[] };

/** What the pool posts. */
export type WorkerJob = JobBody & {
  id: number;
  schemaKey: string;
  /** Sent the first time a worker gets a job of this schema. */
  schema?: TableSchema;
};

export type WorkerAnswer =
  | { id: number; chunks: [number, Uint8Array][]; fileBytes?: Uint8Array }
  | { id: number; mismatch: { column: string | null; detail: string } }
  | { id: number; range: NewRange }
  | { id: number; error: { name: string; message: string; stack: string } };

interface PoolWorker {
  worker: Worker;
  jobs: Map<number, { resolve: (answer: WorkerAnswer) => void; reject: (error: Error) => void }>;
  schemas: Set<string>;
}

/**
 * Build threads `serve` uses unless told: a core is kept for the serving thread (Kafka
 * reads, responses), and below 4 cores none, since an engine reading on the same machine
 * takes the others (measured on 2 cores beside DuckDB: no faster, 10 % more CPU; docs/querying.md, "Builds on every core").
 */
export const defaultBuildThreads = availableParallelism() >= 4 ? availableParallelism() - 1 : 0;

/** The worker's module: the bundle's when running bundled (bin/offsetlake.js), else the source through tsx. */
function workerModule(): { url: URL; execArgv?: string[] } {
  if (!import.meta.url.endsWith('.ts')) return { url: new URL('./build-worker.js', import.meta.url) };
  const hasTsx = process.execArgv.some((arg, i) => arg.includes('tsx') && (process.execArgv[i - 1] === '--import' || arg.startsWith('--import')));
  return { url: new URL('./worker.ts', import.meta.url), execArgv: hasTsx ? process.execArgv : [...process.execArgv, '--import', 'tsx'] };
}

export class BuildPool {
  private readonly workers: PoolWorker[] = [];
  private nextId = 0;
  private closed = false;

  constructor(readonly threads: number = defaultBuildThreads) {
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`a build pool needs at least one thread, got ${threads}`);
  }

  /** `checkedChunks` of `job` on the least busy worker. */
  readonly chunks = async (job: ChunkJob): Promise<ChunkResult> => {
    const records = packRecords(job.records);
    const { records: _records, schema, ...chunk } = job;
    const answer = await this.post(schema, { kind: 'chunks', chunk, records }, packedBuffers(records));
    if ('mismatch' in answer) return { mismatch: answer.mismatch };
    if ('chunks' in answer) return { chunks: new Map(answer.chunks), ...(answer.fileBytes ? { fileBytes: answer.fileBytes } : {}) };
    throw new Error('a build worker answered a granule with something else');
  };

  /** `buildRangeFiles` of `input` on the least busy worker. */
  readonly range = async (input: RangeBuildInput): Promise<NewRange> => {
    const { schema, range: { files: bucketFiles, ...range }, ...build } = input;
    const files = bucketFiles.map((file) => ({ bucket: file.bucket, records: packRecords(file.records) }));
    const answer = await this.post(schema, { kind: 'range', build, range, files }, files.flatMap((file) => packedBuffers(file.records)));
    if ('range' in answer) return answer.range;
    throw new Error('a build worker answered a range with something else');
  };

  private post(schema: TableSchema, job: JobBody, transfer: ArrayBuffer[]): Promise<WorkerAnswer> {
    if (this.closed) return Promise.reject(new Error('the build pool was closed'));
    const target = this.leastBusy();
    const id = this.nextId++;
    const schemaKey = schemaKeyOf(schema);
    const message: WorkerJob = { ...job, id, schemaKey, ...(target.schemas.has(schemaKey) ? {} : { schema }) };
    target.schemas.add(schemaKey);
    return new Promise<WorkerAnswer>((resolve, reject) => {
      target.jobs.set(id, { resolve, reject });
      target.worker.ref();
      target.worker.postMessage(message, transfer);
    });
  }

  /** Stops the workers; jobs still running fail. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.splice(0).map((w) => w.worker.terminate()));
  }

  private leastBusy(): PoolWorker {
    if (this.workers.length < this.threads) {
      const idle = this.workers.find((w) => w.jobs.size === 0);
      if (idle) return idle;
      return this.start();
    }
    return this.workers.reduce((a, b) => (b.jobs.size < a.jobs.size ? b : a));
  }

  private start(): PoolWorker {
    const { url, execArgv } = workerModule();
    const worker = new Worker(url, execArgv ? { execArgv } : {});
    const entry: PoolWorker = { worker, jobs: new Map(), schemas: new Set() };
    worker.unref();
    worker.on('message', (answer: WorkerAnswer) => {
      const job = entry.jobs.get(answer.id);
      if (!job) return;
      entry.jobs.delete(answer.id);
      if (entry.jobs.size === 0) worker.unref();
      if ('error' in answer) job.reject(Object.assign(new Error(answer.error.message), { name: answer.error.name, stack: answer.error.stack }));
      else job.resolve(answer);
    });
    const fail = (error: Error): void => {
      const at = this.workers.indexOf(entry);
      if (at >= 0) this.workers.splice(at, 1);
      for (const job of entry.jobs.values()) job.reject(error);
      entry.jobs.clear();
    };
    worker.on('error', (error) => fail(new Error(`a build worker failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => fail(new Error(`a build worker stopped (exit code ${code}) with builds in hand; they are not served`)));
    this.workers.push(entry);
    return entry;
  }
}

/** A schema object's key for the workers' cache (the reader keeps one object per table-schema version, and a version never changes). */
const keys = new WeakMap<TableSchema, string>();
let schemaCount = 0;
function schemaKeyOf(schema: TableSchema): string {
  let key = keys.get(schema);
  if (!key) {
    key = `schema-${schemaCount++}`;
    keys.set(schema, key);
  }
  return key;
}
