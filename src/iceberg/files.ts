/**
 * The files an Iceberg table's metadata names, computed on request from the catalog and
 * never stored, each immutable under its name (below `<location>/metadata/`):
 *
 *   NNNNN-<snapshot id>.metadata.json   the table metadata as of snapshot NNNNN (its
 *                                       sequence number; 00000-<table uuid> before any)
 *   snap-<snapshot id>.avro             the snapshot's manifest list
 *   m-<p>-<r>-<sha256, 16 hex>.avro     the manifest of partition value p as snapshot r
 *                                       left it: named by its content's hash
 *
 * A snapshot's files are grouped by partition value (hour or day), one manifest each, so
 * engines prune whole manifests by time. The manifest of a partition value changes only
 * when a cut adds or removes one of its files (r is the latest such cut up to the
 * snapshot): older hours keep their manifest from snapshot to snapshot, as Iceberg's own
 * writers keep manifests they do not touch. Its entries: ADDED for files r added,
 * EXISTING for earlier ones (with the snapshot and sequence number that added them), and
 * DELETED for files r removed (a merge replaced them, or retention expired them: the
 * spec's "when a file is replaced or deleted from the dataset, its manifest entry fields
 * store the snapshot ID in which the file was deleted and status 2"), with the sequence
 * number that added them. Scans skip DELETED entries; a later snapshot lists a manifest
 * only while it has live files, as Iceberg's writers drop a manifest of deletes alone.
 * Manifests are kept in the reader's byte-bounded cache (given); their names and lengths
 * in a small map beside it.
 */
import { createHash } from 'node:crypto';
import { findFiles, type CatalogFile } from '../catalog/file-reads.js';
import type { TableRecord } from '../table/record.js';
import { HttpError } from '../reader/file-response.js';
import type { Catalog } from '../catalog/db.js';
import type { ByteBoundedCache } from '../reader/cache.js';
import { schemaVersionsUpTo, type VersionedSchema } from '../catalog/schema-versions.js';
import { historyAsOf, membershipsUpTo, snapshotsBySequence, type Membership, type SnapshotHead, type SnapshotRecord } from '../catalog/iceberg-snapshots.js';
import { tableUuid } from '../catalog/tables.js';
import { entryStatus, manifestBytes, manifestListBytes, type ListedManifest, type ManifestFile } from './manifests.js';
import { tableMetadata, type TableMetadata } from './metadata.js';
import { partitionSpec, partitionValue } from './partition.js';
import { icebergSchema } from './schema.js';
import { cutSnapshotIfChanged, type CutOptions } from './snapshots.js';

/** Where files are named: s3://<bucket> or the HTTP face's address. */
export interface Root {
  base: string;
}

export interface IcebergFile {
  bytes: Uint8Array;
  contentType: string;
  modified: Date;
}

const metadataName = /^(\d{5,19})-([0-9a-f-]{1,36})\.metadata\.json$/;
const manifestListName = /^snap-(\d{1,19})\.avro$/;
const manifestName = /^m-(-?\d{1,12})-(\d{1,19})-([0-9a-f]{16})\.avro$/;

/** Files read from the catalog in one query when manifests are built. */
const filesPerQuery = 5_000;

interface ManifestContext {
  snapshots: Map<bigint, SnapshotHead>;
  schemas: Map<number, VersionedSchema>;
}

/** A file below metadata/ as a listing names it: its name there, length, sha256 (hex) and time. */
export interface ListedFile {
  name: string;
  size: number;
  etag: string;
  modified: Date;
}

/** Tables whose listing is kept at most. */
const listingsKept = 1_000;

/** What the service remembers of manifests it built (name, length, counts) at most. */
const manifestInfos = 10_000;

export class IcebergFiles {
  private readonly infos = new Map<string, ListedManifest & { name: string }>();
  /** Each table's listing (by root) as of its snapshots and schema versions. */
  private readonly listings = new Map<string, ListedFile[]>();

  constructor(private readonly catalog: Catalog, private readonly manifests: ByteBoundedCache<Uint8Array>, private readonly cut: CutOptions) {}

  private location(table: TableRecord, root: Root): string {
    return `${root.base}/tables/${table.name}`;
  }

  /** Cuts a snapshot if one is due (src/iceberg/snapshots.ts) and gives the metadata as of the newest. */
  async loadTable(table: TableRecord, root: Root): Promise<{ metadata: TableMetadata; location: string }> {
    const sequence = await cutSnapshotIfChanged(this.catalog, table.tableId, this.cut);
    return this.metadataAsOf(table, sequence, root);
  }

