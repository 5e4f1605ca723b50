"""An MSK IAM auth token checked with code we did not write: botocore's SigV4 presigner.

The token a client sends in SASL/OAUTHBEARER for MSK IAM access control is the base64url
(unpadded) text of a presigned URL
`https://kafka.<region>.amazonaws.com/?Action=kafka-cluster%3AConnect&X-Amz-...`, signed
with SigV4 for the service `kafka-cluster`. This decodes the token, presigns the same
request with botocore (its clock set to the token's X-Amz-Date, the rest from the
credentials given), and prints both sets of query parameters, so the caller compares
the signature and every signed parameter with botocore's.

    echo '{"token": ..., "accessKeyId": ..., "secretAccessKey": ..., "sessionToken": ...,
           "region": ...}' | python3 msk_iam_token.py
"""
import base64
import datetime
import json
import sys
from unittest import mock
from urllib.parse import parse_qsl, urlsplit

from botocore.auth import SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def decode_token(token):
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8")


def main():
    given = json.load(sys.stdin)
    url = decode_token(given["token"])
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))

    # botocore signs with its own clock; it is set to the instant the token names.
    signed_at = datetime.datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
    credentials = Credentials(given["accessKeyId"], given["secretAccessKey"], given["sessionToken"])
    request = AWSRequest(method="GET", url=f"https://kafka.{given['region']}.amazonaws.com/?Action=kafka-cluster%3AConnect")
    signer = SigV4QueryAuth(credentials, "kafka-cluster", given["region"], expires=int(query["X-Amz-Expires"]))
    with mock.patch("botocore.auth.get_current_datetime", return_value=signed_at):
        signer.add_auth(request)
    expected = urlsplit(request.url)

    json.dump({
        "url": url,
        "scheme": parts.scheme,
        "host": parts.netloc,
        "path": parts.path,
        "query": query,
        "botocoreQuery": dict(parse_qsl(expected.query, keep_blank_values=True)),
    }, sys.stdout)


if __name__ == "__main__":
    main()
