"""The HTTP requests DuckDB 1.4.4 makes for one query through the attach, in the order it
made them: what the reader has to answer for that query (bench/reader-lambda-memory.ts
replays them against the reader function).

usage: duckdb_requests.py SPEC.json   where SPEC is {"setup": [SQL, ...], "sql": SQL}
prints one JSON line: {"rows": [[...]], "requests": [{"method", "url", "range"}, ...]}
"""
import json
import os
import sys

import duckdb
import duckdb_ext


def main():
    spec = json.load(open(sys.argv[1], encoding="utf-8"))
    connection = duckdb.connect()
    folder = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    connection.execute("SET extension_directory = '" + folder.replace("'", "''") + "'")
    for statement in spec.get("setup", []):
        connection.execute(statement)
    connection.execute("CALL enable_logging('HTTP')")
    rows = connection.execute(spec["sql"]).fetchall()
    logged = connection.execute(
        "SELECT request.type, request.url, request.headers['Range'] FROM duckdb_logs_parsed('HTTP') ORDER BY request.start_time"
    ).fetchall()
    requests = [{"method": method, "url": url, "range": byte_range} for method, url, byte_range in logged]
    print(json.dumps({"rows": [[str(value) for value in row] for row in rows], "requests": requests}))


if __name__ == "__main__":
    main()
