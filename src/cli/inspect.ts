import { listFiles } from '../catalog/file-reads.js';
import { replacedCounts } from '../catalog/merges.js';
import { findTable } from '../catalog/tables.js';
import { kafkaPerServed, readerTotals, type ReaderTotals } from '../catalog/reader-counters.js';
import { withCatalog, withEngine } from './engine.js';
import { printJson, printTable, progress, UsageError } from './output.js';
import { inspectUsage } from './help.js';
import { indexReports, type IndexReport } from '../catalog/indexes.js';
import { parseCommandArgs } from './args.js';

const options = {
  json: { type: 'boolean' },
  expired: { type: 'boolean' },
  replaced: { type: 'boolean' },
  wide: { type: 'boolean' },
  'database-url': { type: 'string' },
  'kafka-brokers': { type: 'string' },
} as const;

/** `_timestamp` statistics are epoch milliseconds as text. */
function isoTime(millis: string): string {
  return new Date(Number(millis)).toISOString().replace('.000Z', 'Z');
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/** `files NAME`: the catalog's files with offsets, bucket, statistics and seal reason. */
export async function filesCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('files', args, options);
  const name = positionals[0];
  if (!name) throw new UsageError(`files needs a table NAME; usage: ${inspectUsage}`);
  const { files, replaced } = await withCatalog({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
    const table = await findTable(engine.catalog, name);
    return {
      files: await listFiles(engine.catalog, table.tableId, { includeExpired: values.expired, includeReplaced: values.replaced }),
      replaced: await replacedCounts(engine.catalog, table.tableId),
    };
  });
  if (values.json) {
    printJson(files.map(({ footer, sha256, ...file }) => ({ ...file, footerSize: footer.byteLength, sha256: hex(sha256), replacedFiles: replaced.get(file.dataFileId) ?? 0 })));
    return 0;
  }
  // 100 columns: the bucket to the minute, timestamps as times (the bucket gives the day), no
  // sha256; --wide shows them whole
  const wide = values.wide ?? false;
  const clock = (millis: string): string => (wide ? isoTime(millis) : isoTime(millis).slice(11, 19));
  printTable(
    files.map((f) => {
      const ts = f.columns.find((c) => c.columnName === '_timestamp');
      return {
        file: f.dataFileId,
        partition: f.partition,
        offsets: `[${f.startOffset}, ${f.endOffset})`,
        bucket: wide ? f.bucket.toISOString() : f.bucket.toISOString().slice(0, 16).replace('T', ' '),
        rows: f.recordCount,
        bytes: f.fileSizeBytes,
        sealed: f.sealReason,
        timestamps: ts?.min && ts.max ? `${clock(ts.min)}..${clock(ts.max)}` : undefined,
        ...(wide ? { sha256: hex(f.sha256).slice(0, 12) } : {}),
        // a merged file: how many it replaced; a replaced one (--replaced): the merged file that took its records
        merge: replaced.has(f.dataFileId) ? `of ${replaced.get(f.dataFileId)} files` : f.replacedBy !== null ? `into ${f.replacedBy}` : undefined,
        expired: f.expiredAt ?? undefined,
      };
    }),
  );
  return 0;
}

/** Backfill as `status` shows it: offsets left between the target and the cursor, or done. */
function backfillState(cursor: bigint | null, target: bigint | null): string | undefined {
  if (cursor === null || target === null) return undefined;
  return cursor <= target ? `done (from ${target})` : `${cursor - target} left [${target}, ${cursor})`;
}

