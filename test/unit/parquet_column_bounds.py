"""For each Parquet file named on the command line, every primitive column's min and max
as pyarrow computes them from the values it reads out of the file (not the footer):
lists are flattened, structs split into their fields, nulls skipped. Binary as lowercase
hex, text as itself (pyarrow orders both by bytes). Prints one JSON document,
{path: {column path: {"min": ..., "max": ..., "nulls": n}}}."""
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from arrow_leaves import leaves  # noqa: E402


def text(value):
    if value is None:
        return None
    return value.hex() if isinstance(value, bytes) else value


result = {}
for path in sys.argv[1:]:
    table = pq.read_table(path)
    columns = {}
    for name in table.column_names:
        leaves(name, table.column(name).combine_chunks(), columns)
    bounds = {}
    for name, array in columns.items():
        if not (pa.types.is_binary(array.type) or pa.types.is_string(array.type) or pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)):
            continue
        values = array.to_pylist()
        present = [v for v in values if v is not None]
        if isinstance(present[0] if present else b"", str):
            present = [v.encode("utf-8", "surrogatepass") for v in present]
            shown = lambda b: b.decode("utf-8", "surrogatepass")
        else:
            shown = lambda b: b.hex()
        bounds[name] = {
            "min": shown(min(present)) if present else None,
            "max": shown(max(present)) if present else None,
            "nulls": len(values) - len(present),
        }
    result[path] = bounds
print(json.dumps(result))
