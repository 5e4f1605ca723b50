"""Spark 4.1 (pyspark, Java 17) with Iceberg's Spark runtime reads serve's Iceberg REST
catalog: the Java RESTCatalog client and S3FileIO (AWS SDK v2) no one here wrote.

stdin: {"uri", "token", "table", "jars": [...], "since": "2026-11-01 14:00:00"}
stdout: {"count", "sums", "files", "snapshots", "versionAsOf", "since", "plan"} or {"error", "trace"}
"""
import json
import sys
import traceback


def iceberg_session(uri, token, jars, app="offsetlake-iceberg"):
    """A local Spark session (2 cores, UTC) whose catalog `lake` is serve's Iceberg catalog at `uri`."""
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.jars", ",".join(jars))
             .config("spark.driver.memory", "1g")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.lake.type", "rest")
             .config("spark.sql.catalog.lake.uri", uri)
             .config("spark.sql.catalog.lake.token", token)
             .config("spark.sql.catalog.lake.io-impl", "org.apache.iceberg.aws.s3.S3FileIO")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main():
    job = json.loads(sys.stdin.read())
    spark = iceberg_session(job["uri"], job["token"], job["jars"])
    t = f"lake.main.{job['table']}"
    try:
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
        print(json.dumps(out))
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-4000:]}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