/** `status`: per partition, indexed range, LSO, lag, lease holder, open range, backfill and retention. */
export async function statusCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('status', args, options);
  // status asks Kafka for each partition's LSO; `files` of this module loads neither this nor the Kafka client
  const { partitionStatus } = await import('../tables/status.js');
  const { rows, reads, indexes } = await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => ({
    rows: await partitionStatus(engine, positionals[0]),
    reads: await readerTotals(engine.catalog),
    indexes: await indexReports(engine.catalog, positionals[0] === undefined ? undefined : (await findTable(engine.catalog, positionals[0])).tableId),
  }));
  // what the catalog says is shown either way; a missing LSO is said, and the exit code is 1
  const unknown = [...new Set(rows.map((row) => row.lsoError).filter((error) => error !== null))];
  for (const error of unknown) progress(`warning: ${error}; LSO and lag are unknown ("-")`);
  const code = unknown.length > 0 ? 1 : 0;
  if (values.json) {
    printJson(rows);
    return code;
  }
  printTable(
    rows.map((s) => ({
      table: s.table,
      partition: s.partition,
      indexed: `[${s.indexedStart}, ${s.indexedEnd})`,
      lso: s.lastStableOffset,
      lag: s.lag,
      lease: s.leaseOwner ? `${s.leaseOwner} #${s.leaseEpoch}${s.leaseLive ? '' : ' (free)'}` : undefined,
      // a holder whose lease lapsed is gone: what it reported is read again by the next one
      open: s.openRangeRecords > 0n ? `${s.openRangeRecords} rec, ${s.openRangeBytes} B${s.leaseLive ? '' : ' (holder gone)'}` : undefined,
      files: s.files,
      expired: s.expiredFiles > 0n ? s.expiredFiles : undefined,
      errors: s.errorRows > 0n ? s.errorRows : undefined,
      lost: s.lostOffsets > 0n ? `${s.lostOffsets} offsets` : undefined,
      earliest: s.earliestOffset,
      backfill: backfillState(s.backfillCursor, s.backfillTarget),
      waiting: s.waitingReason ?? undefined,
      topic: s.topicProblem ?? undefined,
    })),
  );
  const history = new Map<string, bigint>();
  for (const s of rows) {
    if (s.backfillCursor !== null && s.backfillTarget !== null && s.backfillCursor > s.backfillTarget) history.set(s.table, (history.get(s.table) ?? 0n) + s.backfillCursor - s.backfillTarget);
  }
  for (const [table, left] of history) progress(`${table}: ${left} offsets of history are not indexed yet; \`offsetlake backfill ${table}\` indexes them`);
  for (const [table, problem] of new Map(rows.filter((s) => s.topicProblem !== null).map((s) => [s.table, s.topicProblem!]))) progress(`${table}: ${problem}`);
  if (reads.readers > 0) progress(readsLine(reads));
  for (const index of indexes) progress(indexLine(index));
  return code;
}

/** One index in one line: its state, how far its backfill is, its size, how reads used it. */
function indexLine(r: IndexReport): string {
  const backfill = r.state === 'active' || r.filesTotal === 0
    ? ''
    : `, backfill ${r.filesDone}/${r.filesTotal} files (${r.granulesDone} granules, ${(r.bytesRead / 1024 / 1024).toFixed(1)} MiB read)${r.owner ? ` by ${r.owner}` : ', no driver now'}`;
  const skipped = r.filesSkipped.length ? `; ${r.filesSkipped.length} files could not be rebuilt and are read without it` : '';
  return `index ${r.table}.${r.name} (${r.kind.toUpperCase()}): ${r.state}${backfill}, ${r.filesWithEntries} of ${r.filesWithEntries + r.filesWithout} files with entries, ` +
    `${(r.entryBytes / 1024).toFixed(1)} KiB in the catalog; reads used it ${r.readsUsed} times, skipped it ${r.readsSkipped}${skipped}${r.lastError ? `; last error: ${r.lastError}` : ''}`;
}

/** What the readers heard from in the last hour did, in one line (the sums of their counters). */
function readsLine({ readers, counters: c }: ReaderTotals): string {
  const n = (name: string) => c[name] ?? 0;
  const size = (bytes: number) => {
    const [unit, scale] = ([['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const).find(([, at]) => bytes >= at) ?? ['B', 1];
    return unit === 'B' ? `${bytes} B` : `${(bytes / scale).toFixed(1)} ${unit}`;
  };
  const ratio = kafkaPerServed(n('kafkaBytes'), n('bytesServed'));
  return `reads (${readers} reader${readers === 1 ? '' : 's'} in the last hour): ${size(n('bytesServed'))} served, ${size(n('kafkaBytes'))} read from Kafka` +
    `${ratio === null ? '' : ` (${ratio} per byte served)`}; row groups rebuilt ${n('granuleRebuilds')} whole and ${n('partialGranuleRebuilds')} for some columns, ` +
    `files rebuilt whole ${n('rebuilds')}; chunk cache ${n('chunkCacheHits')} hits, ${n('chunkCacheMisses')} misses; mismatches ${n('chunkMismatches') + n('mismatches')}`;
}
