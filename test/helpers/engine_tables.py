"""The engine tables' records and their expected rows, from tools we did not write
(test/helpers/engine-tables.ts drives it): confluent-kafka (librdkafka) produces and reads
read_committed, fastavro encodes and decodes Avro, Google's protobuf runtime (protoc from
grpcio-tools) Protobuf, json the JSON; schemas are registered in the registry over HTTP. The
expected columns follow docs/formats.md's "Type mapping" through registry_independent.py's
mappings (test/integration), which apply it to what the independent decoders return.

Four topics, two partitions each: `json` (the json format), `avro`, `protobuf`, `json-schema`
(Confluent wire format). Each value has a struct in a struct (addr.geo.lat), a list of
records, a list of lists, maps, an enum, decimals, bytes, nulls and every time type:
Avro timestamp-millis/-micros, local-timestamp-millis/-micros, date, time-millis; Protobuf
google.protobuf.Timestamp; JSON Schema date-time and date; and `_timestamp` over four hours.

    python3 engine_tables.py produce   stdin {"brokers", "registry", "topics": {format: topic}, "t0": ms, "part": 1|2, "state": path}
        part 1: registers each topic's schema (their ids kept in `state`), one committed
        transaction (hours 0 and 1) and an aborted one; part 2: one more committed transaction
        (hours 2 and 3). Prints what was sent.
    python3 engine_tables.py dump      stdin {"brokers", "registry", "tables": {name: {"format", "topic",
                                              "ends": {partition: indexed_end}, "firstEnds": {partition: end}}}, "out": path}
        reads every committed record below `ends` with a read_committed consumer, decodes it
        independently and writes the expected rows (test/helpers/engine_rows.py's canonical form,
        Iceberg's column names) to `out`; prints a summary.
"""
import datetime as dt
import json
import os
import sys
import uuid
from decimal import Decimal

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from confluent_kafka import Producer  # noqa: E402

import registry_independent as ri  # noqa: E402
from engine_rows import canonical, map_paths  # noqa: E402

FORMATS = ["json", "avro", "protobuf", "json-schema"]
SCHEMA_TYPES = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}
HOUR = 3_600_000
UTC = dt.timezone.utc
# Iceberg's name of the Kafka partition column (Iceberg reserves _partition)
ICEBERG_NAMES = {"_partition": "_kafka_partition"}

AVRO_SCHEMA = json.dumps({
    "type": "record", "name": "Order", "namespace": "offsetlake.engines", "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "qty", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "score", "type": "double"},
        {"name": "flag", "type": "boolean"},
        {"name": "blob", "type": "bytes"},
        {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 3}},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "price", "type": {"type": "fixed", "name": "Price", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 4}},
        {"name": "addr", "type": {"type": "record", "name": "Addr", "fields": [
            {"name": "street", "type": "string"},
            {"name": "geo", "type": {"type": "record", "name": "Geo", "fields": [
                {"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}, {"name": "label", "type": ["null", "string"], "default": None}]}},
            {"name": "zip", "type": ["null", "string"], "default": None}]}},
        {"name": "maybe_addr", "type": ["null", "Addr"], "default": None},
        {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
            {"name": "sku", "type": "string"}, {"name": "n", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}}},
        {"name": "matrix", "type": {"type": "array", "items": {"type": "array", "items": "int"}}},
        {"name": "attrs", "type": {"type": "map", "values": "string"}},
        {"name": "item_by_name", "type": {"type": "map", "values": "Item"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "lts_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "lts_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "maybe_ts", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": None},
    ]})

PROTOBUF_SCHEMA = """syntax = "proto3";
package offsetlake.engines;

import "google/protobuf/timestamp.proto";

message Order {
  int64 id = 1;
  string name = 2;
  int32 qty = 3;
  float ratio = 4;
  double score = 5;
  bool flag = 6;
  bytes blob = 7;
  Color color = 8;
  uint64 big = 9;
  Addr addr = 10;
  repeated Item items = 11;
  repeated Row matrix = 12;
  map<string, string> attrs = 13;
  map<int64, Item> item_by_id = 14;
  optional string note = 15;
  google.protobuf.Timestamp at = 16;
  google.protobuf.Timestamp maybe_at = 17;
  oneof choice {
    string c_text = 18;
    int64 c_num = 19;
  }
}

message Addr {
  string street = 1;
  Geo geo = 2;
  optional string zip = 3;
}

message Geo {
  double lat = 1;
  double lon = 2;
}

message Item {
  string sku = 1;
  int32 n = 2;
  repeated string tags = 3;
}

message Row {
  repeated int32 cells = 1;
}

enum Color {
  COLOR_UNSPECIFIED = 0;
  RED = 1;
  GREEN = 2;
}
"""

JSON_SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object", "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "score": {"type": "number"},
        "flag": {"type": "boolean"},
        "color": {"enum": ["RED", "GREEN", "BLUE"]},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "addr": {"type": "object", "properties": {
            "street": {"type": "string"},
            "geo": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
            "zip": {"type": ["string", "null"]}}},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}},
        "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "attrs": {"type": "object", "additionalProperties": {"type": "string"}},
        "note": {"type": ["string", "null"]},
    }})

