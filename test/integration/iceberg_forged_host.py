"""Walks serve's Iceberg catalog with requests and fastavro (neither ours), every request
with a forged Host and X-Forwarded-Proto, then again with honest headers: config,
LoadTable, the metadata file, the manifest list and each manifest it names (on the HTTP
face, with the bearer token).

stdin:  {"endpoint": "http://127.0.0.1:PORT", "token", "table", "forged": "evil.example:666"}
stdout: one JSON document: {"forged": walk, "honest": walk}, a walk being
        {"endpoint": LoadTable's s3.endpoint, "bodies": {url: text as latin-1},
         "cacheControl": {url: header}}.
"""
import io
import json
import sys
from urllib.parse import urlparse

import fastavro
import requests


def walk(endpoint, token, table, headers):
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {token}", **headers})
    bodies = {}
    cache = {}

    def get(url):
        answer = session.get(url, timeout=60)
        answer.raise_for_status()
        bodies[url] = answer.content.decode("latin-1")
        cache[url] = answer.headers.get("Cache-Control")
        return answer

    get(f"{endpoint}/iceberg/v1/config")
    loaded = get(f"{endpoint}/iceberg/v1/offsetlake/namespaces/main/tables/{table}").json()

    def on_http_face(location):
        # s3://bucket/tables/... or http://host/tables/...: the same path on the HTTP face
        return endpoint + urlparse(location).path

    get(on_http_face(loaded["metadata-location"]))
    for snapshot in loaded["metadata"].get("snapshots", []):
        listed = get(on_http_face(snapshot["manifest-list"]))
        for entry in fastavro.reader(io.BytesIO(listed.content)):
            get(on_http_face(entry["manifest_path"]))
    return {"endpoint": loaded["config"].get("s3.endpoint"), "bodies": bodies, "cacheControl": cache}


job = json.load(sys.stdin)
forged = walk(job["endpoint"], job["token"], job["table"], {"Host": job["forged"], "X-Forwarded-Proto": "https"})
honest = walk(job["endpoint"], job["token"], job["table"], {})
print(json.dumps({"forged": forged, "honest": honest}))
