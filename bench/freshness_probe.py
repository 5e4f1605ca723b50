"""The engines' side of the freshness probe (bench/freshness.ts): engines no one here wrote
ask serve, over and over, for the newest offsets of one table, each face on its own thread.

  ducklake   DuckDB 1.4.4 with the ducklake extension, one attach (the catalog as a DuckLake,
             files through serve's HTTP face) kept for the whole run, as a user's session is
  iceberg    DuckDB 1.4.4 with the iceberg extension, one ATTACH of serve's REST catalog kept
             for the whole run (files through the S3 face)
  pyiceberg  pyiceberg 0.12: one RestCatalog, load_table and a scan on every poll

Each poll asks for the greatest offset per partition among offsets at or above the least
one this face has not seen yet (so the files already seen are pruned and not read again).

stdin, first line: {"libpq", "serveUrl", "catalogUri", "token", "table", "partitions",
                    "faces": [...], "pauseMs"}; then any line (or end of input) stops it.
stdout, one JSON line per poll: {"face", "startedAt", "endedAt" (epoch ms),
                                 "max": {partition: offset}} or {"face", "error"}
first line: {"ready": true} once every face has attached and answered once.
"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "helpers"))

lock = threading.Lock()
stop = threading.Event()


def say(document):
    with lock:
        sys.stdout.write(json.dumps(document) + "\n")
        sys.stdout.flush()


def duckdb_connection():
    import duckdb
    from duckdb_session import extension_directory
    con = duckdb.connect()
    con.execute(f"SET extension_directory = '{extension_directory()}'")
    con.execute("SET TimeZone = 'UTC'")
    return con


class DuckLake:
    def __init__(self, job):
        self.table = job["table"]
        self.con = duckdb_connection()
        for extension in ("ducklake", "postgres", "httpfs"):
            self.con.execute("LOAD " + extension)
        self.con.execute(f"CREATE SECRET serve (TYPE http, BEARER_TOKEN '{job['token']}', SCOPE '{job['serveUrl']}/')")
        self.con.execute(f"ATTACH 'ducklake:postgres:{job['libpq']}' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY, "
                         f"DATA_PATH '{job['serveUrl']}/', OVERRIDE_DATA_PATH TRUE)")

    def newest(self, from_offset):
        rows = self.con.execute(f"SELECT _partition, max(_offset) FROM lake.{self.table} WHERE _offset >= {from_offset} GROUP BY 1").fetchall()
        return {int(p): int(o) for p, o in rows}


class IcebergDuckDB:
    def __init__(self, job):
        self.table = job["table"]
        self.con = duckdb_connection()
        self.con.execute("LOAD httpfs")
        self.con.execute("LOAD iceberg")
        self.con.execute(f"CREATE SECRET ice (TYPE iceberg, TOKEN '{job['token']}')")
        self.con.execute(f"ATTACH 'offsetlake' AS ice (TYPE iceberg, ENDPOINT '{job['catalogUri']}', SECRET ice)")

    def newest(self, from_offset):
        rows = self.con.execute(f"SELECT _kafka_partition, max(_offset) FROM ice.main.{self.table} WHERE _offset >= {from_offset} GROUP BY 1").fetchall()
        return {int(p): int(o) for p, o in rows}


class PyIceberg:
    def __init__(self, job):
        from pyiceberg.catalog.rest import RestCatalog
        self.table = job["table"]
        self.catalog = RestCatalog("lake", uri=job["catalogUri"], token=job["token"], warehouse="offsetlake")

    def newest(self, from_offset):
        from pyiceberg.expressions import GreaterThanOrEqual
        loaded = self.catalog.load_table(("main", self.table))
        arrow = loaded.scan(row_filter=GreaterThanOrEqual("_offset", from_offset), selected_fields=("_kafka_partition", "_offset")).to_arrow()
        newest = {}
        for p, o in zip(arrow.column("_kafka_partition").to_pylist(), arrow.column("_offset").to_pylist()):
            newest[int(p)] = max(int(o), newest.get(int(p), -1))
        return newest


faces = {"ducklake": DuckLake, "iceberg": IcebergDuckDB, "pyiceberg": PyIceberg}


def poll(name, job, ready):
    try:
        face = faces[name](job)
        seen = {p: -1 for p in range(job["partitions"])}
        first = True
        while not stop.is_set():
            started = time.time()
            newest = face.newest(min(seen.values()) + 1)
            ended = time.time()
            for p, o in newest.items():
                seen[p] = max(seen.get(p, -1), o)
            say({"face": name, "startedAt": started * 1000, "endedAt": ended * 1000, "max": {str(p): o for p, o in seen.items()}})
            if first:
                ready.release()
                first = False
            stop.wait(job["pauseMs"] / 1000)
    except Exception as error:  # said, and the face stops: the bench names it
        say({"face": name, "error": f"{type(error).__name__}: {error}"})
        ready.release()


def main():
    job = json.loads(sys.stdin.readline())
    ready = threading.Semaphore(0)
    threads = [threading.Thread(target=poll, args=(name, job, ready), daemon=True) for name in job["faces"]]
    for thread in threads:
        thread.start()
    for _ in threads:
        ready.acquire()
    say({"ready": True})
    sys.stdin.readline()
    stop.set()
    for thread in threads:
        thread.join(timeout=30)


main()
