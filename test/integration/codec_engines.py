"""Which engine reads which page compression: each table of the job (one per codec
offsetlake offers, the same records in each) read whole by engines no one here wrote,
through serve's Iceberg REST catalog and S3 face, and each data file's bytes as plain
Parquet. Per engine and table: the rows, the sum of _offset and the sum of the lengths of
_value (every column chunk of those columns decompressed), or the engine's error.

  pyiceberg 0.12 (RestCatalog, scan to Arrow), polars (scan_iceberg over pyiceberg's
  table, polars' own reader), DuckDB 1.4.4 (ATTACH ... TYPE iceberg), pyarrow and
  DataFusion (each data file as plain Parquet, its bytes fetched by pyiceberg's FileIO
  from the S3 face); with "daft", in Daft's own environment (requirements-daft.txt):
  daft.read_iceberg over pyiceberg's table; spark(session, job), in the tests' one Spark
  (test/helpers/iceberg_spark_server.py): Spark 4.1 with Iceberg's runtime (RESTCatalog,
  S3FileIO), one session for every table.

stdin: {"uri", "token", "tables": [...], "daft": bool}
stdout (last line): {table: {engine: [rows, sum_offset, sum_value_length] or {"error"}}}
"""
import json
import os
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))


def attempt(work):
    try:
        return [int(v) if v is not None else None for v in work()]
    except Exception as error:  # each engine's own refusal is the answer
        return {"error": f"{type(error).__name__}: {error}"[:2000], "trace": traceback.format_exc()[-2000:]}


def sums(arrow):
    """An Arrow table's rows, sum of _offset and sum of the byte lengths of _value."""
    import pyarrow.compute as pc
    return [arrow.num_rows, pc.sum(arrow.column("_offset")).as_py(), pc.sum(pc.binary_length(arrow.column("_value").cast("large_binary"))).as_py()]


def lake_catalog(job):
    from pyiceberg.catalog.rest import RestCatalog
    return RestCatalog("lake", uri=job["uri"], token=job["token"], warehouse="offsetlake")


def clients(job):
    import datafusion
    import duckdb
    import polars as pl
    import pyarrow.parquet as pq
    from duckdb_session import extension_directory

    catalog = lake_catalog(job)
    con = duckdb.connect()
    con.execute(f"SET extension_directory = '{extension_directory()}'")
    con.execute("LOAD httpfs")
    con.execute("LOAD iceberg")
    con.execute(f"CREATE SECRET ice (TYPE iceberg, TOKEN '{job['token']}')")
    con.execute(f"ATTACH 'offsetlake' AS ice (TYPE iceberg, ENDPOINT '{job['uri']}', SECRET ice)")
    out = {}
    folder = tempfile.mkdtemp(prefix="offsetlake-codecs-")
    for name in job["tables"]:
        table = catalog.load_table(("main", name))
        seen = {}
        seen["pyiceberg"] = attempt(lambda: sums(table.scan(selected_fields=("_offset", "_value")).to_arrow()))
        # polars' own reader fetches the files with its own object store: the keys and endpoint LoadTable gave pyiceberg.
        # _value is a STRING column in v6's files (v5 stored it as JSON-annotated binary, which scan_iceberg refused)
        props = table.io.properties
        options = {"aws_endpoint_url": props["s3.endpoint"], "aws_access_key_id": props["s3.access-key-id"], "aws_secret_access_key": props["s3.secret-access-key"],
                   "aws_region": props.get("s3.region", "us-east-1"), "aws_allow_http": "true"}
        seen["polars"] = attempt(lambda: pl.scan_iceberg(table, storage_options=options, reader_override="native")
                                 .select(pl.len(), pl.col("_offset").sum(), pl.col("_value").str.len_bytes().sum()).collect().row(0))
        seen["duckdb"] = attempt(lambda: con.execute(f"SELECT count(*), sum(_offset), sum(strlen(_value::VARCHAR)) FROM ice.main.{name}").fetchone())
        paths = []
        for number, task in enumerate(table.scan().plan_files()):
            path = os.path.join(folder, f"{name}-{number}.parquet")
            with table.io.new_input(task.file.file_path).open() as stream, open(path, "wb") as file:
                file.write(stream.read())
            paths.append(path)

        def by_pyarrow():
            totals = [0, 0, 0]
            for path in paths:
                for k, v in enumerate(sums(pq.read_table(path, columns=["_offset", "_value"]))):
                    totals[k] += v or 0
            return totals

        def by_datafusion():
            ctx = datafusion.SessionContext()
            totals = [0, 0, 0]
            for k, path in enumerate(paths):
                ctx.register_parquet(f"t{k}", path)
                row = ctx.sql(f"SELECT count(*), sum(_offset), sum(octet_length(CAST(_value AS VARCHAR))) FROM t{k}").to_arrow_table().to_pylist()[0]
                for i, v in enumerate(row.values()):
                    totals[i] += v or 0
            return totals

        seen["pyarrow"] = attempt(by_pyarrow)
        seen["datafusion"] = attempt(by_datafusion)
        out[name] = seen
    return out


def spark(session, job):
    """Run by the tests' one Spark (test/helpers/iceberg_spark_server.py), `lake` serve's catalog."""
    out = {}
    for name in job["tables"]:
        def read():
            row = session.sql(f"SELECT count(*) AS n, sum(_offset) AS o, sum(octet_length(CAST(_value AS BINARY))) AS v FROM lake.main.{name}").collect()[0]
            return [row["n"], row["o"], row["v"]]
        out[name] = {"spark": attempt(read)}
    return out


def daft(job):
    import daft as daft_engine
    catalog = lake_catalog(job)
    # daft.read_iceberg reads the files with its own reader, at the S3 face and keys LoadTable gave pyiceberg's table
    return {name: {"daft": attempt(lambda n=name: sums(daft_engine.read_iceberg(catalog.load_table(("main", n))).select("_offset", "_value").to_arrow()))}
            for name in job["tables"]}


def main():
    job = json.loads(sys.stdin.read())
    print(json.dumps(daft(job) if job.get("daft") else clients(job)))


if __name__ == "__main__":
    main()
