"""Reads every served file of a table over HTTP with pyarrow through fsspec's HTTP
filesystem (range requests), the way an engine would: manifest first, then each file.
Prints one JSON document: the rows and what the HTTP filesystem saw.

usage: python3 reader_pyarrow.py BASE_URL TOKEN TABLE
"""
import json
import sys

import fsspec
import pyarrow.parquet as pq
import requests

base, token, table = sys.argv[1:4]
auth = {"Authorization": f"Bearer {token}"}
manifest = requests.get(f"{base}/tables/{table}/files", headers=auth, timeout=30)
manifest.raise_for_status()
fs = fsspec.filesystem("http", headers=auth, block_size=4096)
rows = []
sizes = {}
for entry in manifest.json()["files"]:
    url = base + entry["path"]
    sizes[entry["id"]] = fs.size(url)
    with fs.open(url, "rb") as handle:
        data = pq.read_table(handle)
    for row in data.to_pylist():
        rows.append({
            "file": entry["id"],
            "partition": row["_partition"],
            "offset": str(row["_offset"]),
            "timestamp": int(row["_timestamp"].timestamp() * 1000),
            "key": None if row["_key"] is None else row["_key"].hex(),
            "value": row["_value"],
            "headers": [[h["key"], None if h["value"] is None else h["value"].hex()] for h in row["_headers"]],
        })
print(json.dumps({"rows": rows, "sizes": sizes, "pyarrow": __import__("pyarrow").__version__}))
