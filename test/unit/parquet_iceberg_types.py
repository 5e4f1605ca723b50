"""A Parquet file's schema as pyarrow reads it, for checking it against Iceberg's Parquet
type mapping: every primitive column with its physical type, logical type (pyarrow's JSON
form, or None), fixed length and path; every node with its PARQUET:field_id (None when it
has none) and its Arrow type's kind (struct, list, or the leaf's type)."""
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def node(field):
    raw = (field.metadata or {}).get(b"PARQUET:field_id")
    children = []
    kind = str(field.type)
    if pa.types.is_struct(field.type):
        kind = "struct"
        children = [node(field.type.field(i)) for i in range(field.type.num_fields)]
    elif pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
        kind = "list"
        children = [node(field.type.value_field)]
    return {"name": field.name, "id": int(raw) if raw is not None else None, "kind": kind, "children": children}


def leaf(column):
    logical = column.logical_type
    return {
        "path": column.path,
        "physical": column.physical_type,
        "logical": None if logical.type == "NONE" else json.loads(logical.to_json()),
        "length": column.length if column.physical_type == "FIXED_LEN_BYTE_ARRAY" else None,
    }


path = sys.argv[1]
metadata = pq.read_metadata(path)
print(json.dumps({
    "leaves": [leaf(metadata.schema.column(i)) for i in range(metadata.num_columns)],
    "tree": [node(field) for field in pq.read_schema(path)],
}))
