"""Reads a v2 file with pyarrow and prints what the test checks, as JSON."""
import json
import sys

import pyarrow.parquet as pq

f = pq.ParquetFile(sys.argv[1])
md = f.metadata
arrow = f.schema_arrow
out = {
    "rows": md.num_rows,
    "field_ids": {field.name: int(field.metadata[b"PARQUET:field_id"]) for field in arrow if field.metadata and b"PARQUET:field_id" in field.metadata},
    "header_leaf_ids": [int(f.metadata[b"PARQUET:field_id"]) for f in arrow.field("_headers").type.value_type if f.metadata],
    "logical": {f.schema.column(j).path: str(f.schema.column(j).logical_type) for j in range(md.num_columns)},
    "page_index": [
        {md.row_group(i).column(j).path_in_schema: [md.row_group(i).column(j).has_column_index, md.row_group(i).column(j).has_offset_index] for j in range(md.num_columns)}
        for i in range(md.num_row_groups)
    ],
    "values": [v.decode() if isinstance(v, bytes) else v for v in f.read(columns=["_value"]).column("_value").to_pylist()],
    "offsets": f.read(columns=["_offset"]).column("_offset").to_pylist(),
}
print(json.dumps(out))