SCHEMAS = {"avro": AVRO_SCHEMA, "protobuf": PROTOBUF_SCHEMA, "json-schema": JSON_SCHEMA}
STRINGS = ["plain", "", "ü✓ 日本語 🎉", "a,b;c\"d'e", "line\nbreak"]
DOUBLES = [0.0, 1.5, -2.25, 1e300, float("nan"), float("inf"), -0.0]


def pick(values, i):
    return values[i % len(values)]


def when(t0, hour, i):
    """A record's timestamp: inside `hour`, spread over its minutes."""
    return t0 + hour * HOUR + (i * 97_000) % HOUR


def instant(ms):
    """An epoch millisecond as a UTC datetime, exactly (no float division)."""
    return ri.EPOCH + dt.timedelta(milliseconds=ms)


def avro_record(i, stamp):
    item = lambda k: {"sku": f"sku-{i}-{k}", "n": k - i, "tags": [pick(STRINGS, i + j) for j in range(k % 3)]}  # noqa: E731
    addr = {"street": pick(STRINGS, i), "geo": {"lat": 48.0 + i / 1000, "lon": -(i / 7), "label": None if i % 3 == 0 else f"g{i}"}, "zip": None if i % 2 else f"{10000 + i}"}
    return {
        "id": i * 2**40 - 7, "name": f"order-{i}", "qty": pick([0, -(2**31), 2**31 - 1, 42], i), "ratio": pick([0.5, -1.25, 3.0e38], i),
        "score": pick(DOUBLES, i), "flag": i % 2 == 0, "blob": pick([b"", b"\x00\xff", bytes(range(8))], i), "code": pick([b"abc", b"\x00\x01\x02"], i),
        "color": pick(["RED", "GREEN", "BLUE"], i), "amount": Decimal(f"{i * 123 - 500}.{i % 100:02d}"), "price": Decimal(f"-{i}.{i:04d}"),
        "addr": addr, "maybe_addr": None if i % 4 == 0 else dict(addr, street=f"second {i}"),
        "items": [item(k) for k in range(i % 4)], "matrix": [[i + j + k for k in range(j)] for j in range(i % 3 + 1)],
        "attrs": {f"k{j}": pick(STRINGS, i + j) for j in range(i % 4)}, "item_by_name": {f"n{j}": item(j + 1) for j in range(i % 3)},
        "note": None if i % 3 == 1 else pick(STRINGS, i + 1),
        "ts_ms": instant(stamp + i), "ts_us": instant(stamp) + dt.timedelta(microseconds=i * 7 + 1),
        "lts_ms": dt.datetime(2026, 3, 29, 2, 30) + dt.timedelta(milliseconds=i * 1001), "lts_us": dt.datetime(1969, 12, 31, 23, 59, 59) + dt.timedelta(microseconds=i * 13),
        "day": dt.date(1969, 12, 25) + dt.timedelta(days=i * 3), "tod": dt.time(i % 24, i % 60, i % 60, (i * 1000) % 1_000_000),
        "maybe_ts": None if i % 2 else instant(stamp - 1),
    }


def protobuf_record(cls, i, stamp):
    m = cls()
    m.id = i * 2**40 - 7
    m.name = f"order-{i}"
    m.qty = pick([0, -(2**31), 2**31 - 1, 42], i)
    m.ratio = pick([0.5, -1.25, 3.0e38], i)
    m.score = pick(DOUBLES, i)
    m.flag = i % 2 == 0
    m.blob = pick([b"", b"\x00\xff", bytes(range(8))], i)
    m.color = pick([0, 1, 2], i)
    m.big = pick([0, 2**64 - 1, 2**63 + i], i)
    if i % 5 != 4:
        m.addr.street = pick(STRINGS, i)
        if i % 3 != 0:
            m.addr.geo.lat = 48.0 + i / 1000
            m.addr.geo.lon = -(i / 7)
        if i % 2 == 0:
            m.addr.zip = f"{10000 + i}"
    for k in range(i % 4):
        item = m.items.add()
        item.sku = f"sku-{i}-{k}"
        item.n = k - i
        item.tags.extend(pick(STRINGS, i + j) for j in range(k % 3))
    for j in range(i % 3 + 1):
        m.matrix.add().cells.extend(i + j + k for k in range(j))
    for j in range(i % 4):
        m.attrs[f"k{j}"] = pick(STRINGS, i + j)
    for j in range(i % 3):
        m.item_by_id[pick([-(2**63), 2**63 - 1, -1, 5], j + i)].sku = f"by-id-{j}"
    if i % 3 != 1:
        m.note = pick(STRINGS, i + 1)
    m.at.seconds = stamp // 1000 + i
    m.at.nanos = (i * 1_234_567) % 1_000_000 * 1000
    if i % 2 == 0:
        m.maybe_at.seconds = pick([0, -1, 1764506096], i)
        m.maybe_at.nanos = 999_999_000
    if i % 3 == 0:
        m.c_text = pick(STRINGS, i)
    elif i % 3 == 1:
        m.c_num = -(2**63) + i
    return m