  private async metadataAsOf(table: TableRecord, sequence: bigint, root: Root): Promise<{ metadata: TableMetadata; location: string; modified: Date }> {
    const location = this.location(table, root);
    const history = sequence === 0n ? [] : await historyAsOf(this.catalog, table.tableId, sequence);
    const current = history.at(-1);
    const uuid = await tableUuid(this.catalog, table.tableId);
    const schemas = await schemaVersionsUpTo(this.catalog, table.tableId, current?.schemaVersion ?? 2 ** 31 - 1);
    const name = (s: SnapshotRecord | undefined) => (s ? `${String(s.sequenceNumber).padStart(5, '0')}-${s.snapshotId}` : `00000-${uuid}`) + '.metadata.json';
    const metadata = tableMetadata({
      tableUuid: uuid,
      location,
      createdAt: table.createdAt,
      schemas,
      spec: partitionSpec(schemas.at(-1)!.schema, table.settings.granularity),
      properties: {
        'offsetlake.topic': table.topic,
        'offsetlake.format': table.format,
        'offsetlake.granularity': table.settings.granularity,
        'write.format.default': 'parquet',
      },
      snapshots: history.map((s) => ({ ...s, manifestList: `${location}/metadata/snap-${s.snapshotId}.avro` })),
      metadataLog: history.slice(0, -1).map((s) => ({ timestampMs: s.cutAt.getTime(), file: `${location}/metadata/${name(s)}` })),
    });
    return { metadata, location: `${location}/metadata/${name(current)}`, modified: current?.cutAt ?? table.createdAt };
  }

  /** A file below the table's metadata/, by name; HttpError 404 for a name that is not one (or no longer is). */
  async file(table: TableRecord, name: string, root: Root): Promise<IcebergFile> {
    const gone = (why: string) => new HttpError(404, `table ${table.name} has no metadata file ${name}: ${why}`);
    let match = metadataName.exec(name);
    if (match) {
      const sequence = BigInt(match[1]!);
      const snapshots = await snapshotsBySequence(this.catalog, table.tableId);
      if (sequence !== 0n && String(snapshots.get(sequence)?.snapshotId) !== match[2]) throw gone(`no snapshot ${match[2]} has sequence number ${sequence}`);
      const built = await this.metadataAsOf(table, sequence, root);
      if (!built.location.endsWith(`/${name}`)) throw gone('that is not the name of its metadata before its first snapshot');
      return { bytes: Buffer.from(JSON.stringify(built.metadata)), contentType: 'application/json', modified: built.modified };
    }
    match = manifestListName.exec(name);
    if (match) {
      const snapshotId = BigInt(match[1]!);
      const context = await this.context(table);
      const sequence = [...context.snapshots].find(([, s]) => s.snapshotId === snapshotId)?.[0];
      if (sequence === undefined) throw gone(`it has no snapshot ${snapshotId}`);
      return (await this.manifestList(table, context, sequence, root)).file;
    }
    match = manifestName.exec(name);
    if (match) {
      const built = await this.manifest(table, await this.context(table), Number(match[1]), BigInt(match[2]!), root);
      if (!built || built.info.name !== name) throw gone('no snapshot has that manifest (its content hash differs)');
      return built.file;
    }
    throw gone('names are NNNNN-<snapshot id>.metadata.json, snap-<snapshot id>.avro and m-<partition>-<sequence>-<hash>.avro, as the table metadata gives them');
  }

  /**
   * Every file below the table's metadata/ that `file` answers, by name, length, sha256
   * (hex: its ETag) and time: the metadata before any snapshot, and of each snapshot the
   * catalog keeps its metadata, manifest list and the manifests that list names. A snapshot
   * that is due is cut first, as LoadTable cuts it, so the newest metadata listed is the one
   * LoadTable would give. What the files are depends only on the snapshots kept and the
   * schema versions, so the answer is kept until either changes (a listing of the whole
   * bucket, as a glob sends, then costs two queries a table).
   */
  async listing(table: TableRecord, root: Root): Promise<ListedFile[]> {
    await cutSnapshotIfChanged(this.catalog, table.tableId, this.cut);
    const context = await this.context(table);
    const key = `${table.tableId}:${root.base}:${context.schemas.size}:${[...context.snapshots.keys()].join(',')}`;
    const kept = this.listings.get(key);
    if (kept) return kept;
    const listed = new Map<string, ListedFile>();
    const add = (name: string, file: IcebergFile) => listed.set(name, { name, size: file.bytes.byteLength, etag: createHash('sha256').update(file.bytes).digest('hex'), modified: file.modified });
    const addMetadata = async (sequence: bigint) => {
      const built = await this.metadataAsOf(table, sequence, root);
      add(built.location.slice(built.location.lastIndexOf('/') + 1), { bytes: Buffer.from(JSON.stringify(built.metadata)), contentType: 'application/json', modified: built.modified });
    };
    await addMetadata(0n);
    for (const [sequence, snapshot] of context.snapshots) {
      await addMetadata(sequence);
      const list = await this.manifestList(table, context, sequence, root);
      add(`snap-${snapshot.snapshotId}.avro`, list.file);
      for (const info of list.manifests) {
        if (listed.has(info.name)) continue;
        const manifest = await this.manifest(table, context, info.partitionLower, info.sequenceNumber, root);
        if (manifest) add(info.name, manifest.file);
      }
    }
    const files = [...listed.values()];
    for (const old of [...this.listings.keys()]) if (old.startsWith(`${table.tableId}:${root.base}:`)) this.listings.delete(old);
    if (this.listings.size >= listingsKept) this.listings.delete(this.listings.keys().next().value!);
    this.listings.set(key, files);
    return files;
  }

