"""The peers' reads of a topic, neither of them offsetlake's code: a confluent-kafka
read_committed consumer that reads every partition from its start to its end (the last
stable offset: partition EOF) and counts records and key + value + header bytes; with
`--parquet OUT`, the same read copied into one Parquet file (pyarrow, zstd), as a copy
job would. JSON values are kept as their text (`value`); Avro values in the Confluent
wire format are decoded with the registry's schema (fastavro) into a column per field.

usage: consume.py --brokers H:P --topic T --partitions P [--parquet OUT --format json|avro [--registry URL]]
prints one JSON line: records, bytes
"""
import argparse
import io
import json
import struct
import sys

from confluent_kafka import Consumer, KafkaError, TopicPartition

BATCH = 50_000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--brokers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--parquet")
    parser.add_argument("--format", choices=["json", "avro"], default="json")
    parser.add_argument("--registry")
    args = parser.parse_args()

    consumer = Consumer({
        "bootstrap.servers": args.brokers,
        "group.id": "peers-bench-unused",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "enable.partition.eof": True,
        "fetch.max.bytes": 52428800,
        "max.partition.fetch.bytes": 10485760,
    })
    consumer.assign([TopicPartition(args.topic, p, -2) for p in range(args.partitions)])

    writer = None
    columns = None
    decode = None
    if args.parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if args.format == "avro":
            import fastavro
            import requests

            schemas = {}

            def decode(value):
                schema_id = struct.unpack(">I", value[1:5])[0]
                schema = schemas.get(schema_id)
                if schema is None:
                    text = requests.get(f"{args.registry}/schemas/ids/{schema_id}", timeout=30).json()["schema"]
                    schema = schemas[schema_id] = fastavro.parse_schema(json.loads(text))
                return fastavro.schemaless_reader(io.BytesIO(value[5:]), schema)

        columns = {"partition": [], "offset": [], "timestamp": [], "key": [], "headers": [], "value": []}

    def flush():
        nonlocal writer
        if not columns or not columns["offset"]:
            return
        arrays = {
            "_partition": pa.array(columns["partition"], pa.int32()),
            "_offset": pa.array(columns["offset"], pa.int64()),
            "_timestamp": pa.array(columns["timestamp"], pa.timestamp("ms", tz="UTC")),
            "_key": pa.array(columns["key"], pa.string()),
            "_headers": pa.array(columns["headers"], pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))),
        }
        if args.format == "avro":
            values = pa.Table.from_pylist(columns["value"])
            table = pa.table({**arrays, **{name: values.column(name) for name in values.column_names}})
        else:
            table = pa.table({**arrays, "value": pa.array(columns["value"], pa.string())})
        if writer is None:
            writer = pq.ParquetWriter(args.parquet, table.schema, compression="zstd")
        writer.write_table(table, row_group_size=BATCH)
        for column in columns.values():
            column.clear()

    records = total = 0
    ended = set()
    while len(ended) < args.partitions:
        for message in consumer.consume(num_messages=10_000, timeout=1.0):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    ended.add(message.partition())
                    continue
                raise RuntimeError(str(error))
            key, value, headers = message.key(), message.value(), message.headers() or []
            records += 1
            total += (len(key) if key else 0) + (len(value) if value else 0) + sum(len(k) + (len(v) if v else 0) for k, v in headers)
            if columns is not None:
                columns["partition"].append(message.partition())
                columns["offset"].append(message.offset())
                columns["timestamp"].append(message.timestamp()[1])
                columns["key"].append(key.decode() if key is not None else None)
                columns["headers"].append([{"key": k, "value": v.decode() if v is not None else None} for k, v in headers])
                columns["value"].append(decode(value) if decode else value.decode())
                if len(columns["offset"]) >= BATCH:
                    flush()
    if columns is not None:
        flush()
        if writer is not None:
            writer.close()
    consumer.close()
    print(json.dumps({"records": records, "bytes": total}))


if __name__ == "__main__":
    main()
