"""Reads serve's Iceberg REST catalog with clients no one here wrote: pyiceberg 0.12
(RestCatalog, its own S3 FileIO through pyarrow), polars 2.1 (scan_iceberg over the table
pyiceberg loads), DuckDB 1.4.4 with its iceberg extension
(ATTACH ... TYPE iceberg), fastavro (the manifest list and manifests as bytes), requests
(the REST answers themselves).

stdin: {"uri": "http://127.0.0.1:PORT/iceberg", "endpoint": "http://127.0.0.1:PORT",
        "token", "table", "bucket", "key", "secret", "files": ["s3://…parquet", …],
        "timestampFrom": ms, "offsetFrom": n}
stdout: one JSON document, per client its answers or {"error", "trace"}; bytes as hex.
"""
import io
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))


def run(name, results, work):
    try:
        results[name] = work()
    except Exception as error:  # reported per client; the test names which failed and why
        results[name] = {"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-3000:]}


def plain(value):
    """JSON-able: bytes as hex, datetimes as epoch ms, dicts and lists inside."""
    import datetime
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def main():
    job = json.loads(sys.stdin.read())
    uri, token, table = job["uri"], job.get("token"), job["table"]
    results = {}

    def pyiceberg_client():
        from pyiceberg.catalog.rest import RestCatalog
        from pyiceberg.expressions import GreaterThanOrEqual
        catalog = RestCatalog("lake", uri=uri, token=token, warehouse="offsetlake")
        loaded = catalog.load_table(("main", table))
        arrow = loaded.scan().to_arrow()
        rows = sorted(
            ({"partition": r["_kafka_partition"], "offset": r["_offset"], "timestamp": plain(r["_timestamp"]), "key": plain(r["_key"]),
              "value": r["_value"], "headers": [[h["key"], plain(h["value"])] for h in r["_headers"]]}
             for r in arrow.to_pylist()),
            key=lambda r: (r["partition"], r["offset"]))
        files = [plain(f) for f in loaded.inspect.files().to_pylist()]
        since = GreaterThanOrEqual("_timestamp", job["timestampFrom"] * 1000)
        planned_all = len(list(loaded.scan().plan_files()))
        planned_since = len(list(loaded.scan(row_filter=since).plan_files()))
        rows_since = loaded.scan(row_filter=since).to_arrow().num_rows
        snapshots = [plain(s) for s in loaded.inspect.snapshots().to_pylist()]
        empty = catalog.load_table(("main", job["emptyTable"]))
        # each data file as plain pyarrow reads it (not through pyiceberg's projection): _timestamp's type and values
        import pyarrow as pa
        import pyarrow.parquet as pq
        file_timestamps = {"types": set(), "rows": []}
        for task in loaded.scan().plan_files():
            with loaded.io.new_input(task.file.file_path).open() as stream:
                data = pq.read_table(stream, columns=["_partition", "_offset", "_timestamp"])
            file_timestamps["types"].add(str(data.schema.field("_timestamp").type))
            micros = data.column("_timestamp").cast(pa.int64()).to_pylist()
            file_timestamps["rows"] += [[p, o, str(t)] for p, o, t in zip(data.column("_partition").to_pylist(), data.column("_offset").to_pylist(), micros)]
        file_timestamps = {"types": sorted(file_timestamps["types"]), "rows": sorted(file_timestamps["rows"])}
        return {
            "fileTimestamps": file_timestamps,
            "namespaces": [list(n) for n in catalog.list_namespaces()],
            "tables": [list(t) for t in catalog.list_tables("main")],
            "schema": str(loaded.schema()),
            "fieldIds": {f.name: f.field_id for f in loaded.schema().fields},
            "spec": str(loaded.spec()),
            "rows": rows,
            "files": files,
            "plannedAll": planned_all,
            "plannedSince": planned_since,
            "rowsSince": rows_since,
            "snapshots": snapshots,
            "currentSnapshot": loaded.metadata.current_snapshot_id,
            "empty": {"rows": empty.scan().to_arrow().num_rows, "snapshot": empty.metadata.current_snapshot_id, "fields": [f.name for f in empty.schema().fields]},
        }

    def polars_client():
        """polars' scan_iceberg over the table pyiceberg loads: each column's type as polars reads it, and the rows."""
        import polars as pl
        from pyiceberg.catalog.rest import RestCatalog
        catalog = RestCatalog("lake", uri=uri, token=token, warehouse="offsetlake")
        # polars' own reader takes no endpoint from pyiceberg's FileIO: the S3 face's, as an engine user gives it
        storage = {"aws_endpoint_url": job["endpoint"], "aws_access_key_id": job["key"], "aws_secret_access_key": job["secret"],
                   "aws_region": "us-east-1", "aws_allow_http": "true", "aws_virtual_hosted_style_request": "false"}
        frame = pl.scan_iceberg(catalog.load_table(("main", table)), storage_options=storage).collect()
        rows = sorted([p, o, v] for p, o, v in zip(frame["_kafka_partition"].to_list(), frame["_offset"].to_list(), frame["_value"].to_list()))
        return {"version": pl.__version__, "types": {name: str(dtype) for name, dtype in frame.schema.items()}, "rows": rows}

    def duckdb_client():
        import duckdb
        from duckdb_session import extension_directory
        con = duckdb.connect()
        con.execute(f"SET extension_directory = '{extension_directory()}'")
        con.execute("LOAD httpfs")
        con.execute("LOAD iceberg")
        con.execute(f"CREATE SECRET ice (TYPE iceberg, TOKEN '{token}')")
        con.execute(f"ATTACH 'offsetlake' AS ice (TYPE iceberg, ENDPOINT '{uri}', SECRET ice)")
        since = job["timestampFrom"]
        queries = {
            "count": "SELECT count(*) FROM {t}",
            "sums": "SELECT sum(_offset)::BIGINT, sum({p})::BIGINT, sum(length(_value))::BIGINT FROM {t}",
            "since": f"SELECT count(*), sum(_offset)::BIGINT FROM {{t}} WHERE _timestamp >= make_timestamptz({since}::BIGINT * 1000)",
            "offsets": f"SELECT count(*), min(_offset), max(_offset) FROM {{t}} WHERE _offset >= {job['offsetFrom']} AND {{p}} = 1",
        }
        # Kafka's partition is _kafka_partition in Iceberg (Iceberg reserves _partition), _partition in the files
        through_iceberg = {name: list(con.execute(sql.format(t=f"ice.main.{table}", p="_kafka_partition")).fetchone()) for name, sql in queries.items()}
        # the same queries over the data files as plain Parquet, read straight from serve's S3 face
        host = job["endpoint"].split("://", 1)[1]
        con.execute(f"CREATE SECRET face (TYPE s3, KEY_ID '{job['key']}', SECRET '{job['secret']}', ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false, REGION 'us-east-1')")
        files = ", ".join(f"'{f}'" for f in job["files"])
        plain_files = {name: list(con.execute(sql.format(t=f"read_parquet([{files}])", p="_partition")).fetchone()) for name, sql in queries.items()}
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'ice'").fetchall()]
        empty = list(con.execute(f"SELECT count(*) FROM ice.main.{job['emptyTable']}").fetchone())
        return {"iceberg": through_iceberg, "plain": plain_files, "tables": tables, "empty": empty}

    def raw_client():
        import requests
        import fastavro
        headers = {"Authorization": f"Bearer {token}"}
        config = requests.get(f"{uri}/v1/config", params={"warehouse": "offsetlake"}, headers=headers).json()
        prefix = config["overrides"]["prefix"]
        base = f"{uri}/v1/{prefix}/namespaces/main/tables/{table}"
        first = requests.get(base, headers=headers)
        if first.status_code != 200:
            raise RuntimeError(f"LoadTable answered {first.status_code}: {first.text}")
        second = requests.get(base, headers=headers)
        again = requests.get(base, headers={**headers, "If-None-Match": first.headers["ETag"]})
        head = requests.head(base, headers=headers)
        loaded = first.json()
        metadata = loaded["metadata"]
        current = next(s for s in metadata["snapshots"] if s["snapshot-id"] == metadata["current-snapshot-id"])

        def fetch(location):
            # locations are s3://bucket/tables/...: the same keys on the HTTP face, with the bearer token
            key = location.split("://", 1)[1].split("/", 1)[1]
            response = requests.get(f"{job['endpoint']}/{key}", headers=headers)
            response.raise_for_status()
            return response.content

        def avro(location):
            data = fetch(location)
            reader = fastavro.reader(io.BytesIO(data))
            return {"length": len(data), "schema": reader.writer_schema, "metadata": {k: v for k, v in reader.metadata.items() if k != "avro.schema"},
                    "records": [plain(r) for r in reader]}

        manifest_list = avro(current["manifest-list"])
        manifests = [dict(avro(m["manifest_path"]), path=m["manifest_path"]) for m in manifest_list["records"]]
        twice = [fetch(m["manifest_path"]) == fetch(m["manifest_path"]) for m in manifest_list["records"]]

        def refusal(method, url, **kwargs):
            response = requests.request(method, url, **kwargs)
            return {"status": response.status_code, **response.json()["error"]} if response.content else {"status": response.status_code}

        refusals = {
            "noTable": refusal("GET", f"{uri}/v1/{prefix}/namespaces/main/tables/nope", headers=headers),
            "noTableHead": requests.head(f"{uri}/v1/{prefix}/namespaces/main/tables/nope", headers=headers).status_code,
            "noNamespace": refusal("GET", f"{uri}/v1/{prefix}/namespaces/other/tables", headers=headers),
            "create": refusal("POST", f"{uri}/v1/{prefix}/namespaces/main/tables", headers=headers, json={"name": "x", "schema": {"type": "struct", "fields": []}}),
            "drop": refusal("DELETE", base, headers=headers),
            "wrongToken": refusal("GET", f"{uri}/v1/config", headers={"Authorization": "Bearer wrong"}),
            "noToken": refusal("GET", f"{uri}/v1/config"),
            "badPageSize": refusal("GET", f"{uri}/v1/{prefix}/namespaces/main/tables", headers=headers, params={"pageSize": "0"}),
            "noPrefix": refusal("GET", f"{uri}/v1/namespaces", headers=headers),
        }
        pages = []
        token_ = None
        while True:
            params = {"pageSize": "1", **({"pageToken": token_} if token_ else {})}
            page = requests.get(f"{uri}/v1/{prefix}/namespaces/main/tables", headers=headers, params=params).json()
            pages.append([i["name"] for i in page["identifiers"]])
            token_ = page.get("next-page-token")
            if not token_:
                break
        namespaces = requests.get(f"{uri}/v1/{prefix}/namespaces", headers=headers).json()
        namespace_head = requests.head(f"{uri}/v1/{prefix}/namespaces/main", headers=headers).status_code
        return {
            "config": config,
            "sameBytes": first.content == second.content,
            "etag": first.headers.get("ETag"),
            "notModified": again.status_code,
            "headStatus": head.status_code,
            "loaded": loaded,
            "manifestList": manifest_list,
            "manifests": manifests,
            "manifestsTwice": twice,
            "refusals": refusals,
            "pages": pages,
            "namespaces": namespaces,
            "namespaceHead": namespace_head,
        }

    def history_client():
        """Every snapshot in the history: its files (fastavro, from its manifest list) and what pyiceberg scans of it."""
        import requests
        import fastavro
        from pyiceberg.catalog.rest import RestCatalog
        headers = {"Authorization": f"Bearer {token}"}
        catalog = RestCatalog("lake", uri=uri, token=token)
        loaded = catalog.load_table(("main", table))

        def avro(location):
            key = location.split("://", 1)[1].split("/", 1)[1]
            response = requests.get(f"{job['endpoint']}/{key}", headers=headers)
            response.raise_for_status()
            return [plain(r) for r in fastavro.reader(io.BytesIO(response.content))]

        snapshots = []
        for snapshot in loaded.metadata.snapshots:
            manifests = avro(snapshot.manifest_list)
            scanned = loaded.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
            snapshots.append({
                "id": snapshot.snapshot_id,
                "sequence": snapshot.sequence_number,
                "parent": snapshot.parent_snapshot_id,
                "operation": snapshot.summary.operation.value,
                "summary": dict(snapshot.summary.additional_properties),
                "manifests": [{"path": m["manifest_path"], "addedSnapshot": m["added_snapshot_id"], "sequence": m["sequence_number"],
                               "counts": [m["added_files_count"], m["existing_files_count"], m["deleted_files_count"], m["added_rows_count"], m["existing_rows_count"], m["deleted_rows_count"]],
                               "entries": [{"status": e["status"], "path": e["data_file"]["file_path"], "snapshot": e["snapshot_id"], "sequence": e["sequence_number"]} for e in avro(m["manifest_path"])]}
                              for m in manifests],
                "rows": sorted([r["_kafka_partition"], r["_offset"]] for r in scanned.select(["_kafka_partition", "_offset"]).to_pylist()),
            })
        missing = None
        for wanted in job.get("droppedSnapshots", []):
            try:
                loaded.scan(snapshot_id=wanted).to_arrow()
            except Exception as error:  # the client's own refusal of a snapshot it does not know
                missing = f"{type(error).__name__}: {error}"
        return {"current": loaded.metadata.current_snapshot_id, "snapshots": snapshots, "snapshotLog": [plain(e.model_dump()) for e in loaded.metadata.snapshot_log],
                "metadataLog": [e.metadata_file for e in loaded.metadata.metadata_log], "droppedScan": missing}

    def http_face_client():
        """DuckDB through a serve without the S3 face: locations are the HTTP face's URLs, read with the bearer token."""
        import duckdb
        from duckdb_session import extension_directory
        con = duckdb.connect()
        con.execute(f"SET extension_directory = '{extension_directory()}'")
        con.execute("LOAD httpfs")
        con.execute("LOAD iceberg")
        con.execute(f"CREATE SECRET ice (TYPE iceberg, TOKEN '{token}')")
        con.execute(f"CREATE SECRET face (TYPE http, BEARER_TOKEN '{token}')")
        con.execute(f"ATTACH 'offsetlake' AS ice (TYPE iceberg, ENDPOINT '{uri}', SECRET ice, ACCESS_DELEGATION_MODE 'none')")
        through_iceberg = list(con.execute(f"SELECT count(*), sum(_offset)::BIGINT FROM ice.main.{table}").fetchone())
        files = ", ".join(f"'{f}'" for f in job["files"])
        plain_files = list(con.execute(f"SELECT count(*), sum(_offset)::BIGINT FROM read_parquet([{files}])").fetchone())
        empty = list(con.execute(f"SELECT count(*) FROM ice.main.{job['emptyTable']}").fetchone())
        return {"iceberg": through_iceberg, "plain": plain_files, "empty": empty}

    def evolution_client():
        """A table whose schema evolved: pyiceberg's view of its schemas and rows, DuckDB's sums through the catalog."""
        import duckdb
        from duckdb_session import extension_directory
        from pyiceberg.catalog.rest import RestCatalog
        catalog = RestCatalog("lake", uri=uri, token=token)
        loaded = catalog.load_table(("main", table))
        rows = sorted(({k: plain(v) for k, v in r.items() if not k.startswith("_") or k == "_offset"} for r in loaded.scan().to_arrow().to_pylist()), key=lambda r: r["_offset"])
        con = duckdb.connect()
        con.execute(f"SET extension_directory = '{extension_directory()}'")
        con.execute(f"CREATE SECRET ice (TYPE iceberg, TOKEN '{token}')")
        con.execute(f"ATTACH 'offsetlake' AS ice (TYPE iceberg, ENDPOINT '{uri}', SECRET ice)")
        sums = list(con.execute(f"SELECT count(*), sum(id)::HUGEINT::VARCHAR, sum(price), count(note), count(address.zip) FROM ice.main.{table}").fetchone())
        return {
            "schemas": [{"id": s.schema_id, "fields": str(s)} for s in loaded.schemas().values()],
            "currentSchemaId": loaded.metadata.current_schema_id,
            "types": {f.name: str(f.field_type) for f in loaded.schema().fields},
            "rows": rows,
            "duckdb": sums,
        }

    def no_auth_client():
        """A serve without authentication (--no-auth): pyiceberg needs no token, and signs for the S3 face with the key pair LoadTable gives."""
        from pyiceberg.catalog.rest import RestCatalog
        catalog = RestCatalog("lake", uri=uri)
        loaded = catalog.load_table(("main", table))
        return {"rows": loaded.scan().to_arrow().num_rows, "config": loaded.io.properties.get("s3.access-key-id")}

    def no_s3_face_client():
        """pyiceberg against a serve without the S3 face: what it says when it loads and scans the table."""
        from pyiceberg.catalog.rest import RestCatalog
        catalog = RestCatalog("lake", uri=uri, token=token)
        tables = [name for _, name in catalog.list_tables("main")]
        try:
            rows = catalog.load_table(("main", table)).scan().to_arrow().num_rows
            return {"tables": tables, "rows": rows}
        except Exception as error:  # pyiceberg's own message, which the test reads
            return {"tables": tables, "said": f"{type(error).__name__}: {error}"}

    if job.get("mode") == "no-s3":
        run("pyiceberg", results, no_s3_face_client)
    elif job.get("mode") == "no-auth":
        run("pyiceberg", results, no_auth_client)
    elif job.get("mode") == "evolution":
        run("evolution", results, evolution_client)
    elif job.get("mode") == "http":
        run("duckdb", results, http_face_client)
    elif job.get("mode") == "history":
        run("history", results, history_client)
    else:
        run("raw", results, raw_client)
        run("pyiceberg", results, pyiceberg_client)
        run("polars", results, polars_client)
        run("duckdb", results, duckdb_client)
    json.dump(results, sys.stdout)


main()
