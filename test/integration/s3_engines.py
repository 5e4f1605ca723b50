"""Reads one table's files through serve's S3-compatible face with engines no one here
wrote, each with its own S3 client and SigV4 signer: boto3 (listing, HEAD, ranged GET),
DuckDB s3:// (and the DuckLake attached with the catalog's own data path s3://bucket/),
polars scan_parquet, pyarrow's S3FileSystem, DataFusion's AmazonS3 object store.

stdin: {"endpoint": "http://127.0.0.1:PORT", "bucket", "key", "secret", "table", "rawTable", "libpq"}
DataFusion reads the table and rawTable (format raw, the same records without a JSON
column; its answer is "raw"): the Rust parquet reader refused encoder v1's JSON columns
(logical type JSON over converted type UTF8), v2 writes converted type JSON.
stdout: one JSON document: per engine {"rows", "offsets", "partitions"} or {"error"}
"""
import json
import os
import sys
import traceback


def run(name, results, work):
    try:
        results[name] = work()
    except Exception as error:  # reported per engine; the test names which failed and why
        results[name] = {"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-2000:]}


def main():
    job = json.loads(sys.stdin.read())
    endpoint, bucket, key, secret, table = job["endpoint"], job["bucket"], job["key"], job["secret"], job["table"]
    host = endpoint.split("://", 1)[1]
    prefix = f"tables/{table}/files/"
    results = {}

    def boto():
        import boto3
        from botocore.config import Config
        from botocore.exceptions import ClientError
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                              region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
        keys = []
        pages = 0
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": 2}):
            pages += 1
            keys += [o["Key"] for o in page.get("Contents", [])]
        folded = client.list_objects_v2(Bucket=bucket, Prefix="tables/", Delimiter="/")
        head = client.head_object(Bucket=bucket, Key=keys[0])
        tail = client.get_object(Bucket=bucket, Key=keys[0], Range="bytes=-8")["Body"].read()
        wrong = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret + "x",
                             region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
        try:
            wrong.list_objects_v2(Bucket=bucket, Prefix=prefix)
            refused = None
        except ClientError as error:
            refused = {"code": error.response["Error"]["Code"], "status": error.response["ResponseMetadata"]["HTTPStatusCode"]}
        def refusal(call):
            try:
                call()
                return None
            except ClientError as error:
                return {"code": error.response["Error"]["Code"], "status": error.response["ResponseMetadata"]["HTTPStatusCode"]}
        refusals = {
            "missingKey": refusal(lambda: client.get_object(Bucket=bucket, Key=prefix + "999999.parquet")),
            "otherBucket": refusal(lambda: client.list_objects_v2(Bucket="another-bucket")),
            "write": refusal(lambda: client.put_object(Bucket=bucket, Key=prefix + "new.parquet", Body=b"x")),
            "beyondEnd": refusal(lambda: client.get_object(Bucket=bucket, Key=keys[0], Range=f"bytes={head['ContentLength']}-")),
        }
        return {"refusals": refusals, "keys": keys, "pages": pages, "tables": [p["Prefix"] for p in folded.get("CommonPrefixes", [])],
                "size": head["ContentLength"], "tail": tail[-4:].decode("latin-1"), "wrongSecret": refused}

    run("boto3", results, boto)

    def duck():
        import duckdb
        import duckdb_ext
        con = duckdb.connect()
        con.execute("SET extension_directory = '" + os.path.join(list(duckdb_ext.__path__)[0], "extensions") + "'")
        for extension in ("httpfs", "ducklake", "postgres"):
            con.execute("LOAD " + extension)
        con.execute(f"CREATE SECRET lake_s3 (TYPE s3, KEY_ID '{key}', SECRET '{secret}', REGION 'us-east-1', ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)")
        plain = con.execute(f"SELECT count(*), sum(_offset), sum(_partition) FROM read_parquet('s3://{bucket}/{prefix}*.parquet')").fetchone()
        # no DATA_PATH: the catalog's own, s3://offsetlake/, through the secret's endpoint
        con.execute(f"ATTACH 'ducklake:postgres:{job['libpq']}' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY)")
        lake = con.execute(f"SELECT count(*), sum(_offset), sum(_partition) FROM lake.{table}").fetchone()
        return {"rows": plain[0], "offsets": int(plain[1]), "partitions": int(plain[2]),
                "ducklake": {"rows": lake[0], "offsets": int(lake[1]), "partitions": int(lake[2])}}

    run("duckdb", results, duck)

    def polars():
        import polars as pl
        options = {"aws_endpoint_url": endpoint, "aws_access_key_id": key, "aws_secret_access_key": secret,
                   "aws_region": "us-east-1", "aws_allow_http": "true"}
        frame = pl.scan_parquet(f"s3://{bucket}/{prefix}*.parquet", storage_options=options).select(
            pl.len().alias("rows"), pl.col("_offset").sum().alias("offsets"), pl.col("_partition").cast(pl.Int64).sum().alias("partitions")).collect()
        row = frame.row(0, named=True)
        return {"rows": row["rows"], "offsets": int(row["offsets"]), "partitions": int(row["partitions"]), "version": pl.__version__}

    run("polars", results, polars)

    def arrow():
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        from pyarrow import fs
        s3 = fs.S3FileSystem(access_key=key, secret_key=secret, region="us-east-1", endpoint_override=endpoint, scheme="http")
        data = pq.read_table(f"{bucket}/{prefix}", filesystem=s3, columns=["_offset", "_partition"])
        return {"rows": data.num_rows, "offsets": int(pc.sum(data["_offset"]).as_py()), "partitions": int(pc.sum(data["_partition"]).as_py())}

    run("pyarrow", results, arrow)

    def fusion():
        import datafusion
        from datafusion.object_store import AmazonS3
        ctx = datafusion.SessionContext()
        store = AmazonS3(bucket_name=bucket, region="us-east-1", access_key_id=key, secret_access_key=secret, endpoint=endpoint, allow_http=True)
        ctx.register_object_store("s3://", store, bucket)
        ctx.register_parquet("t", f"s3://{bucket}/{prefix}")
        ctx.register_parquet("r", f"s3://{bucket}/tables/{job['rawTable']}/files/")
        query = 'SELECT count(*) AS rows, sum("_offset") AS offsets, sum(CAST("_partition" AS BIGINT)) AS partitions FROM '
        row = ctx.sql(query + "t").to_pylist()[0]
        raw = ctx.sql(query + "r").to_pylist()[0]
        return {"rows": row["rows"], "offsets": int(row["offsets"]), "partitions": int(row["partitions"]), "version": datafusion.__version__,
                "raw": {"rows": raw["rows"], "offsets": int(raw["offsets"]), "partitions": int(raw["partitions"])}}

    run("datafusion", results, fusion)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
