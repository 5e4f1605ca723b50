"""
botocore against serve's S3 face: conditional GET/HEAD (If-Match, If-None-Match,
If-Modified-Since, If-Unmodified-Since, also with a Range), ListObjectsV2 with
MaxKeys=0, and a client that signs for another region. Reads a JSON request on stdin
(endpoint, bucket, key, secret, object) and prints what botocore saw, as JSON: the test
compares it with what S3 answers. The ETag we expect is the SHA-256 of the bytes botocore
got, computed here.
"""
import datetime
import hashlib
import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

args = json.load(sys.stdin)
config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})


def client(region):
    return boto3.client("s3", endpoint_url=args["endpoint"], aws_access_key_id=args["key"], aws_secret_access_key=args["secret"], region_name=region, config=config)


s3 = client("us-east-1")
bucket, key = args["bucket"], args["object"]


def outcome(call):
    try:
        answer = call()
        return {"status": answer["ResponseMetadata"]["HTTPStatusCode"]}
    except ClientError as error:
        found = {"status": error.response["ResponseMetadata"]["HTTPStatusCode"], "code": error.response["Error"].get("Code")}
        for extra in ("Condition", "Region", "Message"):
            if extra in error.response["Error"]:
                found[extra.lower()] = error.response["Error"][extra]
        return found


def other_region():
    """A client that signs for eu-west-1: each answer it got (botocore follows S3's redirect by region), then the outcome."""
    other = client("eu-west-1")
    attempts = []

    def seen(response=None, **_):
        if response is not None:
            http, parsed = response
            attempt = {"status": http.status_code}
            if "Error" in parsed:
                attempt.update({"code": parsed["Error"].get("Code"), "region": parsed["Error"].get("Region")})
            attempts.append(attempt)

    other.meta.events.register("needs-retry.s3.ListObjectsV2", seen)
    return {"attempts": attempts, **outcome(lambda: other.list_objects_v2(Bucket=bucket, MaxKeys=1))}


whole = s3.get_object(Bucket=bucket, Key=key)
body = whole["Body"].read()
etag = '"' + hashlib.sha256(body).hexdigest() + '"'
modified = whole["LastModified"]
day = datetime.timedelta(days=1)
get = lambda **kw: outcome(lambda: s3.get_object(Bucket=bucket, Key=key, **kw))
head = lambda **kw: outcome(lambda: s3.head_object(Bucket=bucket, Key=key, **kw))
listed = s3.list_objects_v2(Bucket=bucket, MaxKeys=0)

print(json.dumps({
    "etagIsSha256OfBody": whole["ETag"] == etag,
    "ifNoneMatchSame": get(IfNoneMatch=etag),
    "ifNoneMatchOther": get(IfNoneMatch='"0000"'),
    "ifNoneMatchAny": get(IfNoneMatch="*"),
    "ifMatchSame": get(IfMatch=etag),
    "ifMatchOther": get(IfMatch='"0000"'),
    "ifModifiedSinceLastModified": get(IfModifiedSince=modified),
    "ifModifiedSinceDayBefore": get(IfModifiedSince=modified - day),
    "ifUnmodifiedSinceDayBefore": get(IfUnmodifiedSince=modified - day),
    "ifUnmodifiedSinceLastModified": get(IfUnmodifiedSince=modified),
    "ifMatchSameButUnmodifiedSinceDayBefore": get(IfMatch=etag, IfUnmodifiedSince=modified - day),
    "ifNoneMatchSameButModifiedSinceDayBefore": get(IfNoneMatch=etag, IfModifiedSince=modified - day),
    "rangeIfMatchOther": get(IfMatch='"0000"', Range="bytes=0-3"),
    "rangeIfNoneMatchSame": get(IfNoneMatch=etag, Range="bytes=0-3"),
    "headIfNoneMatchSame": head(IfNoneMatch=etag),
    "headIfMatchOther": head(IfMatch='"0000"'),
    "maxKeysZero": {"status": listed["ResponseMetadata"]["HTTPStatusCode"], "keyCount": listed.get("KeyCount"), "maxKeys": listed.get("MaxKeys"), "isTruncated": listed.get("IsTruncated"), "contents": len(listed.get("Contents", [])), "next": listed.get("NextContinuationToken")},
    "otherRegion": other_region(),
}))
