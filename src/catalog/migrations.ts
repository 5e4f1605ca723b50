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
  {
    version: 6,
    name: 'a read-only DuckLake 0.3 catalog of views (schema ducklake), ids for nested nodes, name mappings, a reader role',
    sql: `
-- DuckDB's ducklake extension attaches a Postgres schema whose relations are named and
-- shaped like the DuckLake 0.3 catalog; views count. Schema ducklake holds exactly those
-- names, as views over ours: what an engine sees is always the catalog's current state,
-- never a copy that could drift. See README "Reading from your engine".

-- 1. Every nested struct or list node gets an id of its own (TableSchema.nodeIds), as
-- leaves have (leafIds): DuckLake reads a table as a tree with an id on every node. Ids
-- are given here once for existing schema versions (a node keeps its id across versions,
-- as leaves do) and by the code for new ones.
CREATE FUNCTION schema_nodes(tree jsonb)
RETURNS TABLE (column_id bigint, parent_column bigint, column_name text, column_order bigint, type jsonb, nulls_allowed boolean, path text, depth integer, parent_kind text)
LANGUAGE sql IMMUTABLE AS $fn$
  WITH RECURSIVE node AS (
    SELECT (c.value->>'id')::bigint AS column_id, NULL::bigint AS parent_column, c.value->>'name' AS column_name,
           c.ordinality - 1 AS column_order, c.value->'type' AS type, (c.value->>'nullable')::boolean AS nulls_allowed,
           c.value->>'name' AS path, 0 AS depth, NULL::text AS parent_kind
    FROM jsonb_array_elements(tree->'columns') WITH ORDINALITY AS c
    UNION ALL
    SELECT coalesce(tree->'leafIds'->>child.path, tree->'nodeIds'->>child.path)::bigint, node.column_id, child.name, child.ord,
           child.type, child.nullable, child.path, node.depth + 1, node.type->>'kind'
    FROM node CROSS JOIN LATERAL (
      SELECT f.value->>'name' AS name, f.ordinality - 1 AS ord, f.value->'type' AS type, (f.value->>'nullable')::boolean AS nullable,
             node.path || '.' || (f.value->>'name') AS path
      FROM jsonb_array_elements(CASE WHEN node.type->>'kind' = 'struct' THEN node.type->'fields' ELSE '[]'::jsonb END) WITH ORDINALITY AS f
      UNION ALL
      -- a list's element, named by its Parquet path <list>.list.element, as leaves are
      SELECT 'element', 0, node.type->'element'->'type', (node.type->'element'->>'nullable')::boolean, node.path || '.list.element'
      WHERE node.type->>'kind' = 'list'
    ) AS child
  )
  SELECT column_id, parent_column, column_name, column_order, type, nulls_allowed, path, depth, parent_kind FROM node
$fn$;

WITH inner_node AS (
  SELECT s.table_id, s.schema_version, n.path
  FROM table_schema s, schema_nodes(s.schema) n
  WHERE n.depth > 0 AND n.type->>'kind' IN ('struct', 'list')
), first_seen AS (
  SELECT table_id, path, min(schema_version) AS version FROM inner_node GROUP BY table_id, path
), highest AS (
  SELECT table_id, max(id) AS id FROM (
    SELECT s.table_id, (c.value->>'id')::bigint AS id FROM table_schema s, jsonb_array_elements(s.schema->'columns') c
    UNION ALL
    SELECT s.table_id, l.value::bigint FROM table_schema s, jsonb_each_text(s.schema->'leafIds') l
  ) ids GROUP BY table_id
), numbered AS (
  SELECT f.table_id, f.path, h.id + row_number() OVER (PARTITION BY f.table_id ORDER BY f.version, f.path) AS id
  FROM first_seen f JOIN highest h USING (table_id)
)
UPDATE table_schema s SET schema = s.schema || jsonb_build_object('nodeIds', coalesce(
  (SELECT jsonb_object_agg(i.path, n.id) FROM inner_node i JOIN numbered n USING (table_id, path)
   WHERE i.table_id = s.table_id AND i.schema_version = s.schema_version), '{}'::jsonb))
WHERE NOT s.schema ? 'nodeIds';

-- 2. A name mapping per schema version: files of encoder v1 carry no Parquet field ids, so
-- DuckLake must find columns by name. DuckDB loads mappings incrementally (those with an
-- id at or above the snapshot's next_file_id it last saw), so a new mapping's id must be
-- above every id already visible: ids are given under a lock held until commit, hence in
-- commit order.
ALTER TABLE table_schema ADD COLUMN mapping_id bigint;
UPDATE table_schema s SET mapping_id = n.id
FROM (SELECT table_id, schema_version, row_number() OVER (ORDER BY created_at, table_id, schema_version) AS id FROM table_schema) n
WHERE n.table_id = s.table_id AND n.schema_version = s.schema_version;
ALTER TABLE table_schema ALTER COLUMN mapping_id SET NOT NULL, ADD CONSTRAINT table_schema_mapping_id_key UNIQUE (mapping_id);

CREATE FUNCTION next_mapping_id() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  -- "ofmp": released at commit, so the next insert sees this one before it takes max()
  PERFORM pg_advisory_xact_lock(1868983664);
  SELECT coalesce(max(mapping_id), 0) + 1 INTO NEW.mapping_id FROM offsetlake.table_schema;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER table_schema_mapping_id BEFORE INSERT ON table_schema FOR EACH ROW EXECUTE FUNCTION next_mapping_id();

-- 3. Types and statistics as DuckLake reads them.
CREATE FUNCTION ducklake_type(t jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE t->>'kind'
    WHEN 'int32' THEN 'int32' WHEN 'int64' THEN 'int64' WHEN 'float' THEN 'float32' WHEN 'double' THEN 'float64'
    WHEN 'boolean' THEN 'boolean' WHEN 'string' THEN 'varchar' WHEN 'json' THEN 'json' WHEN 'binary' THEN 'blob'
    WHEN 'date' THEN 'date'
    WHEN 'timestamp' THEN CASE WHEN (t->>'utc')::boolean THEN 'timestamptz'
                               WHEN t->>'unit' = 'millis' THEN 'timestamp_ms' WHEN t->>'unit' = 'nanos' THEN 'timestamp_ns'
                               ELSE 'timestamp' END
    WHEN 'decimal' THEN format('decimal(%s,%s)', t->>'precision', t->>'scale')
    WHEN 'struct' THEN 'struct' WHEN 'list' THEN 'list'
  END
$fn$;

-- DuckLake compares numeric bounds after TRY_CAST (our text parses), every other type as
-- text against DuckDB's text of the constant: dates 'YYYY-MM-DD', timestamps
-- 'YYYY-MM-DD HH:MM:SS[.fraction without trailing zeros]' plus '+00' when UTC. Such text
-- sorts like time only for years 1 to 9999: outside them a bound is NULL (unknown: the
-- file is kept). Nanoseconds are rounded outwards to microseconds, so the bounds still
-- hold. Our binary bounds are hex, not DuckDB's text of a blob: NULL.
CREATE FUNCTION ducklake_bound(t jsonb, bound text, upper boolean) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  micros numeric;
  seconds numeric;
  at timestamp;
  fraction text;
BEGIN
  IF bound IS NULL THEN RETURN NULL; END IF;
  CASE t->>'kind'
    WHEN 'binary' THEN RETURN NULL;
    WHEN 'date' THEN
      IF bound::bigint NOT BETWEEN -719162 AND 2932896 THEN RETURN NULL; END IF;
      RETURN to_char(date '1970-01-01' + bound::integer, 'YYYY-MM-DD');
    WHEN 'timestamp' THEN
      micros := CASE t->>'unit' WHEN 'millis' THEN bound::numeric * 1000 WHEN 'micros' THEN bound::numeric
                ELSE CASE WHEN upper THEN ceil(bound::numeric / 1000) ELSE floor(bound::numeric / 1000) END END;
      IF micros NOT BETWEEN -62135596800000000 AND 253402300799999999 THEN RETURN NULL; END IF;
      seconds := floor(micros / 1000000);
      at := timestamp '1970-01-01' + make_interval(secs => seconds::float8) + make_interval(secs => (micros - seconds * 1000000)::float8 / 1000000);
      fraction := rtrim(to_char(at, 'US'), '0');
      RETURN to_char(at, 'YYYY-MM-DD HH24:MI:SS') || CASE WHEN fraction = '' THEN '' ELSE '.' || fraction END
             || CASE WHEN (t->>'utc')::boolean THEN '+00' ELSE '' END;
    ELSE RETURN bound;
  END CASE;
END
$fn$;

-- The current schema's nodes of every live table.
CREATE VIEW current_column AS
SELECT t.table_id, n.*
FROM lake_table t
JOIN LATERAL (SELECT s.schema FROM table_schema s WHERE s.table_id = t.table_id ORDER BY s.schema_version DESC LIMIT 1) s ON true
CROSS JOIN LATERAL schema_nodes(s.schema) n
WHERE t.dropped_at IS NULL;

CREATE SCHEMA ducklake;

CREATE VIEW ducklake.ducklake_metadata AS
SELECT key::varchar, value::varchar, NULL::varchar AS scope, NULL::bigint AS scope_id
FROM (VALUES ('version', '0.3'), ('data_path', 's3://offsetlake/'), ('encrypted', 'false')) AS m(key, value);

-- One snapshot: the current state. Its numbers only grow, because rows are only ever
-- added (files, expiries, schema versions, drops) and never deleted: the schema version
-- moves with every new table-schema version and every dropped table (DuckDB caches a
-- catalog per schema version), the snapshot id with that and every file added or expired.
-- next_file_id is the next name-mapping id (DuckDB loads mappings from the one it last saw).
CREATE VIEW ducklake.ducklake_snapshot AS
SELECT v.schema_version + f.files + f.expired AS snapshot_id, now() AS snapshot_time, v.schema_version,
       (SELECT coalesce(max(table_id), 0) + 1 FROM offsetlake.lake_table)::bigint AS next_catalog_id,
       (SELECT coalesce(max(mapping_id), 0) + 1 FROM offsetlake.table_schema)::bigint AS next_file_id
FROM (SELECT (SELECT count(*) FROM offsetlake.table_schema) + (SELECT count(*) FROM offsetlake.lake_table WHERE dropped_at IS NOT NULL) AS schema_version) v,
     (SELECT count(*) AS files, count(expired_at) AS expired FROM offsetlake.data_file) f;

CREATE VIEW ducklake.ducklake_snapshot_changes AS
SELECT s.snapshot_id,
       coalesce((SELECT string_agg('inserted_into_table:' || table_id, ',' ORDER BY table_id) FROM offsetlake.lake_table WHERE dropped_at IS NULL), '')::varchar AS changes_made,
       'offsetlake'::varchar AS author, NULL::varchar AS commit_message, NULL::varchar AS commit_extra_info
FROM ducklake.ducklake_snapshot s;

CREATE VIEW ducklake.ducklake_schema_versions AS
SELECT 0::bigint AS begin_snapshot, schema_version FROM ducklake.ducklake_snapshot;

CREATE VIEW ducklake.ducklake_schema AS
SELECT 0::bigint AS schema_id, '6f66666c-0000-4000-8000-000000000000'::uuid AS schema_uuid, 0::bigint AS begin_snapshot,
       NULL::bigint AS end_snapshot, 'main'::varchar AS schema_name, NULL::varchar AS path, NULL::boolean AS path_is_relative;

-- Files are read at <data_path>tables/<table>/files/<id>.parquet, the read API's paths.
CREATE VIEW ducklake.ducklake_table AS
SELECT table_id, table_uuid, 0::bigint AS begin_snapshot, NULL::bigint AS end_snapshot, 0::bigint AS schema_id,
       table_name::varchar, ('tables/' || table_name || '/files/')::varchar AS path, true AS path_is_relative
FROM offsetlake.lake_table WHERE dropped_at IS NULL;

CREATE VIEW ducklake.ducklake_column AS
SELECT column_id, 0::bigint AS begin_snapshot, NULL::bigint AS end_snapshot, table_id, column_order, column_name::varchar,
       offsetlake.ducklake_type(type)::varchar AS column_type, NULL::varchar AS initial_default, NULL::varchar AS default_value,
       nulls_allowed, parent_column
FROM offsetlake.current_column;

-- Live files only. DuckLake's footer_size is the FileMetaData alone; ours also counts its
-- 4-byte length and the closing PAR1.
CREATE VIEW ducklake.ducklake_data_file AS
SELECT f.data_file_id, f.table_id, 0::bigint AS begin_snapshot, NULL::bigint AS end_snapshot, NULL::bigint AS file_order,
       (f.data_file_id || '.parquet')::varchar AS path, true AS path_is_relative, 'parquet'::varchar AS file_format,
       f.record_count, f.file_size_bytes, (f.footer_size - 8)::bigint AS footer_size, NULL::bigint AS row_id_start,
       NULL::bigint AS partition_id, NULL::varchar AS encryption_key, NULL::varchar AS partial_file_info, s.mapping_id
FROM offsetlake.data_file f
JOIN offsetlake.lake_table t ON t.table_id = f.table_id AND t.dropped_at IS NULL
JOIN offsetlake.table_schema s ON s.table_id = f.table_id AND s.schema_version = f.schema_version
WHERE f.expired_at IS NULL;

-- A row for every live file and every node of its table's current schema: DuckLake prunes
-- a file that has no row for a filtered column. Where we know nothing (a struct or list
-- node, a column the file's schema version did not have) every value is NULL, which
-- DuckLake reads as unknown and keeps the file. value_count is DuckLake's: non-null values.
CREATE VIEW ducklake.ducklake_file_column_stats AS
SELECT f.data_file_id, f.table_id, c.column_id, s.column_size_bytes, s.value_count - s.null_count AS value_count, s.null_count,
       offsetlake.ducklake_bound(c.type, s.min_value, false)::varchar AS min_value,
       offsetlake.ducklake_bound(c.type, s.max_value, true)::varchar AS max_value,
       CASE WHEN c.type->>'kind' IN ('float', 'double') THEN s.nan_count > 0 END AS contains_nan, NULL::varchar AS extra_stats
FROM offsetlake.data_file f
JOIN offsetlake.current_column c ON c.table_id = f.table_id
LEFT JOIN offsetlake.file_column_stats s ON s.data_file_id = f.data_file_id AND s.column_id = c.column_id
WHERE f.expired_at IS NULL;

CREATE VIEW ducklake.ducklake_column_mapping AS
SELECT s.mapping_id, s.table_id, 'map_by_name'::varchar AS type
FROM offsetlake.table_schema s JOIN offsetlake.lake_table t ON t.table_id = s.table_id AND t.dropped_at IS NULL;

-- Names as the Parquet reader sees them: a list's child is called 'list' (the repeated
-- level between a list and its element is not a column of its own).
CREATE VIEW ducklake.ducklake_name_mapping AS
SELECT s.mapping_id, n.column_id,
       (CASE WHEN n.parent_kind = 'list' THEN 'list' ELSE n.column_name END)::varchar AS source_name,
       n.column_id AS target_field_id, n.parent_column, false AS is_partition
FROM offsetlake.table_schema s
JOIN offsetlake.lake_table t ON t.table_id = s.table_id AND t.dropped_at IS NULL
CROSS JOIN LATERAL offsetlake.schema_nodes(s.schema) n;

-- What DuckLake knows and we do not have: empty, with DuckLake's columns.
CREATE VIEW ducklake.ducklake_table_stats AS
SELECT NULL::bigint AS table_id, NULL::bigint AS record_count, NULL::bigint AS next_row_id, NULL::bigint AS file_size_bytes WHERE false;
CREATE VIEW ducklake.ducklake_table_column_stats AS
SELECT NULL::bigint AS table_id, NULL::bigint AS column_id, NULL::boolean AS contains_null, NULL::boolean AS contains_nan,
       NULL::varchar AS min_value, NULL::varchar AS max_value, NULL::varchar AS extra_stats WHERE false;
CREATE VIEW ducklake.ducklake_delete_file AS
SELECT NULL::bigint AS delete_file_id, NULL::bigint AS table_id, NULL::bigint AS begin_snapshot, NULL::bigint AS end_snapshot,
       NULL::bigint AS data_file_id, NULL::varchar AS path, NULL::boolean AS path_is_relative, NULL::varchar AS format,
       NULL::bigint AS delete_count, NULL::bigint AS file_size_bytes, NULL::bigint AS footer_size, NULL::varchar AS encryption_key WHERE false;
CREATE VIEW ducklake.ducklake_column_tag AS
SELECT NULL::bigint AS table_id, NULL::bigint AS column_id, NULL::bigint AS begin_snapshot, NULL::bigint AS end_snapshot,
       NULL::varchar AS key, NULL::varchar AS value WHERE false;
CREATE VIEW ducklake.ducklake_tag AS
SELECT NULL::bigint AS object_id, NULL::bigint AS begin_snapshot, NULL::bigint AS end_snapshot, NULL::varchar AS key, NULL::varchar AS value WHERE false;
CREATE VIEW ducklake.ducklake_file_partition_value AS
SELECT NULL::bigint AS data_file_id, NULL::bigint AS table_id, NULL::bigint AS partition_key_index, NULL::varchar AS partition_value WHERE false;
CREATE VIEW ducklake.ducklake_files_scheduled_for_deletion AS
SELECT NULL::bigint AS data_file_id, NULL::varchar AS path, NULL::boolean AS path_is_relative, NULL::timestamptz AS schedule_start WHERE false;
CREATE VIEW ducklake.ducklake_inlined_data_tables AS
SELECT NULL::bigint AS table_id, NULL::varchar AS table_name, NULL::bigint AS schema_version WHERE false;
CREATE VIEW ducklake.ducklake_partition_column AS
SELECT NULL::bigint AS partition_id, NULL::bigint AS table_id, NULL::bigint AS partition_key_index, NULL::bigint AS column_id,
       NULL::varchar AS transform WHERE false;
CREATE VIEW ducklake.ducklake_partition_info AS
SELECT NULL::bigint AS partition_id, NULL::bigint AS table_id, NULL::bigint AS begin_snapshot, NULL::bigint AS end_snapshot WHERE false;
CREATE VIEW ducklake.ducklake_view AS
SELECT NULL::bigint AS view_id, NULL::uuid AS view_uuid, NULL::bigint AS begin_snapshot, NULL::bigint AS end_snapshot,
       NULL::bigint AS schema_id, NULL::varchar AS view_name, NULL::varchar AS dialect, NULL::varchar AS sql,
       NULL::varchar AS column_aliases WHERE false;

-- 4. A role that reads schema ducklake and nothing else. Roles belong to the whole
-- server: made once, granted in every catalog database. A login of one's own joins it
-- (CREATE ROLE analyst LOGIN PASSWORD '…' IN ROLE offsetlake_ducklake_reader). Without
-- the right to create roles the migration goes on without it.
DO $do$
BEGIN
  BEGIN
    CREATE ROLE offsetlake_ducklake_reader NOLOGIN;
  EXCEPTION WHEN duplicate_object OR unique_violation OR insufficient_privilege THEN NULL;
  END;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'offsetlake_ducklake_reader') THEN
    GRANT USAGE ON SCHEMA ducklake TO offsetlake_ducklake_reader;
    GRANT SELECT ON ALL TABLES IN SCHEMA ducklake TO offsetlake_ducklake_reader;
  END IF;
END
$do$;
`,
  },
  {
    version: 7,
    name: 'granules, page index bytes, reader counters',
    sql: `
-- A granule is a row group of a data file: the unit a read rebuilds. Its Kafka offset
-- span runs from its first row's offset to the next granule's first (the first from the
-- file's start offset, the last to its end offset), so spans tile the file's offsets.
-- chunk_sha256 holds the sha256 of each of its column chunks, 32 bytes per leaf in the
-- footer's order; the chunks' byte positions come from the footer.
CREATE TABLE granule (
  data_file_id  bigint NOT NULL REFERENCES data_file ON DELETE CASCADE,
  row_group     integer NOT NULL CHECK (row_group >= 0),
  start_offset  bigint NOT NULL,
  end_offset    bigint NOT NULL CHECK (end_offset > start_offset),
  row_count     bigint NOT NULL CHECK (row_count >= 0),
  -- key + value + header bytes of every committed record in the span, of any bucket:
  -- what reading the granule fetches from Kafka (as the sealer counts bytes)
  kafka_bytes   bigint NOT NULL CHECK (kafka_bytes >= 0),
  chunk_sha256  bytea NOT NULL CHECK (octet_length(chunk_sha256) % 32 = 0),
  PRIMARY KEY (data_file_id, row_group)
);

-- The bytes between a file's last column chunk and its footer (its page index; empty
-- when it has none), kept like the footer so a file can be served granule by granule.
-- NULL: the file has no granules yet (indexed before this migration, until its first
-- whole rebuild) or cannot be served by granules.
ALTER TABLE data_file ADD COLUMN page_index bytea;

-- What each reader (a serve process, a Lambda instance) has counted, written now and
-- then so that status can show reads next to indexing.
CREATE TABLE reader_counters (
  reader_id   text PRIMARY KEY,
  counters    jsonb NOT NULL,
  started_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
`,
  },
  // Its SQL cites "DESIGN.md": that design is docs/design.md now. The SQL stays as released:
  // every catalog keeps the sha256 of the text it applied (src/catalog/migrate.ts).
  {
    version: 8,
    name: 'secondary indexes and their entries per data file',
    sql: `
-- A secondary index of a table (DESIGN.md, "Secondary indexes"): derived state, built per
-- data file, never changing an answer. columns holds the indexed expressions in order
-- (src/indexes/definition.ts): a table column or nested leaf by path, a Kafka column, a
-- header value by name, a field of a json value by path. A standalone index on a table
-- with data moves declared -> building -> backfilling -> catching_up -> active; from
-- building on, every file committed carries its entries.
CREATE TABLE secondary_index (
  index_id             bigserial PRIMARY KEY,
  table_id             bigint NOT NULL REFERENCES lake_table ON DELETE CASCADE,
  index_name           text NOT NULL,
  kind                 text NOT NULL CHECK (kind IN ('minmax', 'bloom', 'postings')),
  columns              jsonb NOT NULL,
  scope                text NOT NULL CHECK (scope IN ('history', 'current', 'both')),
  granule_rows         integer NOT NULL CHECK (granule_rows > 0),
  -- BLOOM: the false-positive rate each granule's filter is sized for
  false_positive_rate  double precision CHECK (false_positive_rate > 0 AND false_positive_rate < 1),
  -- POSTINGS: entries are split by hash(key) mod posting_buckets, so a lookup reads one part per file
  posting_buckets      integer CHECK (posting_buckets > 0),
  state                text NOT NULL CHECK (state IN ('declared', 'building', 'backfilling', 'catching_up', 'active')),
  state_since          timestamptz NOT NULL DEFAULT now(),
  created_at           timestamptz NOT NULL DEFAULT now(),
  -- backfill progress: files and granules given entries, Kafka bytes read for them, files to do
  files_done           bigint NOT NULL DEFAULT 0,
  granules_done        bigint NOT NULL DEFAULT 0,
  bytes_read           bigint NOT NULL DEFAULT 0,
  files_total          bigint NOT NULL DEFAULT 0,
  -- who drives the backfill now (a local process or an execution), and until when
  backfill_owner       text,
  backfill_expires_at  timestamptz,
  -- live files the backfill could not give entries (rebuilt bytes differ, or Kafka no
  -- longer holds them): not tried again; the files without entries minus these are its cursor
  backfill_skipped     bigint[] NOT NULL DEFAULT '{}',
  -- the number n of the last state machine execution started for its backfill (named
  -- index-<id>-<n>): the scheduled check starts n + 1 when no driver holds the lease
  backfill_execution   integer NOT NULL DEFAULT 0,
  -- how often reads used the index to skip granules, and how often they could not use it
  reads_used           bigint NOT NULL DEFAULT 0,
  reads_skipped        bigint NOT NULL DEFAULT 0,
  -- why the last backfill step failed (null while it goes well)
  last_error           text,
  UNIQUE (table_id, index_name)
);

-- An index's entries for one data file: part -1 is the file's header (its granules and
-- MINMAX bounds, granules no key could be taken for); BLOOM filters are part 0; POSTINGS
-- are one part per hash bucket. Keyed by scope, so SCOPE BOTH can add 'current' entries
-- beside 'history' ones without touching these. A file's entries go with the file.
CREATE TABLE index_entry (
  index_id      bigint NOT NULL REFERENCES secondary_index ON DELETE CASCADE,
  scope         text NOT NULL CHECK (scope IN ('history', 'current')),
  part          integer NOT NULL CHECK (part >= -1),
  data_file_id  bigint NOT NULL REFERENCES data_file ON DELETE CASCADE,
  payload       bytea NOT NULL,
  PRIMARY KEY (index_id, scope, part, data_file_id)
);
CREATE INDEX index_entry_file ON index_entry (data_file_id);
`,
  },
  {
    version: 9,
    name: "each table keeps its topic's Kafka id",
    sql: `
-- Kafka's id of the topic a table was made on (Metadata's topic_id). A topic deleted and
-- created again under the same name gets a new id and starts its offsets over: the
-- table's partitions then wait and retention expires nothing (catalog/topic-identity.ts).
-- Tables made before this version record their topic's id when it is first seen.
ALTER TABLE lake_table ADD COLUMN topic_id text;
`,
  },
  {
    version: 10,
    name: 'writers wait on nothing a reader can hold',
    sql: `
-- next_mapping_id() gave mapping ids in commit order under an advisory lock, which any
-- role can take and keep (a reader login too), stalling table create and every new schema
-- version. A row lock on a table of this schema gives the same order, and no reader role
-- can reach it (they see schema ducklake only).
CREATE TABLE mapping_id_turn (turn boolean PRIMARY KEY DEFAULT true CHECK (turn));
INSERT INTO mapping_id_turn DEFAULT VALUES;
CREATE OR REPLACE FUNCTION next_mapping_id() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  -- held until commit, so the next insert sees this one before it takes max()
  PERFORM 1 FROM offsetlake.mapping_id_turn FOR UPDATE;
  SELECT coalesce(max(mapping_id), 0) + 1 INTO NEW.mapping_id FROM offsetlake.table_schema;
  RETURN NEW;
END
$fn$;
`,
  },
  {
    version: 11,
    name: 'a catalog reader role: reads the catalog, writes reader counters and granules only',
    sql: `
-- What a reader may do (src/catalog/logins.ts gives it a login on AWS): read every
-- table it serves from, and write only what reads write: its counters, and the granules
-- and page index of a file indexed before granules existed (its first whole rebuild).
-- Roles belong to the whole server; without the right to create roles the migration goes
-- on without it, and the reader's login then cannot be made (the deploy says so).
DO $do$
BEGIN
  BEGIN
    CREATE ROLE offsetlake_catalog_reader NOLOGIN;
  EXCEPTION WHEN duplicate_object OR unique_violation OR insufficient_privilege THEN NULL;
  END;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'offsetlake_catalog_reader') THEN
    GRANT USAGE ON SCHEMA offsetlake TO offsetlake_catalog_reader;
    GRANT SELECT ON ALL TABLES IN SCHEMA offsetlake TO offsetlake_catalog_reader;
    -- Tables later migrations add are readable too (a read path may come to need them);
    -- a write is never granted by default, only named here.
    ALTER DEFAULT PRIVILEGES IN SCHEMA offsetlake GRANT SELECT ON TABLES TO offsetlake_catalog_reader;
    GRANT INSERT, UPDATE ON offsetlake.reader_counters TO offsetlake_catalog_reader;
    GRANT INSERT ON offsetlake.granule TO offsetlake_catalog_reader;
    GRANT UPDATE (page_index) ON offsetlake.data_file TO offsetlake_catalog_reader;
  END IF;
END
$do$;
`,
  },
  {
    version: 12,
    name: 'a catalog writer role: reads and writes the catalog\'s rows, owns nothing',
    sql: `
-- What the indexer, backfill, index backfill, tick and retention do (src/catalog/logins.ts
-- gives them a login on AWS): read and write rows, take sequence numbers. Not granted: any
-- DDL (they own no table), TRUNCATE, and writing the migrations' record. Roles belong to
-- the whole server; without the right to create roles the migration goes on without it.
DO $do$
BEGIN
  BEGIN
    CREATE ROLE offsetlake_catalog_writer NOLOGIN;
  EXCEPTION WHEN duplicate_object OR unique_violation OR insufficient_privilege THEN NULL;
  END;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'offsetlake_catalog_writer') THEN
    GRANT USAGE ON SCHEMA offsetlake TO offsetlake_catalog_writer;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA offsetlake TO offsetlake_catalog_writer;
    GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA offsetlake TO offsetlake_catalog_writer;
    -- The writers' data is every table the migrations add: a later table needs no grant of its own.
    ALTER DEFAULT PRIVILEGES IN SCHEMA offsetlake GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO offsetlake_catalog_writer;
    ALTER DEFAULT PRIVILEGES IN SCHEMA offsetlake GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO offsetlake_catalog_writer;
    -- Only migrate records a migration (it created schema_migration before this ran).
    REVOKE INSERT, UPDATE, DELETE ON offsetlake.schema_migration FROM offsetlake_catalog_writer;
  END IF;
END
$do$;
`,
  },
  {
    version: 13,
    name: 'Iceberg snapshots: which files each snapshot names, cut by the read path',
    sql: `
-- The Iceberg REST catalog (src/iceberg/) hands out snapshots whose ids always name the
-- same files. A snapshot is cut by serve when a client loads a table whose live files
-- differ from its newest snapshot's (at most once per interval, at once when retention
-- expired one of its files); each cut has the next sequence number of its table.
-- iceberg_table is the row a cut locks: writers never touch it, so they wait on nothing
-- a cut holds.
CREATE TABLE iceberg_table (
  table_id       bigint PRIMARY KEY REFERENCES lake_table ON DELETE CASCADE,
  last_sequence  bigint NOT NULL DEFAULT 0
);

-- summary: Iceberg's snapshot summary (counts and totals), fixed when cut. A snapshot
-- leaves the history (dropped_sequence: the cut that dropped it) when retention expired
-- one of its files, or when the history holds more than its bound (oldest first).
CREATE TABLE iceberg_snapshot (
  table_id          bigint NOT NULL REFERENCES lake_table ON DELETE CASCADE,
  sequence_number   bigint NOT NULL CHECK (sequence_number >= 1),
  snapshot_id       bigint NOT NULL UNIQUE CHECK (snapshot_id > 0),
  cut_at            timestamptz NOT NULL,
  schema_version    integer NOT NULL,
  summary           jsonb NOT NULL,
  dropped_sequence  bigint CHECK (dropped_sequence > sequence_number),
  dropped_reason    text,
  PRIMARY KEY (table_id, sequence_number)
);

-- A data file is in the snapshots numbered [added_sequence, removed_sequence) of its
-- table: added by the first cut that saw it live, removed by the first that saw it expired.
CREATE TABLE iceberg_file (
  data_file_id      bigint PRIMARY KEY REFERENCES data_file ON DELETE CASCADE,
  table_id          bigint NOT NULL,
  added_sequence    bigint NOT NULL CHECK (added_sequence >= 1),
  removed_sequence  bigint CHECK (removed_sequence > added_sequence)
);
CREATE INDEX iceberg_file_by_table ON iceberg_file (table_id, added_sequence);

-- The reader cuts snapshots: it may write these three tables (and read them, by the
-- default privileges of version 11).
DO $do$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'offsetlake_catalog_reader') THEN
    GRANT INSERT, UPDATE ON offsetlake.iceberg_table, offsetlake.iceberg_snapshot, offsetlake.iceberg_file TO offsetlake_catalog_reader;
  END IF;
END
$do$;
`,
  },
  {
    version: 14,
    name: 'DuckLake table statistics: the row count and size of each table\'s live files',
    sql: `
-- DuckDB's DuckLake reads every table's global statistics (ducklake_table_stats LEFT JOIN
-- ducklake_table_column_stats) for its planner's estimates; both views were empty, so a
-- scan of any table was estimated at a few dozen rows and a join built its hash table on
-- the Kafka table, however large. The row count and size are exact: the sums over the
-- same live files ducklake_data_file lists. A table in ducklake_table_stats must have a
-- row per column in ducklake_table_column_stats (DuckLake reads the join's columns as
-- values); column bounds are left unknown (NULL) and every column may hold nulls: a
-- bound here would be trusted for the whole table, and the per-file bounds already prune.
-- NaN is possible in float and double columns only. Both are sums and counts over rows
-- of data_file and current_column alone (no per-file statistics), since DuckLake asks
-- for every table's statistics whenever a new file appears.
CREATE OR REPLACE VIEW ducklake.ducklake_table_stats AS
SELECT f.table_id, sum(f.record_count)::bigint AS record_count, sum(f.record_count)::bigint AS next_row_id,
       sum(f.file_size_bytes)::bigint AS file_size_bytes
FROM offsetlake.data_file f
JOIN offsetlake.lake_table t ON t.table_id = f.table_id AND t.dropped_at IS NULL
WHERE f.expired_at IS NULL
GROUP BY f.table_id;

CREATE OR REPLACE VIEW ducklake.ducklake_table_column_stats AS
SELECT c.table_id, c.column_id, true AS contains_null, c.type->>'kind' IN ('float', 'double') AS contains_nan,
       NULL::varchar AS min_value, NULL::varchar AS max_value, NULL::varchar AS extra_stats
FROM offsetlake.current_column c
WHERE EXISTS (SELECT FROM ducklake.ducklake_table_stats s WHERE s.table_id = c.table_id);
`,
  },
  {
    version: 15,
    name: 'the sha256 of the bytes a file is served from the catalog: its page index and footer',
    sql: `
-- A file served by granules gets its chunks rebuilt from Kafka (each checked against its
-- granule's chunk_sha256), and the rest of its bytes, from the end of its last column
-- chunk to its end (the page index, then the footer), straight from the catalog. This is
-- their sha256, taken by whoever built the file from Kafka (the indexer; a whole rebuild
-- of a file indexed before granules): a read checks the two stored pieces against it
-- before any of their bytes is sent. No reader role is granted UPDATE on it.
-- Files whose page_index was stored before this version have none: until a rebuild by a
-- login that may write it records it (offsetlake check, a serve on the owner's login),
-- they are served whole, rebuilt and checked against their sha256, never from a page
-- index no one checked.
ALTER TABLE data_file ADD COLUMN tail_sha256 bytea CHECK (octet_length(tail_sha256) = 32);
`,
  },
  {
    version: 16,
    name: 'reader logins write nothing they could forge, and hold no temp tables or large objects',
    sql: `
-- The catalog reader (the Lambda reader's login) wrote the granules and page index of a
-- file indexed before granules existed, and the Iceberg snapshots' rows: a leaked reader
-- credential could forge a page index or chunk checksums served as a file's bytes, or drop
-- a live file from a snapshot. It keeps SELECT and its own counters (reader_counters:
-- status reads them, no read path does). Granules of old files are written by serve
-- running as the owner; a file without them is served whole, as before.
DO $do$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'offsetlake_catalog_reader') THEN
    REVOKE INSERT ON offsetlake.granule FROM offsetlake_catalog_reader;
    REVOKE UPDATE (page_index) ON offsetlake.data_file FROM offsetlake_catalog_reader;
    REVOKE INSERT, UPDATE ON offsetlake.iceberg_table, offsetlake.iceberg_snapshot, offsetlake.iceberg_file FROM offsetlake_catalog_reader;
  END IF;
END
$do$;

-- A snapshot cut, all of it here, as the migrating login: which files a snapshot names,
-- its summary and id come from data_file, never from the caller, who chooses only how
-- often a cut may add files (p_interval_ms) and how many snapshots the history keeps.
-- A cut is due when retention expired a file of the newest snapshot, or when live files
-- no snapshot names are waiting and the newest was cut at least p_interval_ms ago (or
-- there is none). Returns the newest sequence number afterwards (0: none yet).
CREATE FUNCTION cut_iceberg_snapshot(p_table_id bigint, p_interval_ms bigint, p_max_snapshots integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  last_seq bigint;
  seq bigint;
  newest_cut timestamptz;
  newest_summary jsonb;
  added_ids bigint[];
  added_records numeric;
  added_bytes numeric;
  removed_ids bigint[];
  removed_records numeric;
  removed_bytes numeric;
  oldest_added bigint;
  n_added integer;
  n_removed integer;
  snapshot_id bigint;
BEGIN
  IF p_max_snapshots IS NULL OR p_max_snapshots < 1 THEN
    RAISE EXCEPTION 'the history must keep at least one snapshot, got %', p_max_snapshots;
  END IF;
  INSERT INTO offsetlake.iceberg_table (table_id) VALUES (p_table_id) ON CONFLICT DO NOTHING;
  SELECT t.last_sequence INTO last_seq FROM offsetlake.iceberg_table t WHERE t.table_id = p_table_id FOR UPDATE;
  SELECT s.cut_at, s.summary INTO newest_cut, newest_summary
    FROM offsetlake.iceberg_snapshot s WHERE s.table_id = p_table_id AND s.sequence_number = last_seq;
  SELECT coalesce(array_agg(f.data_file_id ORDER BY f.data_file_id), '{}'), coalesce(sum(f.record_count), 0), coalesce(sum(f.file_size_bytes), 0)
    INTO added_ids, added_records, added_bytes
    FROM offsetlake.data_file f LEFT JOIN offsetlake.iceberg_file i ON i.data_file_id = f.data_file_id
   WHERE f.table_id = p_table_id AND f.expired_at IS NULL AND i.data_file_id IS NULL;
  SELECT coalesce(array_agg(i.data_file_id ORDER BY i.data_file_id), '{}'), coalesce(sum(f.record_count), 0), coalesce(sum(f.file_size_bytes), 0), min(i.added_sequence)
    INTO removed_ids, removed_records, removed_bytes, oldest_added
    FROM offsetlake.iceberg_file i JOIN offsetlake.data_file f ON f.data_file_id = i.data_file_id
   WHERE i.table_id = p_table_id AND i.removed_sequence IS NULL AND f.expired_at IS NOT NULL;
  n_added := cardinality(added_ids);
  n_removed := cardinality(removed_ids);
  IF NOT (n_removed > 0 OR (n_added > 0 AND (newest_cut IS NULL OR now() - newest_cut >= p_interval_ms * interval '1 millisecond'))) THEN
    RETURN last_seq;
  END IF;
  seq := last_seq + 1;
  -- random and positive below 2^53, as every JSON reader reads it exactly
  snapshot_id := ('x' || substr(md5(gen_random_uuid()::text), 1, 16))::bit(64)::bigint & ((1::bigint << 53) - 1);
  IF snapshot_id = 0 THEN snapshot_id := 1; END IF;
  INSERT INTO offsetlake.iceberg_file (data_file_id, table_id, added_sequence) SELECT unnest(added_ids), p_table_id, seq;
  IF n_removed > 0 THEN
    UPDATE offsetlake.iceberg_file SET removed_sequence = seq WHERE data_file_id = ANY (removed_ids);
    -- a snapshot numbered k holds a file added at a <= k: every snapshot from the oldest
    -- such a among the expired files on named one of them
    UPDATE offsetlake.iceberg_snapshot SET dropped_sequence = seq,
           dropped_reason = 'retention expired file ' || removed_ids[1] || CASE WHEN n_removed > 1 THEN ' and ' || (n_removed - 1) || ' more' ELSE '' END || ' of this snapshot'
     WHERE table_id = p_table_id AND dropped_sequence IS NULL AND sequence_number >= oldest_added;
  END IF;
  INSERT INTO offsetlake.iceberg_snapshot (table_id, sequence_number, snapshot_id, cut_at, schema_version, summary)
  SELECT p_table_id, seq, snapshot_id, now(), (SELECT max(v.schema_version) FROM offsetlake.table_schema v WHERE v.table_id = p_table_id),
         jsonb_build_object(
           'operation', CASE WHEN n_removed = 0 THEN 'append' WHEN n_added = 0 THEN 'delete' ELSE 'overwrite' END,
           'added-data-files', n_added::text, 'deleted-data-files', n_removed::text,
           'added-records', added_records::text, 'deleted-records', removed_records::text,
           'added-files-size', added_bytes::text, 'removed-files-size', removed_bytes::text,
           'total-data-files', (coalesce((newest_summary->>'total-data-files')::numeric, 0) + n_added - n_removed)::text,
           'total-records', (coalesce((newest_summary->>'total-records')::numeric, 0) + added_records - removed_records)::text,
           'total-files-size', (coalesce((newest_summary->>'total-files-size')::numeric, 0) + added_bytes - removed_bytes)::text,
           'total-delete-files', '0', 'total-position-deletes', '0', 'total-equality-deletes', '0');
  UPDATE offsetlake.iceberg_snapshot SET dropped_sequence = seq, dropped_reason = 'the history keeps the newest ' || p_max_snapshots || ' snapshots'
   WHERE table_id = p_table_id AND dropped_sequence IS NULL AND sequence_number <= seq - p_max_snapshots;
  UPDATE offsetlake.iceberg_table SET last_sequence = seq WHERE table_id = p_table_id;
  RETURN seq;
END
$fn$;
REVOKE ALL ON FUNCTION cut_iceberg_snapshot(bigint, bigint, integer) FROM PUBLIC;

-- Sessions of a DuckLake reader login (a direct member of offsetlake_ducklake_reader, not
-- a superuser) past the bounds, which the login itself can lift with SET or ALTER ROLE:
-- a statement running longer than p_statement_ms is cancelled, a transaction idle longer
-- than p_idle_in_transaction_ms has its session ended. Run now and then by serve and, on
-- AWS, the tick; returns what it signalled. The migrating login must see and signal
-- them: a superuser, or one with pg_read_all_stats and pg_signal_backend (an RDS master
-- has both through rds_superuser); without, it says so rather than find nothing.
CREATE FUNCTION end_overdue_ducklake_sessions(p_statement_ms bigint, p_idle_in_transaction_ms bigint)
RETURNS TABLE (pid integer, login name, overdue text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  session record;
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'offsetlake_ducklake_reader') THEN RETURN; END IF;
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
     AND NOT (pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AND pg_has_role(current_user, 'pg_signal_backend', 'USAGE')) THEN
    RAISE EXCEPTION 'the catalog''s owner % cannot see or signal other logins'' sessions: grant it pg_read_all_stats and pg_signal_backend (pg_monitor holds the first)', current_user
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  FOR session IN
    SELECT a.pid, a.usename, a.state, a.query_start, a.state_change
      FROM pg_stat_activity a JOIN pg_roles r ON r.oid = a.usesysid
     WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid() AND NOT r.rolsuper
       AND EXISTS (SELECT FROM pg_auth_members m WHERE m.member = a.usesysid AND NOT m.admin_option
                      AND m.roleid = (SELECT oid FROM pg_roles WHERE rolname = 'offsetlake_ducklake_reader'))
  LOOP
    IF session.state = 'active' AND session.query_start < clock_timestamp() - p_statement_ms * interval '1 millisecond' THEN
      IF pg_cancel_backend(session.pid) THEN
        pid := session.pid; login := session.usename; overdue := 'statement'; RETURN NEXT;
      END IF;
    ELSIF session.state LIKE 'idle in transaction%' AND session.state_change < clock_timestamp() - p_idle_in_transaction_ms * interval '1 millisecond' THEN
      IF pg_terminate_backend(session.pid) THEN
        pid := session.pid; login := session.usename; overdue := 'idle in transaction'; RETURN NEXT;
      END IF;
    END IF;
  END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION end_overdue_ducklake_sessions(bigint, bigint) FROM PUBLIC;
DO $do$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'offsetlake_catalog_reader') THEN
    GRANT EXECUTE ON FUNCTION cut_iceberg_snapshot(bigint, bigint, integer) TO offsetlake_catalog_reader;
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'offsetlake_catalog_writer') THEN
    GRANT EXECUTE ON FUNCTION end_overdue_ducklake_sessions(bigint, bigint) TO offsetlake_catalog_writer;
  END IF;
END
$do$;

-- No login but the owner needs a temporary table or a large object (persistent, outside
-- every grant above, and unbounded): refused in this database to every other login.
-- Without the rights to (not the database's owner, or the functions' owner) it goes on.
DO $do$
BEGIN
  BEGIN
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
  EXCEPTION WHEN insufficient_privilege THEN RAISE WARNING 'could not revoke TEMPORARY on this database from PUBLIC: %', SQLERRM;
  END;
  BEGIN
    REVOKE EXECUTE ON FUNCTION pg_catalog.lo_create(oid), pg_catalog.lo_creat(integer), pg_catalog.lo_from_bytea(oid, bytea),
      pg_catalog.lo_import(text), pg_catalog.lo_import(text, oid) FROM PUBLIC;
  EXCEPTION WHEN insufficient_privilege THEN RAISE WARNING 'could not revoke the large object functions from PUBLIC: %', SQLERRM;
  END;
  -- a login that does not own them revokes nothing, and Postgres only warns
  IF has_function_privilege('public', 'pg_catalog.lo_create(oid)', 'EXECUTE') THEN
    RAISE WARNING 'every login may still create large objects in this database: the migrating login does not own lo_create and its kin';
  END IF;
END
$do$;
`,
  },
  {
    version: 17,
    name: 'merged files: a file replaced by the merge that took its records stays for older snapshots',
    sql: `
-- Files grow with age (issue 49): a merge builds one file of consecutive ranges of a
-- partition, per time bucket, and replaces their files in one transaction. A replaced
-- file keeps its row (older snapshots name it, and it is served while Kafka holds its
-- offsets) but is no longer live: the live files (replaced_by IS NULL AND expired_at IS
-- NULL) and lost intervals tile [indexed_start, indexed_end) as before (invariant 1).
ALTER TABLE data_file ADD COLUMN replaced_by bigint REFERENCES data_file (data_file_id);
ALTER TABLE data_file ADD COLUMN replaced_at timestamptz;
ALTER TABLE data_file ADD CONSTRAINT data_file_replaced_together CHECK ((replaced_by IS NULL) = (replaced_at IS NULL));
-- A merged file starts where the first file it replaces starts, in the same bucket: only
-- live files must be unique there.
ALTER TABLE data_file DROP CONSTRAINT data_file_table_id_partition_id_start_offset_time_bucket_key;
CREATE UNIQUE INDEX data_file_live_start ON data_file (table_id, partition_id, start_offset, time_bucket) WHERE replaced_by IS NULL;
CREATE INDEX data_file_by_replacement ON data_file (replaced_by) WHERE replaced_by IS NOT NULL;
-- A merged file's range ends where its last source range ended; it says why by 'merge'
-- and was built by the compactor ('merge'), under the partition's lease like 'live'.
ALTER TABLE data_file DROP CONSTRAINT data_file_seal_reason_check;
ALTER TABLE data_file ADD CONSTRAINT data_file_seal_reason_check CHECK (seal_reason IN
  ('bytes', 'span', 'age', 'bucket', 'flush', 'capacity', 'chunk', 'merge'));
ALTER TABLE data_file DROP CONSTRAINT data_file_source_check;
ALTER TABLE data_file ADD CONSTRAINT data_file_source_check CHECK (source IN ('live', 'backfill', 'merge'));
`,
  },
  {
    version: 18,
    name: 'the DuckLake face declares a decimal above precision 38 as a blob of its two\'s complement bytes',
    sql: `
-- DuckDB's decimals stop at precision 38: a column declared decimal(50,5) made every query
-- of its table an internal error ("Decimal has a width of 50 which is bigger than the
-- maximum supported width of 38"), other columns included. Such a decimal (Avro only) is
-- stored as Iceberg's fixed[L] (encoder v6: a plain FIXED_LEN_BYTE_ARRAY; v5: the same
-- bytes annotated DECIMAL), the unscaled value's two's complement, big-endian: declared
-- blob, DuckDB reads those bytes. Our bounds of it are decimal text, not a blob's: none.
CREATE OR REPLACE FUNCTION ducklake_type(t jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE t->>'kind'
    WHEN 'int32' THEN 'int32' WHEN 'int64' THEN 'int64' WHEN 'float' THEN 'float32' WHEN 'double' THEN 'float64'
    WHEN 'boolean' THEN 'boolean' WHEN 'string' THEN 'varchar' WHEN 'json' THEN 'json' WHEN 'binary' THEN 'blob'
    WHEN 'date' THEN 'date'
    WHEN 'timestamp' THEN CASE WHEN (t->>'utc')::boolean THEN 'timestamptz'
                               WHEN t->>'unit' = 'millis' THEN 'timestamp_ms' WHEN t->>'unit' = 'nanos' THEN 'timestamp_ns'
                               ELSE 'timestamp' END
    WHEN 'decimal' THEN CASE WHEN (t->>'precision')::integer > 38 THEN 'blob' ELSE format('decimal(%s,%s)', t->>'precision', t->>'scale') END
    WHEN 'struct' THEN 'struct' WHEN 'list' THEN 'list'
  END
$fn$;

CREATE OR REPLACE FUNCTION ducklake_bound(t jsonb, bound text, upper boolean) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  micros numeric;
  seconds numeric;
  at timestamp;
  fraction text;
BEGIN
  IF bound IS NULL THEN RETURN NULL; END IF;
  CASE t->>'kind'
    WHEN 'binary' THEN RETURN NULL;
    WHEN 'decimal' THEN
      IF (t->>'precision')::integer > 38 THEN RETURN NULL; END IF;
      RETURN bound;
    WHEN 'date' THEN
      IF bound::bigint NOT BETWEEN -719162 AND 2932896 THEN RETURN NULL; END IF;
      RETURN to_char(date '1970-01-01' + bound::integer, 'YYYY-MM-DD');
    WHEN 'timestamp' THEN
      micros := CASE t->>'unit' WHEN 'millis' THEN bound::numeric * 1000 WHEN 'micros' THEN bound::numeric
                ELSE CASE WHEN upper THEN ceil(bound::numeric / 1000) ELSE floor(bound::numeric / 1000) END END;
      IF micros NOT BETWEEN -62135596800000000 AND 253402300799999999 THEN RETURN NULL; END IF;
      seconds := floor(micros / 1000000);
      at := timestamp '1970-01-01' + make_interval(secs => seconds::float8) + make_interval(secs => (micros - seconds * 1000000)::float8 / 1000000);
      fraction := rtrim(to_char(at, 'US'), '0');
      RETURN to_char(at, 'YYYY-MM-DD HH24:MI:SS') || CASE WHEN fraction = '' THEN '' ELSE '.' || fraction END
             || CASE WHEN (t->>'utc')::boolean THEN '+00' ELSE '' END;
    ELSE RETURN bound;
  END CASE;
END
$fn$;
`,
  },
  {
    version: 19,
    name: 'merged files through every face: DuckLake sees live files, an Iceberg cut writes a replace, a file may join snapshots again',
    sql: `
-- 1. DuckLake: a replaced file leaves the attach with the merge that replaced it. The
-- snapshot id (migration 6) already moves then: a merge adds a row to data_file, and a
-- retention that expires a merged file and makes its sources live again expires at least
-- that one file. Same columns as before, live files only.
CREATE OR REPLACE VIEW ducklake.ducklake_data_file AS
SELECT f.data_file_id, f.table_id, 0::bigint AS begin_snapshot, NULL::bigint AS end_snapshot, NULL::bigint AS file_order,
       (f.data_file_id || '.parquet')::varchar AS path, true AS path_is_relative, 'parquet'::varchar AS file_format,
       f.record_count, f.file_size_bytes, (f.footer_size - 8)::bigint AS footer_size, NULL::bigint AS row_id_start,
       NULL::bigint AS partition_id, NULL::varchar AS encryption_key, NULL::varchar AS partial_file_info, s.mapping_id
FROM offsetlake.data_file f
JOIN offsetlake.lake_table t ON t.table_id = f.table_id AND t.dropped_at IS NULL
JOIN offsetlake.table_schema s ON s.table_id = f.table_id AND s.schema_version = f.schema_version
WHERE f.expired_at IS NULL AND f.replaced_by IS NULL;

CREATE OR REPLACE VIEW ducklake.ducklake_file_column_stats AS
SELECT f.data_file_id, f.table_id, c.column_id, s.column_size_bytes, s.value_count - s.null_count AS value_count, s.null_count,
       offsetlake.ducklake_bound(c.type, s.min_value, false)::varchar AS min_value,
       offsetlake.ducklake_bound(c.type, s.max_value, true)::varchar AS max_value,
       CASE WHEN c.type->>'kind' IN ('float', 'double') THEN s.nan_count > 0 END AS contains_nan, NULL::varchar AS extra_stats
FROM offsetlake.data_file f
JOIN offsetlake.current_column c ON c.table_id = f.table_id
LEFT JOIN offsetlake.file_column_stats s ON s.data_file_id = f.data_file_id AND s.column_id = c.column_id
WHERE f.expired_at IS NULL AND f.replaced_by IS NULL;

CREATE OR REPLACE VIEW ducklake.ducklake_table_stats AS
SELECT f.table_id, sum(f.record_count)::bigint AS record_count, sum(f.record_count)::bigint AS next_row_id,
       sum(f.file_size_bytes)::bigint AS file_size_bytes
FROM offsetlake.data_file f
JOIN offsetlake.lake_table t ON t.table_id = f.table_id AND t.dropped_at IS NULL
WHERE f.expired_at IS NULL AND f.replaced_by IS NULL
GROUP BY f.table_id;

-- 2. Iceberg: a file is in the snapshots [added_sequence, removed_sequence) of each of its
-- memberships. A source a merge replaced becomes live again when retention expires the
-- merged file while Kafka still holds the source (src/catalog/retention.ts): the next cut
-- adds it again, a second membership. At most one is open.
ALTER TABLE iceberg_file DROP CONSTRAINT iceberg_file_pkey;
ALTER TABLE iceberg_file ADD PRIMARY KEY (data_file_id, added_sequence);
CREATE UNIQUE INDEX iceberg_file_open ON iceberg_file (data_file_id) WHERE removed_sequence IS NULL;

-- A cut (migration 16's, same contract) with merges. The newest snapshot's files that a
-- merge replaced leave it; by Iceberg's spec ("replace: data and delete files were added
-- and removed without changing table data; i.e., compaction") a snapshot is a replace only
-- when its files hold exactly the records of those it removes. So a cut writes up to two
-- snapshots, as Iceberg's own transactions commit an append and a rewrite:
--   first, as before, an append, delete or overwrite of the rest: live files no snapshot
--     names, and files of the newest snapshot now expired or replaced otherwise (a merged
--     file with records no snapshot had named is an addition, its named sources removals:
--     data changed, an overwrite);
--   then a replace: each live merged file no snapshot names whose records the newest snapshot
--     held in full (the files of the newest snapshot whose replaced_by chain reaches it:
--     those files tile disjoint offsets, so equal record counts mean all of its records),
--     and those files.
-- Either part alone is one snapshot. The replace comes second, so that neither snapshot
-- names a file retention expired. A cut is due at once when a file of a snapshot in the
-- history expired (every snapshot naming an expired file leaves the history, older ones
-- too: a replaced file expires without being in the newest), otherwise when anything
-- changed and the newest was cut at least p_interval_ms ago.
CREATE OR REPLACE FUNCTION cut_iceberg_snapshot(p_table_id bigint, p_interval_ms bigint, p_max_snapshots integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  last_seq bigint;
  seq bigint;
  newest_cut timestamptz;
  newest_summary jsonb;
  merged_ids bigint[];
  sources_ids bigint[];
  added_ids bigint[];
  removed_ids bigint[];
  doomed_sequences bigint[];
  doomed_reasons text[];
  expired_named boolean;
  part integer;
  part_added bigint[];
  part_removed bigint[];
  part_operation text;
  added_records numeric;
  added_bytes numeric;
  removed_records numeric;
  removed_bytes numeric;
  totals jsonb;
  snapshot_id bigint;
BEGIN
  IF p_max_snapshots IS NULL OR p_max_snapshots < 1 THEN
    RAISE EXCEPTION 'the history must keep at least one snapshot, got %', p_max_snapshots;
  END IF;
  INSERT INTO offsetlake.iceberg_table (table_id) VALUES (p_table_id) ON CONFLICT DO NOTHING;
  SELECT t.last_sequence INTO last_seq FROM offsetlake.iceberg_table t WHERE t.table_id = p_table_id FOR UPDATE;
  SELECT s.cut_at, s.summary INTO newest_cut, newest_summary
    FROM offsetlake.iceberg_snapshot s WHERE s.table_id = p_table_id AND s.sequence_number = last_seq;

  -- What the cut does, read in one statement, so from one snapshot of the catalog: a merge
  -- committing between two reads could otherwise have its sources removed and not the
  -- merged file added. chain: (named file, a file its replaced_by chain reaches); pure: the
  -- live merged files that hold only records the newest snapshot named.
  WITH RECURSIVE chain AS (
    SELECT f.data_file_id AS named_id, f.record_count, f.replaced_by AS reached
      FROM offsetlake.iceberg_file i JOIN offsetlake.data_file f ON f.data_file_id = i.data_file_id
     WHERE i.table_id = p_table_id AND i.removed_sequence IS NULL AND f.replaced_by IS NOT NULL AND f.expired_at IS NULL
    UNION ALL
    SELECT c.named_id, c.record_count, f.replaced_by
      FROM chain c JOIN offsetlake.data_file f ON f.data_file_id = c.reached WHERE f.replaced_by IS NOT NULL
  ), pure AS (
    SELECT c.reached, array_agg(c.named_id) AS named
      FROM chain c JOIN offsetlake.data_file m ON m.data_file_id = c.reached
     WHERE m.replaced_by IS NULL AND m.expired_at IS NULL
       AND NOT EXISTS (SELECT FROM offsetlake.iceberg_file i WHERE i.data_file_id = m.data_file_id AND i.removed_sequence IS NULL)
     GROUP BY c.reached, m.record_count
    HAVING sum(c.record_count) = m.record_count
  ), merged AS (
    SELECT coalesce(array_agg(p.reached ORDER BY p.reached), '{}') AS ids FROM pure p
  ), sources AS (
    SELECT coalesce(array_agg(n ORDER BY n), '{}') AS ids FROM pure p, unnest(p.named) n
  ), added AS (
    SELECT coalesce(array_agg(f.data_file_id ORDER BY f.data_file_id), '{}') AS ids
      FROM offsetlake.data_file f, merged
     WHERE f.table_id = p_table_id AND f.expired_at IS NULL AND f.replaced_by IS NULL AND NOT f.data_file_id = ANY (merged.ids)
       AND NOT EXISTS (SELECT FROM offsetlake.iceberg_file i WHERE i.data_file_id = f.data_file_id AND i.removed_sequence IS NULL)
  ), removed AS (
    SELECT coalesce(array_agg(i.data_file_id ORDER BY i.data_file_id), '{}') AS ids
      FROM offsetlake.iceberg_file i JOIN offsetlake.data_file f ON f.data_file_id = i.data_file_id, sources
     WHERE i.table_id = p_table_id AND i.removed_sequence IS NULL AND (f.expired_at IS NOT NULL OR f.replaced_by IS NOT NULL)
       AND NOT f.data_file_id = ANY (sources.ids)
  ), kept AS (
    SELECT s.sequence_number FROM offsetlake.iceberg_snapshot s WHERE s.table_id = p_table_id AND s.dropped_sequence IS NULL
  ), doomed AS (
    -- the snapshots still in the history that name an expired file (the first one's id, how
    -- many): memberships of expired files that end after the oldest kept snapshot (a file
    -- that expired long ago left every kept snapshot before), each against the kept ones
    SELECT k.sequence_number, min(x.data_file_id) AS first, count(*) AS n
      FROM (SELECT i.data_file_id, i.added_sequence, i.removed_sequence
              FROM offsetlake.iceberg_file i JOIN offsetlake.data_file f ON f.data_file_id = i.data_file_id AND f.expired_at IS NOT NULL
             WHERE i.table_id = p_table_id AND (i.removed_sequence IS NULL OR i.removed_sequence > (SELECT min(sequence_number) FROM kept))) x
      JOIN kept k ON k.sequence_number >= x.added_sequence AND (x.removed_sequence IS NULL OR k.sequence_number < x.removed_sequence)
     GROUP BY k.sequence_number
  )
  SELECT merged.ids, sources.ids, added.ids, removed.ids,
         coalesce((SELECT array_agg(d.sequence_number ORDER BY d.sequence_number) FROM doomed d), '{}'),
         coalesce((SELECT array_agg('retention expired file ' || d.first || CASE WHEN d.n > 1 THEN ' and ' || (d.n - 1) || ' more' ELSE '' END || ' of this snapshot'
                                    ORDER BY d.sequence_number) FROM doomed d), '{}')
    INTO merged_ids, sources_ids, added_ids, removed_ids, doomed_sequences, doomed_reasons
    FROM merged, sources, added, removed;
  expired_named := cardinality(doomed_sequences) > 0;
  IF NOT (expired_named OR (cardinality(merged_ids) + cardinality(added_ids) + cardinality(removed_ids) > 0
                             AND (newest_cut IS NULL OR now() - newest_cut >= p_interval_ms * interval '1 millisecond'))) THEN
    RETURN last_seq;
  END IF;

  seq := last_seq;
  totals := coalesce(newest_summary, '{}'::jsonb);
  FOR part IN 1..2 LOOP
    IF part = 1 THEN
      part_added := added_ids; part_removed := removed_ids;
      part_operation := CASE WHEN cardinality(removed_ids) = 0 THEN 'append' WHEN cardinality(added_ids) = 0 THEN 'delete' ELSE 'overwrite' END;
    ELSE
      part_added := merged_ids; part_removed := sources_ids; part_operation := 'replace';
    END IF;
    CONTINUE WHEN cardinality(part_added) + cardinality(part_removed) = 0;
    seq := seq + 1;
    SELECT coalesce(sum(f.record_count), 0), coalesce(sum(f.file_size_bytes), 0) INTO added_records, added_bytes
      FROM offsetlake.data_file f WHERE f.data_file_id = ANY (part_added);
    SELECT coalesce(sum(f.record_count), 0), coalesce(sum(f.file_size_bytes), 0) INTO removed_records, removed_bytes
      FROM offsetlake.data_file f WHERE f.data_file_id = ANY (part_removed);
    -- random and positive below 2^53, as every JSON reader reads it exactly
    snapshot_id := ('x' || substr(md5(gen_random_uuid()::text), 1, 16))::bit(64)::bigint & ((1::bigint << 53) - 1);
    IF snapshot_id = 0 THEN snapshot_id := 1; END IF;
    UPDATE offsetlake.iceberg_file SET removed_sequence = seq WHERE data_file_id = ANY (part_removed) AND removed_sequence IS NULL;
    INSERT INTO offsetlake.iceberg_file (data_file_id, table_id, added_sequence) SELECT unnest(part_added), p_table_id, seq;
    totals := jsonb_build_object(
      'total-data-files', (coalesce((totals->>'total-data-files')::numeric, 0) + cardinality(part_added) - cardinality(part_removed))::text,
      'total-records', (coalesce((totals->>'total-records')::numeric, 0) + added_records - removed_records)::text,
      'total-files-size', (coalesce((totals->>'total-files-size')::numeric, 0) + added_bytes - removed_bytes)::text);
    INSERT INTO offsetlake.iceberg_snapshot (table_id, sequence_number, snapshot_id, cut_at, schema_version, summary)
    SELECT p_table_id, seq, snapshot_id, now(), (SELECT max(v.schema_version) FROM offsetlake.table_schema v WHERE v.table_id = p_table_id),
           jsonb_build_object(
             'operation', part_operation,
             'added-data-files', cardinality(part_added)::text, 'deleted-data-files', cardinality(part_removed)::text,
             'added-records', added_records::text, 'deleted-records', removed_records::text,
             'added-files-size', added_bytes::text, 'removed-files-size', removed_bytes::text,
             'total-delete-files', '0', 'total-position-deletes', '0', 'total-equality-deletes', '0') || totals;
  END LOOP;

  -- every snapshot that named an expired file leaves the history: it can no longer be read
  UPDATE offsetlake.iceberg_snapshot s SET dropped_sequence = seq, dropped_reason = d.reason
    FROM unnest(doomed_sequences, doomed_reasons) AS d(sequence_number, reason)
   WHERE s.table_id = p_table_id AND s.sequence_number = d.sequence_number;
  UPDATE offsetlake.iceberg_snapshot SET dropped_sequence = seq, dropped_reason = 'the history keeps the newest ' || p_max_snapshots || ' snapshots'
   WHERE table_id = p_table_id AND dropped_sequence IS NULL AND sequence_number <= seq - p_max_snapshots;
  UPDATE offsetlake.iceberg_table SET last_sequence = seq WHERE table_id = p_table_id;
  RETURN seq;
END
$fn$;
`,
  },
];

/** The version a catalog has once every migration this offsetlake knows is applied. */
export const latestCatalogVersion = Math.max(...migrations.map((migration) => migration.version));
