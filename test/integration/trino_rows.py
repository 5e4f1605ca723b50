"""Trino's rows, as its HTTP protocol sends them (JSON, by each column's type signature),
turned into test/helpers/engine_rows.py's canonical form and compared with the engine tables'
expected rows (test/helpers/engine_tables.py wrote them from a read_committed consumer and
the independent decoders). test/integration/trino.test.ts sends the rows; the conversion
follows Trino's client protocol: varbinary as base64, decimal as text, timestamps as
"YYYY-MM-DD HH:MM:SS.ffffff[ ZONE]", rows as arrays in field order, maps as objects.

stdin: {"expectedFile", "table", "columns": [{"name", "typeSignature"}], "rows": [[...]],
        "only": [column paths] (optional: compare just these),
        "window": {"from", "to"} (optional, ms: expect only rows whose _timestamp lies in it),
        "before": ms (optional: expect only rows whose _timestamp lies before it)}
stdout: {"rows": n, "expectedRows": n, "problems": {...}} ({} when equal)
"""
import base64
import datetime as dt
import json
import os
import struct
import sys
from decimal import Decimal
from zoneinfo import ZoneInfo

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))

from engine_rows import canonical, compare  # noqa: E402

UTC = dt.timezone.utc


def parse_time(text):
    """A datetime of Trino's "YYYY-MM-DD HH:MM:SS[.fraction]" (fraction of any length up to 12)."""
    whole, _, fraction = text.partition(".")
    parsed = dt.datetime.strptime(whole, "%Y-%m-%d %H:%M:%S")
    micros = int((fraction + "000000")[:6]) if fraction else 0
    if fraction[6:].strip("0"):
        raise ValueError(f"{text}: finer than microseconds, which the canonical form cannot hold")
    return parsed.replace(microsecond=micros)


def value(signature, v):
    if v is None:
        return None
    kind = signature["rawType"]
    arguments = signature.get("arguments", [])
    if kind == "row":
        fields = [a["value"] for a in arguments]
        return {f["fieldName"]["name"]: value(f["typeSignature"], x) for f, x in zip(fields, v)}
    if kind == "array":
        return [value(arguments[0]["value"], x) for x in v]
    if kind == "map":
        return [{"key": k, "value": value(arguments[1]["value"], x)} for k, x in v.items()]
    if kind == "varbinary":
        return base64.b64decode(v)
    if kind == "decimal":
        return Decimal(v)
    if kind == "timestamp with time zone":
        stamp, _, zone = v.rpartition(" ")
        return parse_time(stamp).replace(tzinfo=UTC if zone == "UTC" else ZoneInfo(zone))
    if kind == "timestamp":
        return parse_time(v)
    if kind == "time":
        return parse_time(f"1970-01-01 {v}").time()
    if kind == "date":
        return dt.date.fromisoformat(v)
    if kind == "real" and isinstance(v, (int, float)):
        # Trino writes a real as the shortest text of the float32: the float32 itself, widened
        return struct.unpack("<f", struct.pack("<f", v))[0]
    if kind == "double" and isinstance(v, (int, float)):
        return float(v)
    return v


def in_range(row, low, high):
    return (low is None or row["_timestamp"] >= low) and (high is None or row["_timestamp"] < high)


def main():
    job = json.loads(sys.stdin.read())
    with open(job["expectedFile"], encoding="utf-8") as handle:
        expected = json.load(handle)["tables"][job["table"]]
    text = lambda ms: dt.datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")  # noqa: E731
    low = high = None
    if "window" in job:
        low, high = text(job["window"]["from"]), text(job["window"]["to"])
    if "before" in job:
        high = text(job["before"])
    if low is not None or high is not None:
        expected = dict(expected, rows=[r for r in expected["rows"] if in_range(r, low, high)])
    columns = job["columns"]
    rows = []
    for raw in job["rows"]:
        row = {}
        for column, v in zip(columns, raw):
            try:
                converted = canonical(value(column["typeSignature"], v))
            except ValueError as error:
                raise ValueError(f"{column['name']} ({column['typeSignature']['rawType']}): cannot read {json.dumps(v)[:200]}: {error}") from error
            # a path such as addr.geo.lat, read alone, goes back into its structs
            *parents, leaf = column["name"].split(".")
            target = row
            for part in parents:
                target = target.setdefault(part, {})
            target[leaf] = converted
        rows.append(row)
    problems = compare(expected, rows, job.get("only"))
    print(json.dumps({"rows": len(rows), "expectedRows": len(expected["rows"]), "problems": problems}))


main()
