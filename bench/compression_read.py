"""An engine reading whole Parquet files from local disk, every column of every row: the
CPU an engine spends to decompress and decode what a codec made (bench/compression.ts).
Each engine on one thread, so that CPU time is its work and not a pool's idling.

usage: python3 compression_read.py ROUNDS FILE...
stdout: one JSON document {FILE: {"pyarrow": cpu_s, "duckdb": cpu_s, "rows": n}}, each the best of ROUNDS
"""
import json
import sys
import time

import duckdb
import pyarrow.parquet as pq

rounds = int(sys.argv[1])
files = sys.argv[2:]


def best(read):
    times = []
    for _ in range(rounds):
        start = time.process_time()
        read()
        times.append(time.process_time() - start)
    return min(times)


connection = duckdb.connect()
connection.execute("SET threads = 1")
out = {}
for path in files:
    rows = pq.read_table(path, use_threads=False).num_rows

    def by_pyarrow():
        pq.read_table(path, use_threads=False)

    def by_duckdb():
        # materialized in DuckDB's own vectors: every page of every column decompressed and decoded
        connection.execute(f"CREATE OR REPLACE TEMP TABLE t AS SELECT * FROM read_parquet('{path}')")
        connection.execute("DROP TABLE t")

    out[path] = {"rows": rows, "pyarrow": best(by_pyarrow), "duckdb": best(by_duckdb)}
print(json.dumps(out))
