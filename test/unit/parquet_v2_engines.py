"""Reads Parquet files with pyarrow, DuckDB, polars and DataFusion, and writes for each, as
JSON, what each engine saw, normalised to one text form (so engines can be compared), with
what pyarrow says of the footer: field ids, logical types, the page index, and whether
each column chunk's footer statistics bound the values pyarrow reads from that chunk.

stdin: [{"path", "filter": [column, low, high] or null}, ...] (one process for every file:
the engines' imports cost more than reading a file)
writes: PATH.seen.json for each file"""
import datetime
import decimal
import json
import math
import re
import sys

import datafusion
import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def norm(v):
    """One text form for a value, whatever the engine's Python type for it."""
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return "-0" if v == 0 and math.copysign(1, v) < 0 else repr(v)
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "0x" + bytes(v).hex()
    if isinstance(v, str):
        return "0x" + v.encode("utf-8", "surrogatepass").hex()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return v.isoformat()
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    return str(v)


def rows_of(table):
    # timestamps as integers: engines disagree on nanosecond datetimes in Python
    cols = []
    for f in table.schema:
        col = table.column(f.name)
        if pa.types.is_timestamp(f.type):
            # microseconds at least: DuckDB widens milliseconds to them
            if f.type.unit in ("s", "ms"):
                col = col.cast(pa.timestamp("us", f.type.tz))
            col = col.cast(pa.int64())
        elif pa.types.is_date(f.type):
            col = col.cast(pa.int32())
        elif isinstance(f.type, pa.BaseExtensionType):
            col = col.cast(f.type.storage_type)
        elif pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type):
            col = col.cast(pa.string())
        elif pa.types.is_large_binary(f.type) or pa.types.is_binary_view(f.type):
            col = col.cast(pa.binary())
        cols.append(col)
    t = pa.table(cols, names=table.schema.names)
    return [{k: norm(v) for k, v in row.items()} for row in t.to_pylist()]


def seen(path, filter_by):
    f = pq.ParquetFile(path)
    md = f.metadata
    arrow = pq.read_table(path)
    pyarrow_rows = rows_of(arrow)

    engines = {}
    con = duckdb.connect()
    engines["duckdb"] = rows_of(con.sql(f"SELECT * FROM read_parquet('{path}')").fetch_arrow_table())
    engines["polars"] = rows_of(pl.read_parquet(path).to_arrow())
    ctx = datafusion.SessionContext()
    ctx.register_parquet("t", path)
    engines["datafusion"] = rows_of(ctx.sql("SELECT * FROM t").to_arrow_table())

    stats_problems = []
    for g in range(md.num_row_groups):
        group = f.read_row_group(g)
        for j in range(md.num_columns):
            chunk = md.row_group(g).column(j)
            path_in_schema = chunk.path_in_schema
            values = group.column(path_in_schema.split(".")[0])
            for part in path_in_schema.split(".")[1:]:
                if part in ("list",):
                    values = pc.list_flatten(values)
                elif part == "element":
                    continue
                else:
                    values = pc.struct_field(values, part)
            values = values.combine_chunks() if hasattr(values, "combine_chunks") else values
            s = chunk.statistics
            if s is None:
                stats_problems.append(f"{path_in_schema} row group {g}: no statistics")
                continue
            if isinstance(values.type, pa.BaseExtensionType):
                values = values.storage
            # timestamps and dates by their stored integers: extreme ones have no Python datetime
            raw = pa.types.is_timestamp(values.type) or pa.types.is_date(values.type)
            if pa.types.is_timestamp(values.type):
                values = values.cast(pa.int64())
            elif pa.types.is_date(values.type):
                values = values.cast(pa.int32())
            if pa.types.is_floating(values.type):
                values = pc.filter(values, pc.invert(pc.is_nan(values)))
            present = pc.drop_null(values)
            if len(present) == 0:
                if s.has_min_max:
                    stats_problems.append(f"{path_in_schema} row group {g}: min/max without values")
                continue
            mm = pc.min_max(present)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            smin, smax = (s.min_raw, s.max_raw) if raw else (s.min, s.max)
            if isinstance(lo, str):
                lo, hi = lo.encode("utf-8", "surrogatepass"), hi.encode("utf-8", "surrogatepass")
                smin = smin.encode("utf-8", "surrogatepass") if isinstance(smin, str) else smin
                smax = smax.encode("utf-8", "surrogatepass") if isinstance(smax, str) else smax
            if isinstance(lo, float) and lo == 0:
                lo = -0.0  # the specification's zero rule: a zero min is written -0, a zero max +0
            ok = smin <= lo and hi <= smax
            if isinstance(lo, bytes):
                # bounds of more than 64 bytes are cut: min to a prefix, max to a raised prefix
                ok = ok and (smin == lo if len(lo) <= 64 else lo.startswith(smin) and len(smin) <= 64)
                # (a max that cannot be raised, all U+10FFFF or 0xFF, is kept whole)
                ok = ok and (smax == hi if len(hi) <= 64 else smax == hi or (len(smax) <= 64 and smax > hi))
            else:
                ok = ok and smin == lo and smax == hi
            if not ok:
                stats_problems.append(f"{path_in_schema} row group {g}: statistics {smin!r}..{smax!r} for values {lo!r}..{hi!r}")

    out = {
        "rows": md.num_rows,
        "pyarrow": pyarrow_rows,
        "disagree": {name: sum(1 for a, b in zip(rows, pyarrow_rows) if a != b) + abs(len(rows) - len(pyarrow_rows)) for name, rows in engines.items()},
        "first_disagreement": {name: next(([a, b] for a, b in zip(rows, pyarrow_rows) if a != b), None) for name, rows in engines.items()},
        "field_ids": {field.name: int(field.metadata[b"PARQUET:field_id"]) for field in arrow.schema if field.metadata and b"PARQUET:field_id" in field.metadata},
        "logical": {f.schema.column(j).path: str(f.schema.column(j).logical_type) for j in range(md.num_columns)},
        "page_index": sorted({(md.row_group(i).column(j).path_in_schema, md.row_group(i).column(j).has_column_index, md.row_group(i).column(j).has_offset_index) for i in range(md.num_row_groups) for j in range(md.num_columns)}),
        "statistics_problems": stats_problems,
    }
    if filter_by:
        # DataFusion prunes pages by the page index; its answer must not change
        filter_column, lo, hi = filter_by
        q = f"SELECT count(*) AS n FROM t WHERE {filter_column} BETWEEN {lo} AND {hi}"
        plan = ctx.sql("EXPLAIN ANALYZE " + q).to_arrow_table().column(1)[0].as_py()
        pruned = re.search(r"page_index_pages_pruned=(\d+) total → (\d+) matched", plan)
        out["datafusion_count"] = ctx.sql(q).to_arrow_table().column(0)[0].as_py()
        out["pyarrow_count"] = int(pc.sum(pc.and_(pc.greater_equal(arrow.column(filter_column), lo), pc.less_equal(arrow.column(filter_column), hi))).as_py())
        out["pages"] = [int(pruned.group(1)), int(pruned.group(2))] if pruned else None
    return out


for job in json.load(sys.stdin):
    with open(job["path"] + ".seen.json", "w", encoding="utf-8") as out_file:
        json.dump(seen(job["path"], job.get("filter")), out_file)