  /** Snapshot `sequence`'s manifest list (one manifest per partition value with live files), and the manifests it names. */
  private async manifestList(table: TableRecord, context: ManifestContext, sequence: bigint, root: Root): Promise<{ file: IcebergFile; manifests: (ListedManifest & { name: string })[] }> {
    const snapshot = context.snapshots.get(sequence)!;
    const byPartition = new Map<number, Membership[]>();
    for (const member of await membershipsUpTo(this.catalog, table.tableId, sequence)) {
      const p = partitionValue(member.bucket.getTime(), table.settings.granularity);
      const list = byPartition.get(p);
      if (list) list.push(member);
      else byPartition.set(p, [member]);
    }
    const wanted: { p: number; written: bigint; members: Membership[] }[] = [];
    for (const [p, members] of [...byPartition].sort(([a], [b]) => a - b)) {
      if (!members.some((m) => live(m, sequence) || m.removedSequence === sequence)) continue;
      // the latest cut up to this snapshot that added or removed a file of p
      const written = members.reduce((latest, m) => {
        const events = [m.addedSequence, ...(m.removedSequence !== null && m.removedSequence <= sequence ? [m.removedSequence] : [])];
        return events.reduce((a, b) => (b > a ? b : a), latest);
      }, 0n);
      wanted.push({ p, written, members });
    }
    // Manifests not built yet are built in batches whose files are read in one query each:
    // a round trip per manifest was most of a cold list's time, and all files at once would
    // hold every footer of the table in memory.
    const built = new Map<number, ListedManifest & { name: string }>();
    let batch: typeof wanted = [];
    let batchFiles = 0;
    const flush = async () => {
      const files = await findFiles(this.catalog, table.tableId, batch.flatMap((w) => w.members.filter((m) => inManifestOf(m, w.written)).map((m) => m.dataFileId)));
      const byId = new Map(files.map((file) => [file.dataFileId, file]));
      for (const w of batch) {
        const manifest = await this.manifest(table, context, w.p, w.written, root, w.members, byId);
        if (manifest) built.set(w.p, manifest.info);
      }
      batch = [];
      batchFiles = 0;
    };
    for (const w of wanted) {
      const cached = this.cachedManifest(table, w.p, w.written, root);
      if (cached) {
        built.set(w.p, cached);
        continue;
      }
      batch.push(w);
      batchFiles += w.members.length;
      if (batchFiles >= filesPerQuery) await flush();
    }
    if (batch.length > 0) await flush();
    const listed = wanted.flatMap((w) => (built.has(w.p) ? [built.get(w.p)!] : []));
    const spec = partitionSpec(context.schemas.get(snapshot.schemaVersion)!.schema, table.settings.granularity);
    const parent = context.snapshots.get(sequence - 1n)?.snapshotId ?? null;
    return { file: { bytes: manifestListBytes(listed, { snapshotId: snapshot.snapshotId, parentSnapshotId: parent, sequenceNumber: sequence }, spec), contentType: 'application/octet-stream', modified: snapshot.cutAt }, manifests: listed };
  }

  /** What building manifests of the table needs of every snapshot and schema version, read once per request. */
  private async context(table: TableRecord): Promise<ManifestContext> {
    const snapshots = await snapshotsBySequence(this.catalog, table.tableId);
    const schemas = await schemaVersionsUpTo(this.catalog, table.tableId, 2 ** 31 - 1);
    return { snapshots, schemas: new Map(schemas.map((s) => [s.version, s])) };
  }

  /**
   * The root is part of a manifest's bytes (its files' locations), so of its key: serve's
   * public URL or the address a connection reached, never a request header, so a client
   * can neither put its own address into what others get nor grow the cache with names.
   */
  private manifestKey(table: TableRecord, p: number, written: bigint, root: Root): string {
    return `iceberg:${table.tableId}:${root.base}:${p}:${written}`;
  }

