"""What an engine pays for small row groups (issue 49, bench/compaction.ts): a merged file
as offsetlake builds it (full row groups) against the same rows written again by pyarrow
with the row groups a concatenation of small source files would keep. DuckDB times
count(*) and a full scan over each, median of 15 runs after one warm-up.

    python3 bench/row_groups.py MERGED.parquet ROWS_PER_GROUP [ROWS_PER_GROUP ...]
"""
import statistics
import sys
import time

import duckdb
import pyarrow.parquet as pq

path = sys.argv[1]
sizes = [int(s) for s in sys.argv[2:]]
table = pq.read_table(path)
meta = pq.ParquetFile(path).metadata
variants = [(f"as merged ({meta.num_row_groups} row groups)", path)]
for rows in sizes:
    out = f"{path}.rg{rows}.parquet"
    pq.write_table(table, out, row_group_size=rows, compression="zstd", compression_level=1, write_page_index=True)
    variants.append((f"{rows} rows a group ({pq.ParquetFile(out).metadata.num_row_groups} row groups)", out))

con = duckdb.connect()
con.execute("SET threads = 1")


def timed(sql: str) -> float:
    con.execute(sql).fetchall()
    runs = []
    for _ in range(15):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs) * 1000


print(f"{table.num_rows} rows")
base = None
for name, file in variants:
    count = timed(f"SELECT count(*) FROM read_parquet('{file}')")
    scan = timed(f"SELECT sum(length(_value)), count(DISTINCT _key), max(_offset) FROM read_parquet('{file}')")
    if base is None:
        base = (count, scan)
    print(f"{name}: count(*) {count:.2f} ms ({count / base[0]:.1f}x), full scan {scan:.1f} ms ({scan / base[1]:.1f}x)")
