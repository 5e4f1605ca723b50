"""A Parquet file's primitive columns as pyarrow reads them, and what its footer says of
each column chunk: for checking how a column is stored (issue 47, a decimal above
precision 38 as Iceberg's plain `fixed[L]`). Prints one JSON document:
{"columns": {column path: {"type": Arrow type, "values": [...]}}, "chunks": [{"path",
"row_group", "physical", "logical", "length", "has_min_max", "null_count",
"has_column_index", "has_offset_index"}]}. Lists are flattened, structs split into their
fields; bytes as lowercase hex, decimals as their text, nulls as None."""
import json
import os
import sys

import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from arrow_leaves import leaves  # noqa: E402


def shown(value):
    if value is None:
        return None
    return value.hex() if isinstance(value, bytes) else str(value)


path = sys.argv[1]
table = pq.read_table(path)
arrays = {}
for name in table.column_names:
    leaves(name, table.column(name).combine_chunks(), arrays)
metadata = pq.read_metadata(path)
chunks = []
for g in range(metadata.num_row_groups):
    group = metadata.row_group(g)
    for c in range(group.num_columns):
        chunk = group.column(c)
        column = metadata.schema.column(c)
        statistics = chunk.statistics
        chunks.append({
            "path": chunk.path_in_schema,
            "row_group": g,
            "physical": column.physical_type,
            "logical": None if column.logical_type.type == "NONE" else column.logical_type.type,
            "length": column.length if column.physical_type == "FIXED_LEN_BYTE_ARRAY" else None,
            "has_min_max": bool(statistics is not None and statistics.has_min_max),
            "null_count": statistics.null_count if statistics is not None and statistics.has_null_count else None,
            "has_column_index": chunk.has_column_index,
            "has_offset_index": chunk.has_offset_index,
        })
print(json.dumps({
    "columns": {name: {"type": str(array.type), "values": [shown(v) for v in array.to_pylist()]} for name, array in arrays.items()},
    "chunks": chunks,
}))
