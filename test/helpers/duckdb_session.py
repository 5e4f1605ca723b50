"""One DuckDB 1.4.4 session (PyPI duckdb, with the ducklake, postgres and httpfs
extensions of the PyPI wheels duckdb-ext-*), driven line by line so that a test can
change the catalog between two statements of the same session.

stdin, one JSON object per line:  {"sql": "..."}
stdout, one JSON line per input:  {"columns": [...], "rows": [[...], ...]} or {"error": "..."}
Values that JSON has no form for (dates, decimals, bytes, big integers) are sent as text.

usage: python3 duckdb_session.py   (first line it prints: {"ready": true, "duckdb": version})
"""
import datetime
import decimal
import json
import os
import sys

import duckdb
import duckdb_ext


def extension_directory():
    # The wheels unpack to <site-packages>/duckdb_ext/extensions/v1.4.4/<platform>/,
    # DuckDB's own layout below an extension directory.
    # (a namespace package, shared by the three wheels: it has a path, no __file__)
    return os.path.join(list(duckdb_ext.__path__)[0], "extensions")


def plain(value):
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time, decimal.Decimal)):
        return str(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return str(value)


def main():
    connection = duckdb.connect()
    connection.execute(f"SET extension_directory = '{extension_directory()}'")
    for extension in ("ducklake", "postgres", "httpfs"):
        connection.execute(f"LOAD {extension}")
    print(json.dumps({"ready": True, "duckdb": duckdb.__version__}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        sql = json.loads(line)["sql"]
        try:
            cursor = connection.execute(sql)
            columns = [d[0] for d in cursor.description] if cursor.description else []
            rows = cursor.fetchall() if cursor.description else []
            answer = {"columns": columns, "rows": plain(rows)}
        except Exception as error:  # the test reads the message
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