  /** A manifest built before whose bytes are still cached. */
  private cachedManifest(table: TableRecord, p: number, written: bigint, root: Root): (ListedManifest & { name: string }) | undefined {
    const key = this.manifestKey(table, p, written, root);
    const info = this.infos.get(key);
    return info && this.manifests.get(key) instanceof Uint8Array ? info : undefined;
  }

  /**
   * The manifest of partition value `p` as snapshot `written` left it (its live files of
   * p then, and those it removed), with its name; null when it holds no file. `members`: the memberships up to
   * some snapshot at or after `written`, and `files` the data files, when the caller has them.
   */
  private async manifest(table: TableRecord, context: ManifestContext, p: number, written: bigint, root: Root, members?: readonly Membership[], files?: ReadonlyMap<bigint, CatalogFile>): Promise<{ info: ListedManifest & { name: string }; file: IcebergFile } | null> {
    const key = this.manifestKey(table, p, written, root);
    const writer = context.snapshots.get(written);
    if (!writer) return null;
    const modified = writer.cutAt;
    const cachedInfo = this.infos.get(key);
    const cachedBytes = this.manifests.get(key);
    if (cachedInfo && cachedBytes instanceof Uint8Array) return { info: cachedInfo, file: { bytes: cachedBytes, contentType: 'application/octet-stream', modified } };
    const all = members ?? (await membershipsUpTo(this.catalog, table.tableId, written));
    const inManifest = all.filter((m) => inManifestOf(m, written) && partitionValue(m.bucket.getTime(), table.settings.granularity) === p);
    if (inManifest.length === 0) return null;
    const ids = new Map([...context.snapshots].map(([sequence, s]) => [sequence, s.snapshotId]));
    const current = context.schemas.get(writer.schemaVersion)!;
    const spec = partitionSpec(current.schema, table.settings.granularity);
    const byFile = files ?? new Map((await findFiles(this.catalog, table.tableId, inManifest.map((m) => m.dataFileId))).map((file) => [file.dataFileId, file]));
    // a file has at most one membership in one snapshot's manifest (live at `written`, or removed by it)
    const entries: ManifestFile[] = [...inManifest].sort((a, b) => (a.dataFileId < b.dataFileId ? -1 : a.dataFileId > b.dataFileId ? 1 : 0)).map((m) => {
      const file = byFile.get(m.dataFileId)!;
      const deleted = m.removedSequence === written;
      return {
        file,
        location: `${this.location(table, root)}/files/${file.dataFileId}.parquet`,
        schema: context.schemas.get(file.schemaVersion)!.schema,
        partition: p,
        status: deleted ? entryStatus.deleted : m.addedSequence === written ? entryStatus.added : entryStatus.existing,
        snapshotId: ids.get(deleted ? written : m.addedSequence)!,
        sequenceNumber: m.addedSequence,
      };
    });
    const bytes = manifestBytes(entries, { table: current.schema, iceberg: icebergSchema(current.schema, current.version) }, spec);
    const name = `m-${p}-${written}-${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}.avro`;
    const addedEntries = entries.filter((e) => e.status === entryStatus.added);
    const deletedEntries = entries.filter((e) => e.status === entryStatus.deleted);
    const existingEntries = entries.filter((e) => e.status === entryStatus.existing);
    const rows = (list: ManifestFile[]) => list.reduce((sum, e) => sum + e.file.recordCount, 0n);
    const info: ListedManifest & { name: string } = {
      name,
      path: `${this.location(table, root)}/metadata/${name}`,
      length: bytes.byteLength,
      addedSnapshotId: ids.get(written)!,
      sequenceNumber: written,
      minSequenceNumber: entries.reduce((least, e) => (e.sequenceNumber < least ? e.sequenceNumber : least), written),
      addedFiles: addedEntries.length,
      existingFiles: existingEntries.length,
      deletedFiles: deletedEntries.length,
      addedRows: rows(addedEntries),
      existingRows: rows(existingEntries),
      deletedRows: rows(deletedEntries),
      partitionLower: p,
      partitionUpper: p,
    };
    if (this.infos.size >= manifestInfos) this.infos.delete(this.infos.keys().next().value!);
    this.infos.set(key, info);
    this.manifests.set(key, bytes);
    return { info, file: { bytes, contentType: 'application/octet-stream', modified } };
  }
}

/** Whether the file is in snapshot `sequence`. */
function live(member: Membership, sequence: bigint): boolean {
  return member.addedSequence <= sequence && (member.removedSequence === null || member.removedSequence > sequence);
}

/** Whether a manifest snapshot `written` wrote has an entry for the membership: live then, or removed by it. */
function inManifestOf(member: Membership, written: bigint): boolean {
  return live(member, written) || member.removedSequence === written;
}
