"""Where a Parquet file's page index lies and what its pieces hash to, as pyarrow and
hashlib see the file (the test compares what the catalog recorded and what serve and
check say with these): the file's size and sha256, the end of its last column chunk
(from pyarrow's chunk offsets and sizes), where its footer starts (from the footer
length in its last 8 bytes), and the sha256 of its page index and of its tail (page
index and footer), with the page index's bytes in hex."""
import hashlib
import json
import struct
import sys

import pyarrow.parquet as pq

path = sys.argv[1]
data = open(path, "rb").read()
assert data[:4] == b"PAR1" and data[-4:] == b"PAR1", "not a Parquet file"
footer_start = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
meta = pq.ParquetFile(path).metadata
data_end = 4
first_chunk_end = None
for g in range(meta.num_row_groups):
    group = meta.row_group(g)
    for c in range(group.num_columns):
        column = group.column(c)
        start = column.dictionary_page_offset if column.has_dictionary_page else column.data_page_offset
        end = start + column.total_compressed_size
        if first_chunk_end is None:
            first_chunk_end = end
        data_end = max(data_end, end)
page_index = data[data_end:footer_start]
json.dump({
    "size": len(data),
    "sha256": hashlib.sha256(data).hexdigest(),
    "dataEnd": data_end,
    "footerStart": footer_start,
    "firstChunkEnd": first_chunk_end,
    "firstChunkPath": meta.row_group(0).column(0).path_in_schema,
    "pageIndex": page_index.hex(),
    "pageIndexSha256": hashlib.sha256(page_index).hexdigest(),
    "tailSha256": hashlib.sha256(data[data_end:]).hexdigest(),
    "hasColumnIndex": meta.row_group(0).column(0).has_column_index,
}, sys.stdout)
