"""Every field of a Parquet file's schema as pyarrow reads it, nested children included,
with its PARQUET:field_id (None when the node has none): [{name, id, children}]."""
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def node(field):
    metadata = field.metadata or {}
    raw = metadata.get(b"PARQUET:field_id")
    children = []
    if pa.types.is_struct(field.type):
        children = [node(field.type.field(i)) for i in range(field.type.num_fields)]
    elif pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
        children = [node(field.type.value_field)]
    return {"name": field.name, "id": int(raw) if raw is not None else None, "children": children}


schema = pq.read_schema(sys.argv[1])
print(json.dumps([node(field) for field in schema]))
