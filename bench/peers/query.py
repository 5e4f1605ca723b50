"""One timed DuckDB 1.4.4 query (PyPI duckdb, extensions from the duckdb-ext-* wheels) in a
new process: the set-up statements (LOAD, secrets, ATTACH) run first and are not timed,
then the query, whose wall time and rows are printed.

usage: query.py SPEC.json   where SPEC is {"setup": [SQL, ...], "sql": SQL, "httpLog": false}
prints one JSON line: {"seconds": s, "cpuSeconds": s, "columns": [...], "rows": [[...], ...]} or {"error": "..."}
(cpuSeconds: the CPU of this DuckDB process, every thread, over the query alone);
with "httpLog": true also "requests": [{"method", "url", "range"}, ...], every HTTP request
DuckDB made for the query in the order it made them (what a reader has to answer for it;
bench/reader-lambda-memory.ts replays them)
"""
import datetime
import decimal
import json
import os
import sys
import time

import duckdb
import duckdb_ext


def plain(value):
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (datetime.datetime, datetime.date, decimal.Decimal)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return str(value)


def main():
    spec = json.load(open(sys.argv[1], encoding="utf-8"))
    connection = duckdb.connect()
    folder = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    connection.execute("SET extension_directory = '" + folder.replace("'", "''") + "'")
    try:
        for statement in spec.get("setup", []):
            connection.execute(statement)
        if spec.get("httpLog"):
            connection.execute("CALL enable_logging('HTTP')")
        started = time.perf_counter()
        cpu_started = time.process_time()
        cursor = connection.execute(spec["sql"])
        rows = cursor.fetchall()
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        answer = {"seconds": seconds, "cpuSeconds": cpu_seconds, "columns": [d[0] for d in cursor.description], "rows": plain(rows)}
        if spec.get("httpLog"):
            logged = connection.execute(
                "SELECT request.type, request.url, request.headers['Range'] FROM duckdb_logs_parsed('HTTP') ORDER BY request.start_time"
            ).fetchall()
            answer["requests"] = [{"method": method, "url": url, "range": byte_range} for method, url, byte_range in logged]
        print(json.dumps(answer))
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        sys.exit(1)


if __name__ == "__main__":
    main()
