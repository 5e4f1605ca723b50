"""Engines no one here wrote read the engine tables (test/helpers/engine-tables.ts) through
serve's Iceberg REST catalog, each with its own reader: pyiceberg 0.12 (to Arrow), DuckDB
1.4.4's iceberg extension, polars (`scan_iceberg`), Daft (`daft.read_iceberg`, in an
environment of its own: test/integration/requirements-daft.txt) and Spark 4.1 (Iceberg's
Spark runtime, one session for every query: `spark(session, job)`, run by the tests' one
Spark, test/helpers/iceberg_spark_server.py). For each table: `SELECT *` against the
expected rows (test/helpers/engine_rows.py's `compare`), and when that fails each column
alone, to name every column the engine cannot read with the engine's own message; a field
of a struct in a struct read directly (`addr.geo.lat`); a filter inside one hour; the
metadata tables (files, snapshots) and time travel to the older snapshot where the engine
has them.

usage: python3 iceberg_engines.py ENGINE[,ENGINE...]   (pyiceberg, duckdb, polars, daft)
stdin: {"catalogUri", "token", "s3": {"endpoint", "bucket", "region", "accessKeyId",
        "secretAccessKey"}, "tables": {format: name}, "expectedFile", "window": {"from", "to"} (ms)}
stdout (last line): {ENGINE: {TABLE: {"select", "columns", "nested", "window", "metadata",
        "timeTravel"}}}: each either its answer or {"error"}.
"""
import datetime as dt
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))

from engine_rows import canonical, compare  # noqa: E402

UTC = dt.timezone.utc
NESTED = ("addr", "geo", "lat")  # a struct in a struct, in every registry-format table
KEYS = ["_kafka_partition", "_offset"]


def message(error):
    """The engine's own words, first line first (Spark's and Daft's run long)."""
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 1500 else text[:1500] + "…"


def attempt(work):
    try:
        return work()
    except Exception as error:  # noqa: BLE001 - the engine's refusal is the answer
        return {"error": message(error), "trace": traceback.format_exc()[-2000:]}


def nested_row(row, value):
    """A row holding only the keys and `addr.geo.lat` = value, as compare reads it."""
    return {"_kafka_partition": row[0], "_offset": row[1], "addr": {"geo": {"lat": canonical(value)}}}


