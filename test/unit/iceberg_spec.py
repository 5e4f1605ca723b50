"""What pyiceberg 0.12 (and fastavro) make of Iceberg values and files, for the unit tests
of src/iceberg/: the expectations come from them, never from our code.

stdin: {"bounds": [{"type": "decimal(10, 2)", "value": ...}, ...],
        "manifestList": "/path/snap.avro" (optional), "columns": [{"id", "type", "values"}]}
  bounds: pyiceberg's single-value serialization (conversions.to_bytes) of each value, hex
  manifestList: the list and its manifests read by pyiceberg's own readers; columns: per
    field id, the lower and upper bound pyiceberg serializes for the min and max of the
    values (nulls and NaN left out), hex
stdout: {"bounds": [...], "manifests": {...}}
"""
import decimal
import io
import json
import math
import sys
from collections.abc import Mapping

import fastavro
from pyiceberg.conversions import to_bytes
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import read_manifest_list
from pyiceberg.types import (BinaryType, BooleanType, DateType, DecimalType, DoubleType, FloatType, IntegerType, LongType,
                             StringType, TimestamptzType, TimestampType)


def iceberg_type(text):
    simple = {"int": IntegerType(), "long": LongType(), "float": FloatType(), "double": DoubleType(), "boolean": BooleanType(),
              "string": StringType(), "binary": BinaryType(), "date": DateType(), "timestamptz": TimestamptzType(), "timestamp": TimestampType()}
    if text in simple:
        return simple[text]
    precision, scale = text[len("decimal("):-1].split(",")
    return DecimalType(int(precision), int(scale))


def python_value(type_text, value):
    """The Python value pyiceberg serializes for a JSON one: decimals as text, bytes as hex, time in micros or days."""
    if type_text.startswith("decimal"):
        return decimal.Decimal(value)
    if type_text == "binary":
        return bytes.fromhex(value)
    if type_text in ("float", "double"):
        return float(value)
    if type_text in ("int", "long", "date", "timestamp", "timestamptz") and isinstance(value, str):
        return int(value)
    return value


def plain(value):
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def main():
    job = json.loads(sys.stdin.read())
    out = {"bounds": [to_bytes(iceberg_type(b["type"]), python_value(b["type"], b["value"])).hex() for b in job.get("bounds", [])]}
    if "manifestList" in job:
        file_io = PyArrowFileIO()
        manifests = []
        for manifest in read_manifest_list(file_io.new_input(job["manifestList"])):
            entries = []
            for entry in manifest.fetch_manifest_entry(file_io, discard_deleted=False):
                f = entry.data_file
                entries.append({
                    "status": int(entry.status), "snapshot_id": entry.snapshot_id, "sequence_number": entry.sequence_number,
                    "file_sequence_number": entry.file_sequence_number, "file_path": f.file_path, "file_format": str(f.file_format),
                    "partition": list(f.partition), "record_count": f.record_count, "file_size_in_bytes": f.file_size_in_bytes,
                    "column_sizes": plain(f.column_sizes), "value_counts": plain(f.value_counts), "null_value_counts": plain(f.null_value_counts),
                    "nan_value_counts": plain(f.nan_value_counts), "lower_bounds": plain(f.lower_bounds), "upper_bounds": plain(f.upper_bounds),
                    "split_offsets": f.split_offsets, "content": int(f.content), "sort_order_id": f.sort_order_id,
                })
            with open(manifest.manifest_path, "rb") as handle:
                reader = fastavro.reader(io.BytesIO(handle.read()))
                schema = reader.writer_schema
            manifests.append({
                "path": manifest.manifest_path, "length": manifest.manifest_length, "spec_id": manifest.partition_spec_id,
                "content": int(manifest.content), "sequence_number": manifest.sequence_number, "min_sequence_number": manifest.min_sequence_number,
                "added_snapshot_id": manifest.added_snapshot_id, "added_files_count": manifest.added_files_count,
                "existing_files_count": manifest.existing_files_count, "deleted_files_count": manifest.deleted_files_count,
                "added_rows_count": manifest.added_rows_count, "existing_rows_count": manifest.existing_rows_count,
                "partitions": [{"contains_null": p.contains_null, "contains_nan": p.contains_nan, "lower_bound": plain(p.lower_bound), "upper_bound": plain(p.upper_bound)} for p in manifest.partitions or []],
                "entries": entries,
                "fieldIds": field_ids(schema),
            })
        expected = {}
        for column in job["columns"]:
            values = [v for v in column["values"] if v is not None and not (isinstance(v, str) and v == "NaN")]
            typed = [python_value(column["type"], v) for v in values]
            if typed:
                kind = iceberg_type(column["type"])
                expected[str(column["id"])] = [to_bytes(kind, min(typed)).hex(), to_bytes(kind, max(typed)).hex()]
        out["manifests"] = manifests
        out["expectedBounds"] = expected
    json.dump(out, sys.stdout)


def field_ids(schema):
    """Every (path, field-id) of an Avro schema as fastavro reads it back."""
    found = {}

    def walk(node, path):
        if isinstance(node, list):
            for branch in node:
                walk(branch, path)
        elif isinstance(node, dict):
            if node.get("type") == "record":
                for field in node["fields"]:
                    found[".".join(path + [field["name"]])] = field.get("field-id")
                    walk(field["type"], path + [field["name"]])
            elif node.get("type") == "array":
                walk(node["items"], path)

    walk(schema, [])
    return found


main()
