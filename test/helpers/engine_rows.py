"""Rows in one form whatever engine read them, and where an engine's rows differ from the
expected ones (test/helpers/engine_tables.py writes those; each engine's script reads them).
Plain Python, no third-party import: every environment (the readers', Daft's) imports it.

The canonical form normalizes types, never values, so that an engine that reads a column
with another Python type but the same value still matches, and one that reads another
value does not:
- a timestamp: "YYYY-MM-DD HH:MM:SS.ffffff", in UTC when it carries a zone (a UTC instant and
  a wall-clock time print alike: Spark gives both as naive datetimes)
- a date "YYYY-MM-DD", a time of day "HH:MM:SS.ffffff"
- bytes "\\x" + hex; a decimal as its shortest text ("12.3", "-0.0001", "0")
- a float: itself, or "NaN", "Infinity", "-Infinity"
- a struct: a dict (Spark's Row too); a list (tuples, arrays) a list
- `_error`: true when the row has one (its text is ours, never expected from outside)
Maps are lists of {key, value} (docs/formats.md): their order is not data, so `compare`
sorts them by key at the paths the expected table names (`maps`).
"""
import datetime as dt
import json
import math
from decimal import Decimal
from uuid import UUID


def canonical(value):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S.%f").rjust(26, "0")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.strftime("%H:%M:%S.%f")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, Decimal):
        text = format(value.normalize(), "f")
        return "0" if text in ("-0", "0") else text
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if hasattr(value, "asDict"):  # pyspark.sql.Row
        return canonical(value.asDict(recursive=False))
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        items = value.tolist() if hasattr(value, "tolist") else value
        return [canonical(v) for v in items]
    if hasattr(value, "item"):  # a numpy scalar
        return canonical(value.item())
    raise TypeError(f"no canonical form for {type(value).__name__}: {value!r}")


def map_paths(columns):
    """The paths of the maps in registry_independent's column specs: "attrs", "items[].by_key"."""
    paths = []

    def visit(path, spec):
        if isinstance(spec, str):
            return
        kind = spec[0]
        if kind == "map":
            paths.append(path)
            visit(f"{path}[].value", spec[1])
        elif kind == "list":
            visit(f"{path}[]", spec[1])
        elif kind == "struct":
            for name, sub in spec[1]:
                visit(f"{path}.{name}", sub)

    for name, spec in columns:
        visit(name, spec)
    return paths


def _sorted_maps(value, path, maps):
    if value is None:
        return None
    if isinstance(value, list):
        items = [_sorted_maps(v, f"{path}[]", maps) for v in value]
        if path in maps:
            items.sort(key=lambda e: json.dumps(e.get("key") if isinstance(e, dict) else e, sort_keys=True))
        return items
    if isinstance(value, dict):
        return {k: _sorted_maps(v, f"{path}.{k}" if path else k, maps) for k, v in value.items()}
    return value


def _same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _first_difference(a, b, path):
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for k in a:
            if not _same(a[k], b[k]):
                return _first_difference(a[k], b[k], f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b)):
            if not _same(x, y):
                return _first_difference(x, y, f"{path}[{k}]")
    return path, a, b


def _short(value, limit=200):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"


def column_values(expected, column, rows=None):
    """The expected values of one column (`addr.geo.lat` reaches into structs), by (partition, offset)."""
    out = {}
    for row in expected["rows"] if rows is None else rows:
        value = row
        for part in column.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        out[(row["_kafka_partition"], row["_offset"])] = value
    return out


def compare(expected, actual_rows, columns=None):
    """Where canonical `actual_rows` (dicts by Iceberg column name, each with _kafka_partition
    and _offset) differ from the expected table: {} when they are equal, else per problem a
    sentence. `columns` limits the check to those columns (default: every expected column,
    and no other may be there)."""
    maps = set(expected.get("maps", []))
    wanted = columns or expected["columns"]
    problems = {}
    by_key = {}
    for row in actual_rows:
        key = (row.get("_kafka_partition"), row.get("_offset"))
        if key in by_key:
            problems.setdefault("duplicate rows", []).append(list(key))
        by_key[key] = row
    expected_by_key = {(r["_kafka_partition"], r["_offset"]): r for r in expected["rows"]}
    missing = sorted(set(expected_by_key) - set(by_key))
    extra = sorted(set(by_key) - set(expected_by_key), key=lambda k: (str(k[0]), str(k[1])))
    if missing:
        problems["missing rows"] = f"{len(missing)} of {len(expected_by_key)} rows missing, first {[list(k) for k in missing[:5]]}"
    if extra:
        problems["extra rows"] = f"{len(extra)} rows that are no committed record, first {[list(k) for k in extra[:5]]}"
    if "duplicate rows" in problems:
        problems["duplicate rows"] = f"{len(problems['duplicate rows'])} keys twice, first {problems['duplicate rows'][:5]}"
    if actual_rows and columns is None:
        seen = set(actual_rows[0].keys())
        if seen - set(wanted):
            problems["extra columns"] = sorted(seen - set(wanted))
        if set(wanted) - seen:
            problems["missing columns"] = [c for c in wanted if c not in seen]
    for column in wanted:
        differ = []
        for key in sorted(set(expected_by_key) & set(by_key)):
            want = column_values(expected, column, [expected_by_key[key]])[key]
            got = column_values(expected, column, [by_key[key]])[key] if column in by_key[key] or "." in column else "<no such column>"
            if column == "_error":
                want, got = want is not None, got is not None
            want, got = _sorted_maps(want, column, maps), _sorted_maps(got, column, maps)
            if not _same(want, got):
                differ.append((key, *_first_difference(want, got, column)))
        if differ:
            key, path, a, b = differ[0]
            problems[column] = f"{len(differ)} of {len(expected_by_key)} rows differ; first row {list(key)} at {path}: expected {_short(a)}, read {_short(b)}"
    return problems