def json_schema_record(i, stamp):
    at = instant(stamp) + dt.timedelta(microseconds=i * 7)
    offset = pick([dt.timedelta(0), dt.timedelta(hours=2), dt.timedelta(hours=-5, minutes=-30)], i)
    record = {
        "id": pick([0, -(2**53 - 1), 2**53 - 1, 42], i) + (i if i % 4 == 3 else 0), "name": f"order-{i}", "score": pick([0.0, 1.5, -2.25, 1e300, 3], i),
        "flag": i % 2 == 0, "color": pick(["RED", "GREEN", "BLUE"], i),
        "at": at.astimezone(dt.timezone(offset)).isoformat().replace("+00:00", "Z"), "day": (dt.date(1969, 12, 25) + dt.timedelta(days=i * 3)).isoformat(),
        "addr": {"street": pick(STRINGS, i), "geo": {"lat": 48.0 + i / 1000, "lon": -(i / 7)}, "zip": None if i % 2 else f"{10000 + i}"},
        "items": [{"sku": f"sku-{i}-{k}", "n": k - i, "tags": [pick(STRINGS, i + j) for j in range(k % 3)]} for k in range(i % 4)],
        "matrix": [[i + j + k for k in range(j)] for j in range(i % 3 + 1)],
        "attrs": {f"k{j}": pick(STRINGS, i + j) for j in range(i % 4)},
        "note": None if i % 3 == 1 else pick(STRINGS, i + 1),
    }
    if i % 5 == 2:
        del record["addr"]  # absent: null
    return record


def json_value(i):
    """The json format's values: nested JSON, and a few that are not JSON (error rows)."""
    if i % 9 == 4:
        return b"not json {"
    return json.dumps({"i": i, "addr": {"geo": {"lat": 48.0 + i / 1000}}, "tags": ["a", "ü"][: i % 3], "n": None}, ensure_ascii=i % 2 == 0).encode()


