"""Spark 4.1 with Iceberg's Spark runtime (the Java RESTCatalog client and S3FileIO, no one
here wrote them) reads a table whose files a merge replaced: the current snapshot, every
snapshot asked for with VERSION AS OF, the .snapshots table (each operation) and the
current snapshot's manifest entries (.entries: status, snapshot id, file path).

read(spark, job), run by the tests' one Spark (test/helpers/iceberg_spark_server.py), `lake` serve's catalog:
job: {"uri", "token", "table", "versions": [snapshot id, ...]}
answer: {"count", "sums", "versions": {id: [count, sum of offsets]}, "snapshots", "entries"}
"""


def read(spark, job):
    t = f"lake.main.{job['table']}"
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
    return out
