"""Spark 4.1 (pyspark, Java 17) with Iceberg's Spark runtime reads serve's Iceberg REST
catalog: the Java RESTCatalog client and S3FileIO (AWS SDK v2) no one here wrote.

read(spark, job), run by the tests' one Spark (test/helpers/iceberg_spark_server.py), `lake` serve's catalog:
job: {"uri", "token", "table", "since": "2026-11-01 14:00:00", "sinceMicros"}
answer: {"count", "sums", "files", "stats", "snapshots", "versionAsOf", "timestampAsOf", "since", "countPlan", "sinceRows", "plan", "plannedSince"}
"""


def read(spark, job):
    t = f"lake.main.{job['table']}"
    out = {}
    out["count"] = spark.sql(f"SELECT count(*) AS n FROM {t}").collect()[0]["n"]
    row = spark.sql(f"SELECT sum(_offset) AS o, sum(_kafka_partition) AS p FROM {t}").collect()[0]
    out["sums"] = [row["o"], row["p"]]
    out["files"] = sorted([r["file_path"], r["record_count"], r["file_size_in_bytes"]] for r in spark.sql(f"SELECT file_path, record_count, file_size_in_bytes FROM {t}.files").collect())
    # what Iceberg's Java manifest reader makes of each file's statistics (file_size_in_bytes
    # is selected too: Iceberg drops split offsets it cannot check against the file's size)
    out["stats"] = {r["file_path"]: {"valueCounts": {str(k): v for k, v in r["value_counts"].items()}, "nullCounts": {str(k): v for k, v in r["null_value_counts"].items()},
                                     "lower": {str(k): bytes(v).hex() for k, v in r["lower_bounds"].items()}, "upper": {str(k): bytes(v).hex() for k, v in r["upper_bounds"].items()},
                                     "splitOffsets": None if r["split_offsets"] is None else list(r["split_offsets"]), "partition": r["partition"].asDict()}
                    for r in spark.sql(f"SELECT file_path, file_size_in_bytes, value_counts, null_value_counts, lower_bounds, upper_bounds, split_offsets, partition FROM {t}.files").collect()}
    snapshots = spark.sql(f"SELECT snapshot_id, operation FROM {t}.snapshots ORDER BY committed_at").collect()
    out["snapshots"] = [[r["snapshot_id"], r["operation"]] for r in snapshots]
    first = snapshots[0]["snapshot_id"]
    out["versionAsOf"] = spark.sql(f"SELECT count(*) AS n FROM {t} VERSION AS OF {first}").collect()[0]["n"]
    out["timestampAsOf"] = spark.sql(f"SELECT count(*) AS n FROM {t} TIMESTAMP AS OF current_timestamp()").collect()[0]["n"]
    since = f"SELECT count(*) AS n FROM {t} WHERE _timestamp >= TIMESTAMP '{job['since']}'"
    df = spark.sql(since)
    out["since"] = df.collect()[0]["n"]
    # count(*) pushed down to Iceberg: answered from the manifests' record counts and bounds
    out["countPlan"] = df._jdf.queryExecution().executedPlan().toString()
    rows = spark.sql(f"SELECT _offset, _value FROM {t} WHERE _timestamp >= TIMESTAMP '{job['since']}'")
    out["sinceRows"] = rows.count()
    out["plan"] = rows._jdf.queryExecution().executedPlan().toString()
    # the files Spark planned for the filtered scan: Iceberg's own planning, by partition and bounds
    table = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, t)
    expr = spark._jvm.org.apache.iceberg.expressions.Expressions
    micros = job["sinceMicros"]
    tasks = table.newScan().filter(expr.greaterThanOrEqual("_timestamp", spark._jvm.java.lang.Long(micros))).planFiles()
    planned = 0
    iterator = tasks.iterator()
    while iterator.hasNext():
        iterator.next()
        planned += 1
    out["plannedSince"] = planned
    return out
