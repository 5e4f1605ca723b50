#!/usr/bin/env bash
# What `npm test` needs beyond npm packages and the local stack (which fetches itself):
# the Python readers the tests compare against (PyPI), and PgBouncer, the transaction
# pooler the integration tests reach the catalog through (Debian's package).
set -euo pipefail
python3 -c 'import pyarrow, fsspec, aiohttp, requests, confluent_kafka, fastavro, google.protobuf, grpc_tools.protoc, botocore, duckdb, pytz, duckdb_ext, polars, datafusion, boto3, pyarrow.fs, glob, os
assert len(glob.glob(os.path.join(list(duckdb_ext.__path__)[0], "extensions", "v1.4.4", "*", "*.duckdb_extension"))) >= 3' 2>/dev/null \
  || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages -r test/integration/requirements-reader.txt
if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq pgbouncer >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null; }
  else
    echo "npm test needs PgBouncer (the integration tests reach Postgres through it): install it, e.g. sudo apt-get install pgbouncer" >&2
    exit 1
  fi
fi
