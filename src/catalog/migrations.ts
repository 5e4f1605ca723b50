/**
 * The catalog's DDL, one numbered migration each, applied in order and never edited
 * once released: a change is a new migration.
 *
 * Names follow DuckLake's catalog (`ducklake_data_file`, `ducklake_file_column_stats`:
 * data_file_id, table_id, record_count, file_size_bytes, footer_size, column_id,
 * null_count, min_value, max_value) so that a DuckLake-compatible view is a SELECT
 * over these tables, not a rewrite. Offsets are bigint, half-open: [start, end).
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const catalogSchema = 'offsetlake';

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'tables, partitions, files, statistics, schemas, jobs',
    sql: `
CREATE TABLE lake_table (
  table_id      bigserial PRIMARY KEY,
  table_uuid    uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  table_name    text NOT NULL,
  topic         text NOT NULL,
  format        text NOT NULL,
  -- file_bytes, file_window, granularity, history, backfill_offsets, retention_check,
  -- lease_ttl, row_group_rows: every setting stored resolved, defaults included, so a
  -- later change of a default never changes how an existing table is indexed.
  settings      jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  dropped_at    timestamptz
);
-- One live table per name; dropped tables stay as history.
CREATE UNIQUE INDEX lake_table_live_name ON lake_table (table_name) WHERE dropped_at IS NULL;

CREATE TABLE lake_partition (
  table_id            bigint NOT NULL REFERENCES lake_table ON DELETE CASCADE,
  partition_id        integer NOT NULL CHECK (partition_id >= 0),
  -- [indexed_start, indexed_end): offsets already covered by files.
  indexed_start       bigint NOT NULL CHECK (indexed_start >= 0),
  indexed_end         bigint NOT NULL,
  -- Lease: the right to index this partition. The epoch grows on every takeover; a
  -- commit must name the current owner and epoch before lease_expires_at (Postgres clock).
  lease_owner         text,
  lease_epoch         bigint NOT NULL DEFAULT 0,
  lease_expires_at    timestamptz,
  -- Backfill walks down from indexed_start to backfill_target; the cursor is where the
  -- next chunk ends (exclusive). NULL target: nothing to backfill.
  backfill_cursor     bigint,
  backfill_target     bigint,
  earliest_offset     bigint,
  earliest_checked_at timestamptz,
  -- What the lease holder keeps in memory, reported with each renewal (for status):
  -- the open range from indexed_end, its bytes and records, and when its first record was read.
  open_range_bytes    bigint NOT NULL DEFAULT 0,
  open_range_records  bigint NOT NULL DEFAULT 0,
  open_range_since    timestamptz,
  -- Why the holder is not indexing, when it is not (e.g. waiting for the Schema Registry).
  waiting_reason      text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (table_id, partition_id),
  CHECK (indexed_end >= indexed_start)
);

CREATE TABLE table_schema (
  table_id        bigint NOT NULL REFERENCES lake_table ON DELETE CASCADE,
  schema_version  integer NOT NULL CHECK (schema_version >= 1),
  -- The merged table schema: columns with their Parquet types, in order.
  schema          jsonb NOT NULL,
  -- Registry schema ids merged into this version.
  source_schema_ids integer[] NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (table_id, schema_version)
);

CREATE TABLE table_column (
  table_id        bigint NOT NULL REFERENCES lake_table ON DELETE CASCADE,
  column_id       integer NOT NULL,
  column_name     text NOT NULL,
  column_type     text NOT NULL,
  column_order    integer NOT NULL,
  parent_column   integer,
  nulls_allowed   boolean NOT NULL DEFAULT true,
  -- Column lifetime in table-schema versions: [begin_schema_version, end_schema_version).
  begin_schema_version integer NOT NULL,
  end_schema_version   integer,
  PRIMARY KEY (table_id, column_id, begin_schema_version)
);

CREATE TABLE data_file (
  data_file_id     bigserial PRIMARY KEY,
  table_id         bigint NOT NULL,
  partition_id     integer NOT NULL,
  -- The range's offsets, [start_offset, end_offset); the files of one range (one per
  -- time bucket) share them and split its records by bucket.
  start_offset     bigint NOT NULL CHECK (start_offset >= 0),
  end_offset       bigint NOT NULL,
  time_bucket      timestamptz NOT NULL,
  record_count     bigint NOT NULL CHECK (record_count >= 0),
  file_size_bytes  bigint NOT NULL CHECK (file_size_bytes > 0),
  footer_size      integer NOT NULL CHECK (footer_size > 0),
  footer           bytea NOT NULL,
  sha256           bytea NOT NULL CHECK (length(sha256) = 32),
  seal_reason      text NOT NULL CHECK (seal_reason IN
                     ('bytes', 'span', 'age', 'bucket', 'flush', 'capacity', 'chunk')),
  schema_version   integer NOT NULL,
  encoder_version  text NOT NULL,
  -- live: the indexer; backfill: a chunk below indexed_start.
  source           text NOT NULL CHECK (source IN ('live', 'backfill')),
  lease_epoch      bigint NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  -- Set when Kafka's earliest offset passed start_offset: the file cannot be rebuilt.
  expired_at       timestamptz,
  FOREIGN KEY (table_id, partition_id) REFERENCES lake_partition ON DELETE CASCADE,
  FOREIGN KEY (table_id, schema_version) REFERENCES table_schema,
  CHECK (end_offset > start_offset),
  UNIQUE (table_id, partition_id, start_offset, time_bucket)
);
CREATE INDEX data_file_by_offset ON data_file (table_id, partition_id, start_offset);
CREATE INDEX data_file_by_bucket ON data_file (table_id, time_bucket);

CREATE TABLE file_column_stats (
  data_file_id   bigint NOT NULL REFERENCES data_file ON DELETE CASCADE,
  table_id       bigint NOT NULL,
  column_id      integer NOT NULL,
  -- Exact, computed by us over every value: not the writer's (possibly truncated) ones.
  -- min_value and max_value are the Parquet logical value as text, NULL when all null.
  value_count    bigint NOT NULL,
  null_count     bigint NOT NULL,
  nan_count      bigint NOT NULL DEFAULT 0,
  min_value      text,
  max_value      text,
  column_size_bytes bigint,
  PRIMARY KEY (data_file_id, column_id)
);

CREATE TABLE job (
  job_id        bigserial PRIMARY KEY,
  kind          text NOT NULL CHECK (kind IN ('backfill', 'retention', 'discovery', 'index_build')),
  table_id      bigint REFERENCES lake_table ON DELETE CASCADE,
  partition_id  integer,
  state         text NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
  detail        jsonb NOT NULL DEFAULT '{}',
  error         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz
);
CREATE INDEX job_by_table ON job (table_id, kind, state);
`,
  },
  {
    version: 2,
    name: 'backfill chunk claims',
    sql: `
-- The right to commit a backfill chunk of a partition, apart from the live lease so that
-- backfill and live indexing never wait for each other's lease. Like a lease: the epoch
-- grows on every takeover, and a chunk's commit names owner and epoch before
-- backfill_expires_at (Postgres clock), in the transaction that inserts its files.
ALTER TABLE lake_partition
  ADD COLUMN backfill_owner      text,
  ADD COLUMN backfill_epoch      bigint NOT NULL DEFAULT 0,
  ADD COLUMN backfill_expires_at timestamptz;
`,
  },
  {
    version: 3,
    name: 'statistics Postgres text cannot hold',
    sql: `
-- Postgres text cannot hold U+0000, which a string, JSON or header-key statistic may
-- contain. Such a bound is kept exactly as its UTF-8 bytes here, and min_value /
-- max_value are NULL: a planner that reads only the text columns (DuckLake) takes the
-- bound as unknown and keeps the file; it never prunes it wrongly.
ALTER TABLE file_column_stats
  ADD COLUMN min_value_utf8 bytea,
  ADD COLUMN max_value_utf8 bytea;
`,
  },
  {
    version: 4,
    name: 'lost intervals',
    sql: `
-- Offsets Kafka deleted before anyone indexed them (an indexer down longer than
-- retention.ms, DeleteRecords past indexed_end): lost to Kafka, not to us, and never
-- hidden. Per partition, the files' ranges and these intervals together tile
-- [indexed_start, indexed_end).
CREATE TABLE lost_interval (
  table_id      bigint NOT NULL,
  partition_id  integer NOT NULL,
  start_offset  bigint NOT NULL,
  end_offset    bigint NOT NULL CHECK (end_offset > start_offset),
  detected_at   timestamptz NOT NULL DEFAULT now(),
  lease_epoch   bigint NOT NULL,
  PRIMARY KEY (table_id, partition_id, start_offset),
  FOREIGN KEY (table_id, partition_id) REFERENCES lake_partition ON DELETE CASCADE
);
`,
  },
  {
    version: 5,
    name: 'backfill executions and slot steps',
    sql: `
-- The backfill state machine keeps no cursor in its state: each of an execution's slots
-- claims the next partition with work here, and the executions of one backfill are
-- numbered. backfill_execution is the highest number an execution of the table ran as
-- (or the scheduled check started): the next one is named after number + 1, so a
-- retried StartExecution, the scheduled check and ContinueAsNew all name it alike.
ALTER TABLE lake_table ADD COLUMN backfill_execution bigint NOT NULL DEFAULT 0;

-- What a slot's step did, written in the transaction that commits its chunk: a step
-- retried after its answer was lost finds itself here and changes nothing. One row per
-- slot (its last step); rows older than a day are deleted when a backfill plans.
CREATE TABLE backfill_step (
  table_id      bigint NOT NULL REFERENCES lake_table ON DELETE CASCADE,
  -- '<execution name>/<slot>': also the owner of the slot's partition claims.
  slot          text NOT NULL,
  step          integer NOT NULL,
  partition_id  integer NOT NULL,
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (table_id, slot)
);

-- Slots look for the next partition with work: only those rows.
CREATE INDEX lake_partition_backfill_left ON lake_partition (table_id, partition_id)
  WHERE backfill_cursor > backfill_target;
`,
  },
];

/** The version a catalog has once every migration this offsetlake knows is applied. */
export const latestCatalogVersion = Math.max(...migrations.map((migration) => migration.version));
