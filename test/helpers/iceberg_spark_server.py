"""One Spark 4.1 with Iceberg's Spark runtime for every test that reads through Spark
(test/helpers/iceberg-spark.ts starts it once per test run, on the first call): the JVM's start and
the loading of Iceberg's and the AWS SDK's classes, most of a Spark read's time, are paid
once. Each call gets a session of its own on that one SparkContext (SparkSession.newSession:
its own SQL configuration and catalogs) with serve's Iceberg REST catalog as `lake`: the Java
RESTCatalog client and S3FileIO (AWS SDK v2), as each test's Spark function reads it.

usage: python3 iceberg_spark_server.py FOLDER   (JAVA_HOME: a Java 17 or 21)
stdin: {"jars": [...] (test/helpers/iceberg-jars.ts), "watch": PID}
writes FOLDER/port once Spark has started; stops on SIGTERM, or when PID (the test runner) is gone.
POST / {"script": PATH, "function": NAME, "job": {"uri": "http://127.0.0.1:PORT/iceberg", "token", ...}}
answers NAME(session, job) of the script at PATH as JSON, or {"error", "trace"}.
"""
import importlib.util
import json
import os
import signal
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def base_session(jars):
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("offsetlake-tests")
             .config("spark.jars", ",".join(jars))
             .config("spark.driver.memory", "1g")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def lake_session(base, job):
    """A session of its own on the shared SparkContext, serve's catalog at job's uri as `lake`."""
    session = base.newSession()
    for key, value in {"spark.sql.session.timeZone": "UTC",
                       "spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
                       "spark.sql.catalog.lake.type": "rest",
                       "spark.sql.catalog.lake.uri": job["uri"],
                       "spark.sql.catalog.lake.token": job["token"],
                       "spark.sql.catalog.lake.io-impl": "org.apache.iceberg.aws.s3.S3FileIO"}.items():
        session.conf.set(key, value)
    return session


scripts = {}
scripts_lock = threading.Lock()


def script_module(path):
    with scripts_lock:
        if path not in scripts:
            spec = importlib.util.spec_from_file_location(f"spark_script_{len(scripts)}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            scripts[path] = module
        return scripts[path]


def serve(base, folder):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                function = getattr(script_module(request["script"]), request["function"])
                answer = function(lake_session(base, request["job"]), request["job"])
            except Exception as error:
                answer = {"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()[-4000:]}
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # the port file appears whole: the callers wait for it
    with open(os.path.join(folder, "port.tmp"), "w", encoding="utf-8") as handle:
        handle.write(str(server.server_address[1]))
    os.replace(os.path.join(folder, "port.tmp"), os.path.join(folder, "port"))


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def main():
    folder = sys.argv[1]
    request = json.loads(sys.stdin.read())
    # the global setup's teardown sends SIGTERM: Spark stops as when the runner is gone
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    base = base_session(request["jars"])
    try:
        serve(base, folder)
        while alive(request["watch"]):
            time.sleep(2)
    finally:
        base.stop()


if __name__ == "__main__":
    main()
