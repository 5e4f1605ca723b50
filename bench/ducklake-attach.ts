/**
 * The Python that starts DuckDB 1.4.4 (the tests' environment, PyPI extensions) and
 * attaches the catalog as a DuckLake through a read API, for the benchmarks that time
 * queries through the attach. Reads a JSON job on stdin (`token`, `url`, `libpq`, and
 * whatever `body` uses); `body` runs after the attach, with `con`, `job` and `attach`
 * (the attach's seconds) defined.
 */
export function duckdbAttachScript(body: string): string {
  return String.raw`
import json, os, sys, time
import duckdb, duckdb_ext
job = json.loads(sys.stdin.read())
con = duckdb.connect()
con.execute("SET extension_directory = '" + os.path.join(list(duckdb_ext.__path__)[0], "extensions") + "'")
for extension in ("ducklake", "postgres", "httpfs"):
    con.execute("LOAD " + extension)
con.execute("CREATE SECRET serve (TYPE http, BEARER_TOKEN '" + job["token"] + "', SCOPE '" + job["url"] + "/')")
started = time.perf_counter()
con.execute("ATTACH 'ducklake:postgres:" + job["libpq"] + "' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY, DATA_PATH '" + job["url"] + "/', OVERRIDE_DATA_PATH TRUE)")
attach = time.perf_counter() - started
` + body;
}
