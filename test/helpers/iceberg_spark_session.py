"""Spark 4.1 with Iceberg's Spark runtime, serve's Iceberg REST catalog as `lake`: the
Java RESTCatalog client and S3FileIO (AWS SDK v2), as the tests' Spark scripts use them.

job: {"uri": "http://127.0.0.1:PORT/iceberg", "token", "jars": [...]} (test/helpers/iceberg-jars.ts)
"""


def lake_session(job, app):
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.jars", ",".join(job["jars"]))
             .config("spark.driver.memory", "1g")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.lake.type", "rest")
             .config("spark.sql.catalog.lake.uri", job["uri"])
             .config("spark.sql.catalog.lake.token", job["token"])
             .config("spark.sql.catalog.lake.io-impl", "org.apache.iceberg.aws.s3.S3FileIO")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark
