"""One engine reading one served file over plain HTTP, with a filter on _offset that its
footer statistics let it answer from one row group: what bench/reader.ts measures the
Kafka bytes of (the server's /metrics, read before and after by the bench).

usage: python3 engine_read.py duckdb|pyarrow URL LOW HIGH
stdout: one JSON document {"engine", "rows", "min", "max", "seconds"}
"""
import json
import os
import sys
import time

engine, url, low, high = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
started = time.monotonic()
if engine == "duckdb":
    import duckdb
    import duckdb_ext

    connection = duckdb.connect()
    # The httpfs extension of the PyPI wheel duckdb-ext-httpfs, loaded offline.
    connection.execute(f"SET extension_directory = '{os.path.join(list(duckdb_ext.__path__)[0], 'extensions')}'")
    connection.execute("LOAD httpfs")
    rows, least, most = connection.execute(
        f"SELECT count(*), min(_offset), max(_offset) FROM read_parquet('{url}') "
        f"WHERE _offset BETWEEN {low} AND {high} AND length(_value::VARCHAR) >= 0"
    ).fetchone()
elif engine == "pyarrow":
    import fsspec
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    # No read-ahead cache: every read pyarrow makes is one Range request of its own size,
    # so the server sees what the engine asked for, not a block cache's rounding.
    fs = fsspec.filesystem("http", block_size=64 * 1024)
    with fs.open(url, "rb", cache_type="none") as handle:
        table = pq.read_table(handle, columns=["_offset", "_value"], filters=[("_offset", ">=", low), ("_offset", "<=", high)])
    rows = table.num_rows
    least = pc.min(table["_offset"]).as_py() if rows else None
    most = pc.max(table["_offset"]).as_py() if rows else None
else:
    raise SystemExit(f"unknown engine {engine}")
print(json.dumps({"engine": engine, "rows": rows, "min": least, "max": most, "seconds": time.monotonic() - started}))
