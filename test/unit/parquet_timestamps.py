"""A Parquet file's timestamp columns as pyarrow reads them: per named top-level column its
Arrow type, its values as epoch integers (as text) in that type's unit (lists and structs as they
nest), and each row group's footer min/max for the named leaf paths."""
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq

path, columns = sys.argv[1], sys.argv[2].split(",")
table = pq.read_table(path, columns=columns)


def plain(value):
    if value is None:
        return None
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    # as text: epoch micros past 2^53 have no exact JSON number in JavaScript
    return str(value) if isinstance(value, int) else value


def as_integers(array):
    t = array.type
    if pa.types.is_timestamp(t):
        return array.cast(pa.int64())
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(array.offsets, as_integers(array.flatten()), mask=array.is_null())
    if pa.types.is_struct(t):
        fields = [as_integers(array.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(fields, names=[f.name for f in t], mask=array.is_null())
    return array


out = {"types": {}, "values": {}, "stats": []}
for name in columns:
    column = table.column(name).combine_chunks()
    out["types"][name] = str(column.type)
    out["values"][name] = plain(as_integers(column).to_pylist())
metadata = pq.ParquetFile(path).metadata
for g in range(metadata.num_row_groups):
    group = {}
    for c in range(metadata.num_columns):
        chunk = metadata.row_group(g).column(c)
        if chunk.path_in_schema.split(".")[0] in columns and chunk.statistics is not None and chunk.statistics.has_min_max:
            # the physical int64 bounds, not pyarrow's conversion
            group[chunk.path_in_schema] = [chunk.statistics.physical_type, str(chunk.statistics.min_raw), str(chunk.statistics.max_raw)]
    out["stats"].append(group)
print(json.dumps(out, default=str))