def in_window(expected, window):
    """The expected table cut to the rows whose _timestamp lies in [from, to)."""
    low = dt.datetime.fromtimestamp(window["from"] / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    high = dt.datetime.fromtimestamp(window["to"] / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return dict(expected, rows=[r for r in expected["rows"] if low <= r["_timestamp"] < high])


class Engine:
    """One engine's way to read a table; each method returns canonical rows (or raises)."""

    def all_rows(self, table):
        raise NotImplementedError

    def columns(self, table, columns):
        raise NotImplementedError

    def nested(self, table):
        raise NotImplementedError

    def window(self, table, low, high):
        raise NotImplementedError

    def metadata(self, table):
        return None  # the engine has no metadata tables

    def time_travel(self, table, snapshot_id):
        raise NotImplementedError

    def snapshots(self, table):
        return self.pyiceberg_table(table).metadata.snapshots

    def pyiceberg_table(self, table):
        from pyiceberg.catalog.rest import RestCatalog
        if not hasattr(self, "_catalog"):
            self._catalog = RestCatalog("lake", uri=self.job["catalogUri"], token=self.job["token"], warehouse="offsetlake")
        return self._catalog.load_table(("main", table))


def rows_of(dicts):
    return [canonical(r) for r in dicts]


class PyIceberg(Engine):
    def __init__(self, job):
        self.job = job

    def all_rows(self, table):
        return rows_of(self.pyiceberg_table(table).scan().to_arrow().to_pylist())

    def columns(self, table, columns):
        return rows_of(self.pyiceberg_table(table).scan(selected_fields=tuple(KEYS + columns)).to_arrow().to_pylist())

    def nested(self, table):
        rows = self.pyiceberg_table(table).scan(selected_fields=(*KEYS, ".".join(NESTED))).to_arrow().to_pylist()
        return [nested_row((r["_kafka_partition"], r["_offset"]), ((r.get("addr") or {}).get("geo") or {}).get("lat")) for r in rows]

    def window(self, table, low, high):
        from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
        where = And(GreaterThanOrEqual("_timestamp", low * 1000), LessThan("_timestamp", high * 1000))
        return rows_of(self.pyiceberg_table(table).scan(row_filter=where, selected_fields=tuple(KEYS)).to_arrow().to_pylist())

    def metadata(self, table):
        loaded = self.pyiceberg_table(table)
        return {"files": sorted(r["file_path"] for r in loaded.inspect.files().to_pylist()),
                "snapshots": [r["snapshot_id"] for r in loaded.inspect.snapshots().to_pylist()]}

    def time_travel(self, table, snapshot_id):
        return self.pyiceberg_table(table).scan(snapshot_id=snapshot_id).to_arrow().num_rows


class DuckDB(Engine):
    def __init__(self, job):
        import duckdb
        from duckdb_session import extension_directory
        self.job = job
        self.con = duckdb.connect()
        self.con.execute(f"SET extension_directory = '{extension_directory()}'")
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.execute("LOAD httpfs")
        self.con.execute("LOAD iceberg")
        self.con.execute(f"CREATE SECRET ice (TYPE iceberg, TOKEN '{job['token']}')")
        self.con.execute(f"ATTACH 'offsetlake' AS ice (TYPE iceberg, ENDPOINT '{job['catalogUri']}', SECRET ice)")

    def query(self, sql):
        cursor = self.con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [canonical(dict(zip(names, row))) for row in cursor.fetchall()]

    def all_rows(self, table):
        return self.query(f"SELECT * FROM ice.main.{table}")

    def columns(self, table, columns):
        names = ", ".join('"' + c + '"' for c in KEYS + columns)
        return self.query(f"SELECT {names} FROM ice.main.{table}")

    def nested(self, table):
        rows = self.con.execute(f"SELECT _kafka_partition, _offset, addr.geo.lat FROM ice.main.{table}").fetchall()
        return [nested_row(r, r[2]) for r in rows]

    def window(self, table, low, high):
        return self.query(f"SELECT _kafka_partition, _offset FROM ice.main.{table} WHERE _timestamp >= make_timestamptz({low * 1000}::BIGINT) AND _timestamp < make_timestamptz({high * 1000}::BIGINT)")

    def metadata(self, table):
        snapshots = [r[0] for r in self.con.execute(f"SELECT snapshot_id FROM iceberg_snapshots(ice.main.{table}) ORDER BY sequence_number").fetchall()]
        files = sorted(r[0] for r in self.con.execute(f"SELECT file_path FROM iceberg_metadata(ice.main.{table}) WHERE status != 'DELETED'").fetchall())
        return {"files": files, "snapshots": snapshots}

    def time_travel(self, table, snapshot_id):
        return self.con.execute(f"SELECT count(*) FROM ice.main.{table} AT (VERSION => {snapshot_id})").fetchone()[0]


class Polars(Engine):
    def __init__(self, job):
        self.job = job
        # without the optional polars_iceberg package polars plans with pyiceberg, and says so on every scan
        os.environ.setdefault("POLARS_ICEBERG_PLANNER", "pyiceberg")

    def frame(self, table, **options):
        import polars as pl
        # polars' own reader takes the S3 face from storage_options (docs/engines.md, polars), not from LoadTable's config
        s3 = self.job["s3"]
        storage = {"aws_endpoint_url": s3["endpoint"], "aws_access_key_id": s3["accessKeyId"], "aws_secret_access_key": s3["secretAccessKey"],
                   "aws_region": s3["region"], "aws_allow_http": "true"}
        return pl.scan_iceberg(self.pyiceberg_table(table), storage_options=storage, **options)

    def all_rows(self, table):
        return rows_of(self.frame(table).collect().to_dicts())

    def columns(self, table, columns):
        return rows_of(self.frame(table).select(KEYS + columns).collect().to_dicts())

    def nested(self, table):
        import polars as pl
        lat = pl.col("addr").struct.field("geo").struct.field("lat").alias("lat")
        rows = self.frame(table).select(pl.col("_kafka_partition"), pl.col("_offset"), lat).collect().rows()
        return [nested_row(r, r[2]) for r in rows]

    def window(self, table, low, high):
        import polars as pl
        at = lambda ms: dt.datetime.fromtimestamp(ms / 1000, UTC)  # noqa: E731
        frame = self.frame(table).filter((pl.col("_timestamp") >= at(low)) & (pl.col("_timestamp") < at(high)))
        return rows_of(frame.select(KEYS).collect().to_dicts())

    def time_travel(self, table, snapshot_id):
        return self.frame(table, snapshot_id=snapshot_id).select(KEYS).collect().height


class Daft(Engine):
    def __init__(self, job):
        self.job = job

    def frame(self, table, **options):
        import daft
        return daft.read_iceberg(self.pyiceberg_table(table), **options)

    def all_rows(self, table):
        return rows_of(self.frame(table).to_pylist())

    def columns(self, table, columns):
        return rows_of(self.frame(table).select(*(KEYS + columns)).to_pylist())

    def nested(self, table):
        from daft import col
        lat = col("addr")["geo"]["lat"].alias("lat")
        rows = self.frame(table).select(col("_kafka_partition"), col("_offset"), lat).to_pylist()
        return [nested_row((r["_kafka_partition"], r["_offset"]), r["lat"]) for r in rows]

    def window(self, table, low, high):
        from daft import col, lit
        at = lambda ms: lit(dt.datetime.fromtimestamp(ms / 1000, UTC))  # noqa: E731
        frame = self.frame(table).where((col("_timestamp") >= at(low)) & (col("_timestamp") < at(high)))
        return rows_of(frame.select(*KEYS).to_pylist())

    def time_travel(self, table, snapshot_id):
        return len(self.frame(table, snapshot_id=snapshot_id).select(*KEYS).to_pylist())


class Spark(Engine):
    def __init__(self, session):
        self.spark = session

    def query(self, sql):
        return [canonical(r.asDict(recursive=False)) for r in self.spark.sql(sql).collect()]

    def all_rows(self, table):
        return self.query(f"SELECT * FROM lake.main.{table}")

    def columns(self, table, columns):
        names = ", ".join(f"`{c}`" for c in KEYS + columns)
        return self.query(f"SELECT {names} FROM lake.main.{table}")

    def nested(self, table):
        rows = self.spark.sql(f"SELECT _kafka_partition, _offset, addr.geo.lat AS lat FROM lake.main.{table}").collect()
        return [nested_row((r["_kafka_partition"], r["_offset"]), r["lat"]) for r in rows]

    def window(self, table, low, high):
        text = lambda ms: dt.datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")  # noqa: E731
        return self.query(f"SELECT _kafka_partition, _offset FROM lake.main.{table} WHERE _timestamp >= TIMESTAMP '{text(low)}' AND _timestamp < TIMESTAMP '{text(high)}'")

    def metadata(self, table):
        files = sorted(r["file_path"] for r in self.spark.sql(f"SELECT file_path FROM lake.main.{table}.files").collect())
        snapshots = [r["snapshot_id"] for r in self.spark.sql(f"SELECT snapshot_id FROM lake.main.{table}.snapshots ORDER BY committed_at, snapshot_id").collect()]
        return {"files": files, "snapshots": snapshots}

    def time_travel(self, table, snapshot_id):
        return self.spark.sql(f"SELECT count(*) AS n FROM lake.main.{table} VERSION AS OF {snapshot_id}").collect()[0]["n"]

    def snapshots(self, table):
        return None


ENGINES = {"pyiceberg": PyIceberg, "duckdb": DuckDB, "polars": Polars, "daft": Daft}

# Bugs of an engine that no file of ours can avoid, each named by its upstream issue and
# reported apart (engine_rows.compare) so the test holds the engine to exactly that bug
# and fails once it is fixed. pyiceberg 0.12 rebuilds a null list of structs (and a map:
# a list of key/value structs) as an empty list on read; pyarrow reads null from the same
# files (apache/iceberg-python issue 3833, fix proposed in its pull request 3834).
KNOWN_BUGS = {
    "pyiceberg": {"iceberg-python#3833 (a null list of structs read as [])": lambda want, got: want is None and got == []},
}


def check_table(engine, table, expected, window, known):
    out = {}
    selected = attempt(lambda: engine.all_rows(table))
    if isinstance(selected, dict):
        out["select"] = selected
        # each column alone: which ones the engine cannot read, in its own words
        columns = {}
        for column in expected["columns"]:
            if column in KEYS:
                continue
            read = attempt(lambda c=column: engine.columns(table, [c]))
            columns[column] = read["error"] if isinstance(read, dict) else compare(expected, read, KEYS + [column]).get(column, "ok")
        out["columns"] = columns
    else:
        out["select"] = {"rows": len(selected), "problems": compare(expected, selected, known=known)}
    if "addr" in expected["columns"]:
        nested = attempt(lambda: engine.nested(table))
        out["nested"] = nested if isinstance(nested, dict) else {"rows": len(nested), "problems": compare(expected, nested, ["addr.geo.lat"])}
    cut = in_window(expected, window)
    read = attempt(lambda: engine.window(table, window["from"], window["to"]))
    out["window"] = read if isinstance(read, dict) else {"rows": len(read), "expectedRows": len(cut["rows"]), "problems": compare(cut, read, ["_offset"])}
    metadata = attempt(lambda: engine.metadata(table))
    if metadata is not None:
        out["metadata"] = metadata
    snapshots = metadata.get("snapshots") if isinstance(metadata, dict) and "snapshots" in metadata else None
    if snapshots is None:
        snapshots = attempt(lambda: [s.snapshot_id for s in engine.snapshots(table)])
    if isinstance(snapshots, list) and snapshots:
        travelled = attempt(lambda: engine.time_travel(table, snapshots[0]))
        out["timeTravel"] = travelled if isinstance(travelled, dict) else {"snapshot": snapshots[0], "rows": travelled, "expectedRows": expected["firstSnapshotRows"]}
    else:
        out["timeTravel"] = {"error": f"no snapshot list: {snapshots}"}
    return out


def check_tables(engine, name, job):
    with open(job["expectedFile"], encoding="utf-8") as handle:
        expected = json.load(handle)["tables"]
    return {table: check_table(engine, table, expected[table], job["window"], KNOWN_BUGS.get(name)) for table in job["tables"].values()}


def spark(session, job):
    """Spark's answer, run by the tests' one Spark (test/helpers/iceberg_spark_server.py), `lake` serve's catalog."""
    return {"spark": check_tables(Spark(session), "spark", job)}


def main():
    names = sys.argv[1].split(",")
    job = json.loads(sys.stdin.read())
    results = {}
    for name in names:
        engine = attempt(lambda n=name: ENGINES[n](job))
        if isinstance(engine, dict):
            results[name] = {"error": engine["error"], "trace": engine["trace"]}
            continue
        try:
            results[name] = check_tables(engine, name, job)
        finally:
            if hasattr(engine, "close"):
                engine.close()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
