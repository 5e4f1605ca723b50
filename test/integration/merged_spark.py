"""Spark 4.1 with Iceberg's Spark runtime (the Java RESTCatalog client and S3FileIO, no one
here wrote them) reads a table whose files a merge replaced: the current snapshot, every
snapshot asked for with VERSION AS OF, the .snapshots table (each operation) and the
current snapshot's manifest entries (.entries: status, snapshot id, file path).

stdin: {"uri", "token", "table", "jars": [...], "versions": [snapshot id, ...]}
stdout: {"count", "sums", "versions": {id: count}, "snapshots", "entries"} or {"error", "trace"}
"""
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
from iceberg_spark_session import lake_session  # noqa: E402


def main():
    job = json.loads(sys.stdin.read())
    spark = lake_session(job, "offsetlake-merged")
    t = f"lake.main.{job['table']}"
    try:
        out = {}
        row = spark.sql(f"SELECT count(*) AS n, sum(_offset) AS o, sum(_kafka_partition) AS p FROM {t}").collect()[0]
        out["count"] = row["n"]
        out["sums"] = [row["o"], row["p"]]
        out["versions"] = {}
        for version in job["versions"]:
            row = spark.sql(f"SELECT count(*) AS n, sum(_offset) AS o FROM {t} VERSION AS OF {version}").collect()[0]
            out["versions"][str(version)] = [row["n"], row["o"]]
        out["snapshots"] = [[r["snapshot_id"], r["operation"]] for r in spark.sql(f"SELECT snapshot_id, operation FROM {t}.snapshots ORDER BY committed_at").collect()]
        out["entries"] = sorted([r["status"], r["snapshot_id"], r["data_file"]["file_path"]] for r in spark.sql(f"SELECT status, snapshot_id, data_file FROM {t}.entries").collect())
        print(json.dumps(out))
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-4000:]}))
    finally:
        spark.stop()


main()
