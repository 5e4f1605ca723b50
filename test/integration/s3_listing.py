"""
boto3 and fastavro against serve's S3 face with the Iceberg catalog mounted: what
ListObjectsV2 names below a table's metadata/ and what GET and HEAD answer for each key,
and every file the table metadata reaches (walked with json and fastavro, not with our
code). Also what botocore shows of the face's errors. Reads a JSON request on stdin
(endpoint, bucket, key, secret, table) and prints what it saw, as JSON.
"""
import hashlib
import io
import json
import sys

import boto3
import fastavro
from botocore.config import Config
from botocore.exceptions import ClientError

args = json.load(sys.stdin)
config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
bucket, table = args["bucket"], args["table"]


def client(region="us-east-1", secret=None):
    return boto3.client("s3", endpoint_url=args["endpoint"], aws_access_key_id=args["key"], aws_secret_access_key=secret or args["secret"], region_name=region, config=config)


s3 = client()
prefix = f"tables/{table}/metadata/"


def listed(**kw):
    """Every Contents of a listing, page by page with two keys a page (continuation tokens)."""
    found, prefixes, pages = [], [], 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": 2}, **kw):
        pages += 1
        found += [{"key": c["Key"], "size": c["Size"], "etag": c["ETag"]} for c in page.get("Contents", [])]
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    return found, prefixes, pages


objects, _, pages = listed(Prefix=prefix)
answered = []
for entry in objects:
    got = s3.get_object(Bucket=bucket, Key=entry["key"])
    body = got["Body"].read()
    head = s3.head_object(Bucket=bucket, Key=entry["key"])
    answered.append({"key": entry["key"], "listed": [entry["size"], entry["etag"]], "get": [len(body), got["ETag"]], "head": [head["ContentLength"], head["ETag"]],
                     "sha256": '"' + hashlib.sha256(body).hexdigest() + '"'})


def key_of(location):
    assert location.startswith(f"s3://{bucket}/"), location
    return location[len(f"s3://{bucket}/"):]


def avro(key):
    return list(fastavro.reader(io.BytesIO(s3.get_object(Bucket=bucket, Key=key)["Body"].read())))


# the newest metadata by its number, as an engine that lists (ClickHouse's icebergS3) picks it
names = sorted(e["key"] for e in objects if e["key"].endswith(".metadata.json"))
newest = json.loads(s3.get_object(Bucket=bucket, Key=names[-1])["Body"].read())
reachable = {names[-1]} | {key_of(e["metadata-file"]) for e in newest.get("metadata-log", [])}
for snapshot in newest.get("snapshots", []):
    reachable.add(key_of(snapshot["manifest-list"]))
    for manifest in avro(key_of(snapshot["manifest-list"])):
        reachable.add(key_of(manifest["manifest_path"]))

everything, _, _ = listed()
_, table_prefixes, _ = listed(Prefix=f"tables/{table}/", Delimiter="/")
_, top, _ = listed(Delimiter="/")


def refusal(call):
    try:
        call()
        return {"error": None}
    except ClientError as error:
        meta = error.response["ResponseMetadata"]
        headers = meta["HTTPHeaders"]
        return {"status": meta["HTTPStatusCode"], "code": error.response["Error"].get("Code"), "said": str(error), "requestId": meta.get("RequestId"),
                "requestIdHeader": headers.get("x-amz-request-id"), "hostId": meta.get("HostId"), "hostIdHeader": headers.get("x-amz-id-2"),
                "bucketRegion": headers.get("x-amz-bucket-region")}


other = boto3.client("s3", endpoint_url=args["endpoint"], aws_access_key_id=args["key"], aws_secret_access_key=args["secret"], region_name="eu-west-1",
                     config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 0}))
first_answer = {}


def seen(response=None, **_):
    if response is not None and not first_answer:
        first_answer.update({"status": response[0].status_code, "bucketRegion": response[0].headers.get("x-amz-bucket-region"), "requestId": response[0].headers.get("x-amz-request-id")})


other.meta.events.register("needs-retry.s3.ListObjectsV2", seen)
other.list_objects_v2(Bucket=bucket, MaxKeys=1)

print(json.dumps({
    "answered": answered,
    "pages": pages,
    "listedKeys": [e["key"] for e in objects],
    "reachable": sorted(reachable),
    "everything": [e["key"] for e in everything],
    "tablePrefixes": table_prefixes,
    "top": top,
    "errors": {
        "wrongSecret": refusal(lambda: client(secret="wrong").list_objects_v2(Bucket=bucket)),
        "wrongKey": refusal(lambda: boto3.client("s3", endpoint_url=args["endpoint"], aws_access_key_id="someone-else", aws_secret_access_key=args["secret"], region_name="us-east-1", config=config).list_objects_v2(Bucket=bucket)),
        "missingKey": refusal(lambda: s3.get_object(Bucket=bucket, Key=prefix + "99999-1.metadata.json")),
        "write": refusal(lambda: s3.put_object(Bucket=bucket, Key=prefix + "new.avro", Body=b"x")),
    },
    "otherRegion": first_answer,
}))