def produce(job):
    registry = ri.Registry(job["registry"])
    topics = job["topics"]
    t0 = job["t0"]
    state_path = job["state"]
    if job["part"] == 1:
        ids = {fmt: registry.register(f"{topics[fmt]}-value", SCHEMA_TYPES[fmt], SCHEMAS[fmt]) for fmt in SCHEMA_TYPES}
        with open(state_path, "w", encoding="utf-8") as handle:
            json.dump(ids, handle)
    else:
        with open(state_path, encoding="utf-8") as handle:
            ids = json.load(handle)
    pb_class = ri.protobuf_class(PROTOBUF_SCHEMA, [0])
    producer = Producer({"bootstrap.servers": job["brokers"], "transactional.id": f"engines-{uuid.uuid4().hex[:8]}", "enable.idempotence": True, "linger.ms": 5})
    producer.init_transactions(30)
    errors = []
    sent = {fmt: 0 for fmt in FORMATS}

    def on_delivery(error, _message):
        if error is not None:
            errors.append(str(error))

    def value(fmt, i, stamp):
        if fmt == "json":
            return json_value(i)
        if i % 17 == 16:
            return b"\x01bad" if i % 2 else ri.wire(ri.UNKNOWN_SCHEMA_ID, b"\x02")  # error rows: a wrong magic byte, an unknown schema id
        if fmt == "avro":
            return ri.wire(ids[fmt], ri.encode_avro(AVRO_SCHEMA, avro_record(i, stamp)))
        if fmt == "protobuf":
            return ri.wire(ids[fmt], protobuf_record(pb_class, i, stamp).SerializeToString(), "short" if i % 2 == 0 else [0])
        return ri.wire(ids[fmt], json.dumps(json_schema_record(i, stamp), ensure_ascii=i % 2 == 0).encode())

    def send(hours, count, base, count_it=True):
        for fmt in FORMATS:
            for i in range(base, base + count):
                stamp = when(t0, hours[(i // 2) % len(hours)], i)
                headers = None if i % 4 == 3 else [("h", f"v{i}".encode()), ("empty", b""), ("null", None), ("h", b"\x00dup")][: i % 4 + 1]
                key = None if i % 6 == 5 else f"key-{i}".encode()
                producer.produce(topics[fmt], value=None if i % 23 == 22 else value(fmt, i, stamp), key=key, headers=headers, partition=i % 2, timestamp=stamp, on_delivery=on_delivery)
                if count_it:
                    sent[fmt] += 1

    if job["part"] == 1:
        producer.begin_transaction()
        send([0, 1], 60, 0)
        producer.commit_transaction(30)
        producer.begin_transaction()
        send([0, 1, 2], 10, 1000, count_it=False)
        producer.flush(30)  # delivered before the abort (librdkafka issue 4849)
        producer.abort_transaction(30)
    else:
        producer.begin_transaction()
        send([2, 3], 60, 60)
        producer.commit_transaction(30)
    producer.flush(30)
    if errors:
        raise RuntimeError(f"delivery failed: {errors[:5]}")
    print(json.dumps({"sent": sent, "schemaIds": ids}))


class EngineAvroMapping(ri.AvroMapping):
    """docs/formats.md: Avro time-millis is an int32 (milliseconds of the day), time-micros an int64."""

    def value(self, node, v):
        resolved = self.resolve(node)
        if isinstance(resolved, dict) and resolved.get("logicalType") in ("time-millis", "time-micros") and isinstance(v, dt.time):
            micros = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
            return micros // 1000 if resolved["logicalType"] == "time-millis" else micros
        return super().value(node, v)


MAPPINGS = {"avro": EngineAvroMapping, "protobuf": ri.ProtobufMapping, "json-schema": ri.JsonMapping}


def expected_table(registry, spec):
    fmt, topic = spec["format"], spec["topic"]
    ends = {int(p): int(e) for p, e in spec["ends"].items()}
    first_ends = {int(p): int(e) for p, e in spec["firstEnds"].items()}
    committed = ri.committed_records(spec["brokers"], topic)
    mapping = MAPPINGS[fmt](SCHEMAS[fmt]) if fmt in MAPPINGS else None
    decoded_columns = [name for name, _ in mapping.columns()] if mapping else []
    rows = []
    for (partition, offset), message in sorted(committed.items()):
        if offset >= ends.get(partition, 0):
            continue
        value = message.value()
        row = {
            "_kafka_partition": partition, "_offset": offset,
            "_timestamp": ri.EPOCH + dt.timedelta(milliseconds=message.timestamp()[1]),
            "_key": message.key(), "_headers": [{"key": k, "value": v} for k, v in (message.headers() or [])],
        }
        if fmt == "json":
            text = None
            if value is not None:
                try:
                    json.loads(value.decode("utf-8"))
                    text = value.decode("utf-8")
                except ValueError:
                    text = None
            row["_value"], row["_error"] = text, (True if value is not None and text is None else None)
        else:
            decoded = None
            if value is None:
                row["_value"], row["_error"] = None, None
            else:
                text, decoded = ri.independent_decode(fmt, registry, value)
                if text is None:
                    row["_value"], row["_error"], decoded = value, True, None
                else:
                    row["_value"], row["_error"] = None, None
            values = mapping.row(decoded) if decoded is not None else {}
            for name in decoded_columns:
                row[name] = values.get(name)
        rows.append(row)
    columns = ["_kafka_partition", "_offset", "_timestamp", "_key", "_headers", "_value", "_error"] + decoded_columns
    maps = map_paths(mapping.columns()) if mapping else []
    return {
        "format": fmt, "topic": topic, "columns": columns, "maps": maps,
        "rows": [canonical(row) for row in rows],
        "firstSnapshotRows": sum(1 for row in rows if row["_offset"] < first_ends.get(row["_kafka_partition"], 0)),
    }


def dump(job):
    registry = ri.Registry(job["registry"])
    tables = {}
    for name, spec in job["tables"].items():
        tables[name] = expected_table(registry, dict(spec, brokers=job["brokers"]))
    with open(job["out"], "w", encoding="utf-8") as handle:
        json.dump({"tables": tables}, handle)
    print(json.dumps({name: {"rows": len(t["rows"]), "errors": sum(1 for r in t["rows"] if r["_error"] is not None)} for name, t in tables.items()}))


def main():
    command = sys.argv[1]
    job = json.loads(sys.stdin.read())
    {"produce": produce, "dump": dump}[command](job)


if __name__ == "__main__":
    main()
