"""Registry-format tables (avro, protobuf, json-schema) checked with tools we did not write.

Producers, schemas and expected values come only from third-party code: confluent-kafka
(librdkafka) produces and consumes, fastavro encodes and decodes Avro, Google's protobuf
runtime (with protoc from grpcio-tools) encodes and decodes Protobuf, the standard json
module encodes and decodes JSON, and pyarrow reads the rebuilt Parquet files. Nothing here
imports or imitates offsetlake's decoders: the expected column values follow docs/formats.md's
"Type mapping" table, applied to what the independent decoder returns.

Two data sets ("variants"), each in one topic per format: `full` has every hazard (fields,
map keys and header keys named after Object.prototype members, NUL and BOM in strings,
empty Protobuf bytes, negative 64-bit Protobuf map keys); `plain` has none of them, so the
type mapping is still checked on its own should a hazard ever stop the full topics' partitions again.

    python3 registry_independent.py prepare --work DIR --brokers B --registry URL
        creates the six topics (2 partitions each); writes DIR/state.json, prints the topics
    python3 registry_independent.py produce --work DIR
        registers schema version 1 of each topic's value subject, produces with one
        transactional producer: a committed transaction (version 1 records, bad records,
        late records), an aborted one, then registers version 2 (fields added, also inside
        nested types) and commits a third (version 2 records, a tombstone, one more v1 record)
    python3 registry_independent.py verify --work DIR --format F [--variant full|plain]
        reads DIR/<variant>-<format>.files.json (the catalog's files, the rebuilt copies or
        why a rebuild failed), reads every rebuilt file with pyarrow and the topic with a
        read_committed consumer, decodes each record independently and compares. Prints a
        per-check report and a diff to stderr; exits 1 on any mismatch.

REGIND_WITHOUT=names,header-names,nul,bom,empty-bytes,int64-map-keys (any of them) leaves
those hazards out of the full variant: for diagnosing what fails behind a failure that
stops a partition.
"""
import argparse
import datetime as dt
import hashlib
import io
import json
import math
import os
import struct
import sys
import tempfile
import uuid
from collections import Counter, defaultdict
from decimal import Decimal

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import requests
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
import grpc_tools
from grpc_tools import protoc

FORMATS = ["avro", "protobuf", "json-schema"]
SCHEMA_TYPES = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}
PARTITIONS = 2
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)

# Every name on Object.prototype that a decoder written in JavaScript could trip on.
PROTO_NAMES = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "isPrototypeOf", "propertyIsEnumerable", "toLocaleString"]
NUL, BOM = "a\u0000b", "\ufeffx"
# What JavaScript decoders and Postgres trip on; the "full" variant has them all, the "plain" one none.
HAZARDS = ["names", "header-names", "nul", "bom", "empty-bytes", "int64-map-keys"]
VARIANT_NAMES = ["full", "plain"]


class Variant:
    """The data set of one topic per format. `full`: every hazard (the acceptance check);
    `plain`: none of them, so that the type mapping is still checked on its own should a
    hazard ever stop the full topics' partitions again. For diagnosis, REGIND_WITHOUT=names,nul,... (a comma list
    of HAZARDS) leaves those out of the full variant too."""

    def __init__(self, without):
        self.without = set(without)
        # NUL inside, a leading byte order mark, the empty string, non-ASCII (BMP and astral), a line separator.
        self.strings = [x for x in [NUL, BOM, "", "ü✓ 日本語 🎉", "plain", "Ωmega\u2028line"] if not (x == NUL and "nul" in self.without or x == BOM and "bom" in self.without)]
        self.map_keys = [self.fname(n) for n in PROTO_NAMES] + [k for k in ["10", "2", "", NUL, BOM, "ü"] if k in self.strings or k in ("10", "2", "ü")]
        # Header keys: every Object.prototype name, NUL and BOM in keys, a duplicate key, a null value, an empty value, non-ASCII bytes.
        keys = [f"h_{n}" for n in PROTO_NAMES] if "header-names" in self.without else list(PROTO_NAMES)
        keys += [k for k in ["nul\u0000key", "\ufeffbom"] if not (k.startswith("nul") and "nul" in self.without or k.startswith("\ufeff") and "bom" in self.without)]
        self.headers = [(k, f"h-{k}".encode()) for k in keys] + [(keys[0], b"dup"), ("null", None), ("empty", b""), ("utf8", "ü✓".encode())]

    def fname(self, name):
        """A field name or map key that is an Object.prototype name (renamed n_NAME without "names")."""
        return f"n_{name}" if "names" in self.without else name

    def empty_bytes(self):
        """An empty bytes value (b"-" without "empty-bytes")."""
        return b"-" if "empty-bytes" in self.without else b""


VARIANTS = {"full": Variant(h for h in os.environ.get("REGIND_WITHOUT", "").split(",") if h), "plain": Variant(HAZARDS)}

# The first columns of every registry-format table (docs/formats.md, "Rows").
KAFKA_COLUMNS = ["_partition", "_offset", "_timestamp", "_key", "_headers", "_value", "_error"]
RESERVED = set(KAFKA_COLUMNS) | {"_key_decoded"}
UNKNOWN_SCHEMA_ID = 2147480000

F32_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
F32_TINY = struct.unpack("<f", struct.pack("<I", 0x00000001))[0]
FLOATS = [0.0, float("nan"), float("inf"), float("-inf"), -0.0, 1.5, F32_MAX, F32_TINY]
DOUBLES = [0.0, float("nan"), float("inf"), float("-inf"), -0.0, 0.1, 1.7976931348623157e308, 5e-324]


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def pick(values, i):
    return values[i % len(values)]


# ---------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------

def avro_schema(v, version):
    inner_fields = [
        {"name": "n", "type": "int"},
        {"name": "t", "type": "string"},
        {"name": v.fname("constructor"), "type": "string"},
    ]
    if version == 2:
        inner_fields.append({"name": "added_inner", "type": ["null", "long"], "default": None})
    fields = [
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "by", "type": "bytes"},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "s", "type": "string"},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "arr", "type": {"type": "array", "items": "string"}},
        {"name": "mp", "type": {"type": "map", "values": "long"}},
        {"name": "nested", "type": {"type": "record", "name": "Inner", "fields": inner_fields}},
        {"name": "opt", "type": ["null", "string"]},
        {"name": "u3", "type": ["null", "int", "string"]},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "lts_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "dec_b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "dec_f", "type": {"type": "fixed", "name": "Dec8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 4}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "recs", "type": {"type": "array", "items": "Inner"}},
        {"name": "_offset", "type": "long"},
    ] + [{"name": v.fname(name), "type": "string"} for name in PROTO_NAMES]
    if version == 2:
        fields += [
            {"name": "added_s", "type": ["null", "string"], "default": None},
            {"name": "added_l", "type": "long", "default": 7},
        ]
    return json.dumps({"type": "record", "name": "Everything", "namespace": "offsetlake.indep", "fields": fields})


def protobuf_schema(v, version):
    added_inner = "  int64 added_n = 4;\n" if version == 2 else ""
    added = (
        "  string added_text = 60;\n  Inner added_inner = 61;\n  uint64 added_u64 = 62;\n  optional bytes added_bytes = 63;\n"
        if version == 2 else ""
    )
    proto_fields = "".join(f"  string {v.fname(name)} = {50 + k};\n" for k, name in enumerate(PROTO_NAMES))
    return (
        'syntax = "proto3";\n'
        "package offsetlake.indep;\n\n"
        'import "google/protobuf/timestamp.proto";\n\n'
        "message Everything {\n"
        "  int32 i32 = 1;\n  sint32 si32 = 2;\n  sfixed32 sf32 = 3;\n"
        "  int64 i64 = 4;\n  sint64 si64 = 5;\n  sfixed64 sf64 = 6;\n"
        "  uint32 u32 = 7;\n  fixed32 fx32 = 8;\n  uint64 u64 = 9;\n  fixed64 fx64 = 10;\n"
        "  float fl = 11;\n  double db = 12;\n  bool b = 13;\n  string s = 14;\n  bytes by = 15;\n"
        "  Color color = 16;\n"
        "  repeated string tags = 17;\n  repeated bytes blobs = 18;\n  repeated sint64 nums = 19;\n"
        "  map<int64, string> by_id = 20;\n  map<string, Inner> by_name = 21;\n  map<string, bytes> bag = 22;\n"
        "  Inner inner = 23;\n"
        "  optional string maybe = 24;\n  optional bytes maybe_bytes = 25;\n  optional int64 maybe_num = 26;\n"
        "  oneof choice {\n    string c_text = 27;\n    int64 c_num = 28;\n    Inner c_inner = 29;\n    bytes c_bytes = 30;\n  }\n"
        "  google.protobuf.Timestamp ts = 31;\n"
        "  repeated Inner inners = 32;\n"
        f"{proto_fields}"
        f"{added}"
        "}\n\n"
        f"message Inner {{\n  string name = 1;\n  int32 n = 2;\n  bool {v.fname('constructor')} = 3;\n"
        f"{added_inner}"
        "}\n\n"
        "enum Color {\n  COLOR_UNSPECIFIED = 0;\n  RED = 1;\n  GREEN = 2;\n}\n"
    )


def json_schema(v, version):
    obj_props = {"x": {"type": "integer"}, v.fname("constructor"): {"type": "string"}, v.fname("__proto__"): {"type": "string"}, v.fname("toString"): {"type": "string"}}
    if version == 2:
        obj_props["y"] = {"type": "integer"}
    props = {
        "i": {"type": "integer"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "s": {"type": "string"},
        "ts": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "color": {"enum": ["RED", "GREEN", "BLUE"]},
        "arr": {"type": "array", "items": {"type": "integer"}},
        "obj": {"type": "object", "properties": obj_props},
        "dict": {"type": "object", "additionalProperties": {"type": "string"}},
        "maybe": {"type": ["string", "null"]},
        "maybe_n": {"type": ["integer", "null"]},
        "_offset": {"type": "integer"},
    }
    for name in PROTO_NAMES:
        props[v.fname(name)] = {"type": "string"}
    if version == 2:
        props["added"] = {"type": ["string", "null"]}
        props["added_arr"] = {"type": "array", "items": {"type": "string"}}
    return json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Everything", "type": "object", "properties": props})


SCHEMAS = {"avro": avro_schema, "protobuf": protobuf_schema, "json-schema": json_schema}


# ---------------------------------------------------------------------------------------
# Independent codecs
# ---------------------------------------------------------------------------------------

_proto_cache = {}


def protobuf_file(schema_text):
    """The FileDescriptorProto protoc makes of the schema text, and a pool with it."""
    if schema_text in _proto_cache:
        return _proto_cache[schema_text]
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "schema.proto"), "w", encoding="utf-8") as handle:
            handle.write(schema_text)
        out = os.path.join(tmp, "out.pb")
        code = protoc.main(["protoc", f"-I{tmp}", f"-I{include}", "--include_imports", f"--descriptor_set_out={out}", os.path.join(tmp, "schema.proto")])
        if code != 0:
            raise RuntimeError(f"protoc could not compile the schema (exit {code})")
        with open(out, "rb") as handle:
            files = descriptor_pb2.FileDescriptorSet.FromString(handle.read()).file
    pool = descriptor_pool.DescriptorPool()
    for file in files:
        pool.Add(file)
    own = files[-1]
    _proto_cache[schema_text] = (pool, own)
    return pool, own


def protobuf_class(schema_text, indexes):
    """The message class that Confluent message indexes name within the schema's file."""
    pool, own = protobuf_file(schema_text)
    messages = list(own.message_type)
    names = []
    for index in indexes:
        if index >= len(messages):
            raise ValueError(f"no message at indexes {indexes}")
        names.append(messages[index].name)
        messages = list(messages[index].nested_type)
    full = ".".join(([own.package] if own.package else []) + names)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full))


def zigzag(n):
    v = n * 2 if n >= 0 else -n * 2 - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def read_zigzag(data, at):
    result = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("truncated varint")
        byte = data[at]
        result |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at
        shift += 7


def wire(schema_id, payload, indexes=None):
    """Confluent wire format: magic byte 0, big-endian schema id, Protobuf message indexes, payload."""
    head = b"\x00" + struct.pack(">i", schema_id)
    if indexes is not None:
        head += b"\x00" if indexes == "short" else zigzag(len(indexes)) + b"".join(zigzag(i) for i in indexes)
    return head + payload


def encode_avro(schema_text, record):
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(schema_text)), record)
    return out.getvalue()


def decode_avro(schema_text, payload):
    source = io.BytesIO(payload)
    value = fastavro.schemaless_reader(source, fastavro.parse_schema(json.loads(schema_text)))
    if source.tell() != len(payload):
        raise ValueError(f"{len(payload) - source.tell()} bytes after the value")
    return value


class Registry:
    def __init__(self, url):
        self.url = url.rstrip("/")
        self.cache = {}

    def register(self, subject, schema_type, text):
        body = {"schema": text} if schema_type == "AVRO" else {"schema": text, "schemaType": schema_type}
        response = requests.post(f"{self.url}/subjects/{subject}/versions", json=body, headers={"content-type": "application/vnd.schemaregistry.v1+json"}, timeout=30)
        if response.status_code != 200:
            raise RuntimeError(f"registering {subject} failed: HTTP {response.status_code} {response.text}")
        return response.json()["id"]

    def schema(self, schema_id):
        """(type, text) of a schema id, or None when the registry does not know it."""
        if schema_id not in self.cache:
            response = requests.get(f"{self.url}/schemas/ids/{schema_id}", timeout=30)
            if response.status_code == 404:
                self.cache[schema_id] = None
            else:
                response.raise_for_status()
                body = response.json()
                self.cache[schema_id] = (body.get("schemaType", "AVRO"), body["schema"])
        return self.cache[schema_id]


def independent_decode(fmt, registry, value):
    """(schema text, decoded value) by the independent decoder, or (None, reason) for a bad record."""
    if len(value) < 5:
        return None, f"{len(value)} bytes are too short"
    if value[0] != 0:
        return None, f"magic byte {value[0]}"
    schema_id = struct.unpack(">i", value[1:5])[0]
    known = registry.schema(schema_id)
    if known is None:
        return None, f"schema id {schema_id} unknown to the registry"
    schema_type, text = known
    if schema_type != SCHEMA_TYPES[fmt]:
        return None, f"schema {schema_id} is {schema_type}"
    try:
        if fmt == "avro":
            return text, decode_avro(text, value[5:])
        if fmt == "protobuf":
            count, at = read_zigzag(value, 5)
            indexes = [0] if count == 0 else []
            for _ in range(count):
                index, at = read_zigzag(value, at)
                indexes.append(index)
            cls = protobuf_class(text, indexes)
            return text, cls.FromString(value[at:])
        return text, json.loads(value[5:].decode("utf-8"))
    except Exception as error:  # noqa: BLE001 - any failure of the independent decoder is a bad record
        return None, f"{type(error).__name__}: {error}"


# ---------------------------------------------------------------------------------------
# Expected columns: the "Type mapping" of docs/formats.md, applied to the independent decoding
# ---------------------------------------------------------------------------------------
# Type specs: "bool", "int32", "int64", "float32", "float64", "binary", "string", "date32",
# ("ts", unit, utc), ("decimal", p, s), ("list", spec), ("map", value spec),
# ("struct", [(name, spec), ...]).

def avro_named_types(node, namespace, names):
    if isinstance(node, list):
        for branch in node:
            avro_named_types(branch, namespace, names)
    elif isinstance(node, dict):
        kind = node.get("type")
        if kind in ("record", "enum", "fixed"):
            ns = node.get("namespace", namespace)
            full = node["name"] if "." in node["name"] else (f"{ns}.{node['name']}" if ns else node["name"])
            names[full] = node
            names.setdefault(node["name"], node)
            namespace = ns
        for field in node.get("fields", []):
            avro_named_types(field["type"], namespace, names)
        for key in ("items", "values"):
            if key in node:
                avro_named_types(node[key], namespace, names)
        if isinstance(kind, (dict, list)):
            avro_named_types(kind, namespace, names)


AVRO_PRIMITIVES = {"boolean": "bool", "int": "int32", "long": "int64", "float": "float32", "double": "float64", "bytes": "binary", "string": "string"}


class AvroMapping:
    def __init__(self, schema_text):
        self.schema = json.loads(schema_text)
        self.names = {}
        avro_named_types(self.schema, self.schema.get("namespace"), self.names)

    def resolve(self, node):
        if isinstance(node, str) and node in self.names:
            return self.names[node]
        if isinstance(node, str):
            return node
        if isinstance(node, dict) and isinstance(node.get("type"), (dict, list)):
            return node["type"]
        if isinstance(node, dict) and node.get("type") in AVRO_PRIMITIVES and "logicalType" not in node:
            return node["type"]
        return node

    def spec(self, node):
        node = self.resolve(node)
        if isinstance(node, str):
            return AVRO_PRIMITIVES[node]
        if isinstance(node, list):
            branches = [b for b in node if self.resolve(b) != "null"]
            if len(branches) == 1:
                return self.spec(branches[0])
            return ("struct", [(self.branch_name(b), self.spec(b)) for b in branches])
        logical = node.get("logicalType")
        kind = node["type"]
        if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros") and kind == "long":
            return ("ts", "ms" if logical.endswith("millis") else "us", not logical.startswith("local-"))
        if logical == "date" and kind == "int":
            return "date32"
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return ("decimal", node["precision"], node.get("scale", 0))
        if kind == "record":
            return ("struct", [(f["name"], self.spec(f["type"])) for f in node["fields"]])
        if kind == "enum":
            return "string"
        if kind == "fixed":
            return "binary"
        if kind == "array":
            return ("list", self.spec(node["items"]))
        if kind == "map":
            return ("map", self.spec(node["values"]))
        return AVRO_PRIMITIVES[kind]

    def branch_name(self, node):
        node = self.resolve(node)
        if isinstance(node, str):
            return node
        if node.get("type") in ("record", "enum", "fixed"):
            return node["name"]
        return node["type"]

    def value(self, node, v):
        node = self.resolve(node)
        if v is None:
            return None
        if isinstance(node, str):
            return v
        if isinstance(node, list):
            branches = [b for b in node if self.resolve(b) != "null"]
            if len(branches) == 1:
                return self.value(branches[0], v)
            chosen = self.branch_of(branches, v)
            return {self.branch_name(b): (self.value(b, v) if b is chosen else None) for b in branches}
        logical = node.get("logicalType")
        kind = node["type"]
        if logical == "uuid":
            return str(v)
        if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros", "date", "decimal"):
            return v  # fastavro gives datetime / date / Decimal, as pyarrow reads those columns
        if kind == "record":
            return {f["name"]: self.value(f["type"], v.get(f["name"])) for f in node["fields"]}
        if kind == "array":
            return [self.value(node["items"], e) for e in v]
        if kind == "map":
            return [{"key": k, "value": self.value(node["values"], e)} for k, e in v.items()]
        return v

    def branch_of(self, branches, v):
        python = {"boolean": bool, "int": int, "long": int, "float": float, "double": float, "string": str, "bytes": bytes}
        matches = [b for b in branches if isinstance(self.resolve(b), str) and isinstance(v, python[self.resolve(b)]) and not (isinstance(v, bool) and self.resolve(b) != "boolean")]
        if len(matches) != 1:
            raise ValueError(f"cannot tell the union branch of {v!r}")
        return matches[0]

    def top(self):
        return [(f["name"], f["type"]) for f in self.schema["fields"]]

    def columns(self):
        return [(column_name(name), self.spec(t)) for name, t in self.top()]

    def row(self, decoded):
        return {column_name(name): self.value(t, decoded.get(name)) for name, t in self.top()}


PB_SCALARS = {
    FieldDescriptor.TYPE_INT32: "int32", FieldDescriptor.TYPE_SINT32: "int32", FieldDescriptor.TYPE_SFIXED32: "int32",
    FieldDescriptor.TYPE_INT64: "int64", FieldDescriptor.TYPE_SINT64: "int64", FieldDescriptor.TYPE_SFIXED64: "int64",
    FieldDescriptor.TYPE_UINT32: "int64", FieldDescriptor.TYPE_FIXED32: "int64",
    FieldDescriptor.TYPE_UINT64: ("decimal", 20, 0), FieldDescriptor.TYPE_FIXED64: ("decimal", 20, 0),
    FieldDescriptor.TYPE_FLOAT: "float32", FieldDescriptor.TYPE_DOUBLE: "float64", FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_STRING: "string", FieldDescriptor.TYPE_BYTES: "binary", FieldDescriptor.TYPE_ENUM: "string",
}


def is_map(field):
    return field.message_type is not None and field.message_type.GetOptions().map_entry


class ProtobufMapping:
    def __init__(self, schema_text):
        self.cls = protobuf_class(schema_text, [0])
        self.descriptor = self.cls.DESCRIPTOR

    def single_spec(self, field):
        if field.message_type is not None:
            return self.message_spec(field.message_type)
        return PB_SCALARS[field.type]

    def message_spec(self, message):
        if message.full_name == "google.protobuf.Timestamp":
            return ("ts", "us", True)
        return ("struct", [(f.name, self.field_spec(f)) for f in message.fields])

    def field_spec(self, field):
        if is_map(field):
            return ("map", self.single_spec(field.message_type.fields_by_name["value"]))
        if field.is_repeated:
            return ("list", self.single_spec(field))
        return self.single_spec(field)

    def single_value(self, field, v):
        if field.message_type is not None:
            return self.message_value(v)
        if field.type == FieldDescriptor.TYPE_ENUM:
            known = field.enum_type.values_by_number.get(v)
            return known.name if known else str(v)
        if field.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
            return Decimal(v)
        return v

    def message_value(self, message):
        if message.DESCRIPTOR.full_name == "google.protobuf.Timestamp":
            return EPOCH + dt.timedelta(microseconds=message.seconds * 1_000_000 + message.nanos // 1000)
        out = {}
        for field in message.DESCRIPTOR.fields:
            v = getattr(message, field.name)
            if is_map(field):
                key_field = field.message_type.fields_by_name["key"]
                value_field = field.message_type.fields_by_name["value"]
                key_text = (lambda k: "true" if k else "false") if key_field.type == FieldDescriptor.TYPE_BOOL else str
                out[field.name] = [{"key": key_text(k), "value": self.single_value(value_field, e)} for k, e in v.items()]
            elif field.is_repeated:
                out[field.name] = [self.single_value(field, e) for e in v]
            elif (field.message_type is not None or field.containing_oneof is not None) and not message.HasField(field.name):
                out[field.name] = None  # unset message, proto3 optional or oneof member
            else:
                out[field.name] = self.single_value(field, v)
        return out

    def columns(self):
        return [(column_name(f.name), self.field_spec(f)) for f in self.descriptor.fields]

    def row(self, decoded):
        return {column_name(k): v for k, v in self.message_value(decoded).items()}


class JsonMapping:
    def __init__(self, schema_text):
        self.root = json.loads(schema_text)

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            target = self.root
            for part in node["$ref"].lstrip("#").split("/"):
                if part:
                    target = target[part]
            node = target
        return node

    def kind(self, node):
        node = self.resolve(node)
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = [o for o in node[key] if o.get("type") != "null"]
                return self.kind(options[0])
        t = node.get("type")
        if isinstance(t, list):
            t = [x for x in t if x != "null"][0]
        if t is None and "enum" in node:
            t = "enum"
        if t is None and "properties" in node:
            t = "object"
        return t, node

    def spec(self, node):
        t, node = self.kind(node)
        if t == "integer":
            return "int64"
        if t == "number":
            return "float64"
        if t == "boolean":
            return "bool"
        if t == "enum":
            return "string"
        if t == "string":
            return {"date-time": ("ts", "us", True), "date": "date32"}.get(node.get("format"), "string")
        if t == "array":
            return ("list", self.spec(node["items"]))
        if t == "object" and node.get("properties"):
            return ("struct", [(k, self.spec(p)) for k, p in node["properties"].items()])
        if t == "object":
            return ("map", self.spec(node["additionalProperties"]))
        raise ValueError(f"no mapping for {node}")

    def value(self, node, v):
        if v is None:
            return None
        t, node = self.kind(node)
        if t == "integer" or t == "boolean" or t == "enum":
            return v
        if t == "number":
            return float(v)
        if t == "string" and node.get("format") == "date-time":
            return dt.datetime.fromisoformat(v).astimezone(UTC)  # microseconds, exactly (docs/formats.md)
        if t == "string" and node.get("format") == "date":
            return dt.date.fromisoformat(v)
        if t == "string":
            return v
        if t == "array":
            return [self.value(node["items"], e) for e in v]
        if t == "object" and node.get("properties"):
            return {k: self.value(p, v.get(k)) for k, p in node["properties"].items()}
        return [{"key": k, "value": self.value(node["additionalProperties"], e)} for k, e in v.items()]

    def columns(self):
        return [(column_name(k), self.spec(p)) for k, p in self.root["properties"].items()]

    def row(self, decoded):
        return {column_name(k): self.value(p, decoded.get(k)) for k, p in self.root["properties"].items()}


MAPPINGS = {"avro": AvroMapping, "protobuf": ProtobufMapping, "json-schema": JsonMapping}


def column_name(field):
    """docs/formats.md: a field named like a Kafka column (`_offset`) becomes `value__offset`."""
    return f"value_{field}" if field in RESERVED else field


# ---------------------------------------------------------------------------------------
# Records to produce
# ---------------------------------------------------------------------------------------

def avro_record(v, i, version, tag):
    record = {
        "b": i % 2 == 0,
        "i": pick([0, -2**31, 2**31 - 1, 42, -7], i),
        "l": pick([0, -2**63, 2**63 - 1, 2**53 + 1, -1], i),
        "f": pick(FLOATS, i),
        "d": pick(DOUBLES, i),
        "by": pick([v.empty_bytes(), b"\x00\xff", bytes(range(256)), tag.encode()], i),
        "fx": bytes([i % 256, 0, 255, (i * 7) % 256]),
        "s": pick(v.strings, i) if i % 7 else tag,
        "e": pick(["RED", "GREEN", "BLUE"], i),
        "arr": [pick(v.strings, i + k) for k in range(i % 4)],
        "mp": {pick(v.map_keys, i + j): j - 3 for j in range(i % 7 + (len(v.map_keys) if i == 3 else 0))},
        "nested": {"n": -i, "t": pick(v.strings, i + 1), v.fname("constructor"): pick(v.strings, i + 2)},
        "opt": None if i % 3 == 0 else pick(v.strings, i + 3),
        "u3": pick([None, 5 + i, f"u{pick(v.strings, i)}"], i),
        "ts_ms": pick([1764506096789, 0, -1, 253402300799999, -62135596800000], i),
        "ts_us": pick([1764506096789123, 0, -1, 253402300799999999, 1], i),
        "lts_ms": pick([1764506096789, 0, -1, 253402300799999, 86400000], i),
        "day": pick([0, -1, 20422, 2932896, -719162], i),
        "dec_b": pick([Decimal("0.00"), Decimal("-0.01"), Decimal("99999999.99"), Decimal("-99999999.99"), Decimal("123.45")], i),
        "dec_f": pick([Decimal("0.0000"), Decimal("-99999999999999.9999"), Decimal("99999999999999.9999"), Decimal("1.2345")], i),
        "uid": str(uuid.UUID(int=(i * 0x1234567890ABCDEF0123456789ABCDEF) % 2**128)),
        "recs": [{"n": k, "t": pick(v.strings, k), v.fname("constructor"): pick(PROTO_NAMES, k)} for k in range(i % 3)],
        "_offset": -i,
    }
    for k, name in enumerate(PROTO_NAMES):
        record[v.fname(name)] = pick(v.strings, i + k)
    if version == 2:
        record["nested"]["added_inner"] = None if i % 2 else -(2**63) + i
        record["added_s"] = None if i % 3 == 1 else pick(v.strings, i + 4)
        record["added_l"] = i * 1_000_000_007
    return record


def protobuf_record(v, cls, i, version, tag):
    m = cls()
    m.i32 = pick([0, -2**31, 2**31 - 1, 1], i)
    m.si32 = pick([-1, -2**31, 2**31 - 1, 0], i)
    m.sf32 = pick([-2**31, 2**31 - 1, -5, 0], i)
    m.i64 = pick([-2**63, 2**63 - 1, -1, 0, 2**53 + 1], i)
    m.si64 = pick([2**63 - 1, -2**63, -1, 0], i)
    m.sf64 = pick([-2**63, 2**63 - 1, 0, -3], i)
    m.u32 = pick([2**32 - 1, 0, 2**31], i)
    m.fx32 = pick([0, 2**32 - 1, 2**31 + 1], i)
    m.u64 = pick([2**64 - 1, 0, 2**63, 2**63 - 1], i)
    m.fx64 = pick([0, 2**64 - 1, 2**63 + 5], i)
    m.fl = pick(FLOATS, i)
    m.db = pick(DOUBLES, i)
    m.b = i % 2 == 1
    m.s = pick(v.strings, i) if i % 7 else tag
    m.by = pick([v.empty_bytes(), b"\x00", b"\xff\xfe", tag.encode()], i)
    m.color = pick([0, 1, 2], i)
    m.tags.extend(pick(v.strings, i + k) for k in range(i % 4))
    m.blobs.extend(pick([v.empty_bytes(), b"\x00", b"abc"], i + k) for k in range(i % 4))
    m.nums.extend([-(2**63), 2**63 - 1, -1, 0][: i % 5])
    for k, key in enumerate([] if "int64-map-keys" in v.without else [-1, -(2**63), 2**63 - 1, 0, 42, -1000][: i % 7]):
        m.by_id[key] = pick(v.strings, i + k)
    for k, key in enumerate(v.map_keys[: i % len(v.map_keys) + 1]):
        inner = m.by_name[key]
        inner.name = pick(v.strings, k)
        inner.n = k
        setattr(inner, v.fname("constructor"), k % 2 == 0)
    for k, key in enumerate(v.map_keys[i % 3: i % 3 + 4]):
        m.bag[key] = pick([v.empty_bytes(), b"\x00", b"x"], k)
    if i % 4 != 3:
        m.inner.name = pick(v.strings, i + 2)
        m.inner.n = -i
        setattr(m.inner, v.fname("constructor"), True)
    if i % 3 != 0:
        m.maybe = pick(v.strings, i)
    if i % 2 == 0:
        m.maybe_bytes = v.empty_bytes()  # present and empty: on the wire as a zero-length field
    if i % 3 == 1:
        m.maybe_num = -(2**63)
    choice = i % 5
    if choice == 0:
        m.c_text = pick(v.strings, i)
    elif choice == 1:
        m.c_num = -(2**63) + i
    elif choice == 2:
        m.c_inner.name = "choice"
    elif choice == 3:
        m.c_bytes = v.empty_bytes()  # an empty bytes member of a oneof is on the wire too
    if i % 4 != 1:
        m.ts.seconds = pick([1764506096, 0, -1, 253402300799, -62135596800], i)
        m.ts.nanos = pick([789123456, 0, 500000000, 999999999, 1000], i)
    for k in range(i % 3):
        inner = m.inners.add()
        inner.name = pick(PROTO_NAMES, k)
        inner.n = k
    for k, name in enumerate(PROTO_NAMES):
        setattr(m, v.fname(name), pick(v.strings, i + k))
    if version == 2:
        m.added_text = pick(v.strings, i + 5)
        if i % 2 == 0:
            m.added_inner.name = "added"
            m.added_inner.added_n = -(2**63)
        m.inner.added_n = 2**63 - 1 - i
        m.added_u64 = 2**64 - 1 - i
        if i % 2 == 1:
            m.added_bytes = v.empty_bytes()
    return m


def json_record(v, i, version, tag):
    record = {
        "i": pick([0, -(2**53 - 1), 2**53 - 1, 42, -1], i),
        "n": pick([0.0, -0.0, 1.5, 1e308, 5e-324, 3, -2], i),
        "b": i % 2 == 0,
        "s": pick(v.strings, i) if i % 7 else tag,
        "ts": pick(["2026-11-30T12:34:56Z", "2026-11-30T12:34:56.789+02:00", "1969-12-31T23:59:59.999Z", "2026-11-30T12:34:56.123456Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999+01:30"], i),
        "day": pick(["2026-11-30", "1969-12-31", "0001-01-01", "9999-12-31", "1970-01-01"], i),
        "color": pick(["RED", "GREEN", "BLUE"], i),
        "arr": [pick([0, -(2**53 - 1), 2**53 - 1, 7], i + k) for k in range(i % 4)],
        "obj": {"x": -i, v.fname("constructor"): pick(v.strings, i), v.fname("__proto__"): pick(v.strings, i + 1), v.fname("toString"): pick(v.strings, i + 2)},
        "dict": {pick(v.map_keys, i + j): pick(v.strings, j) for j in range(i % 6 + (len(v.map_keys) if i == 2 else 0))},
        "maybe": None if i % 3 == 0 else pick(v.strings, i + 1),
        "maybe_n": None if i % 2 else i,
        "_offset": i * 1000,
    }
    for k, name in enumerate(PROTO_NAMES):
        record[v.fname(name)] = pick(v.strings, i + k)
    if i % 4 == 1:
        # Absent properties (allowed: none is required) read as null, whatever JavaScript's objects inherit.
        for name in PROTO_NAMES:
            del record[v.fname(name)]
        del record["obj"][v.fname("constructor")]
        del record["maybe"]
    if version == 2:
        record["obj"]["y"] = i
        record["added"] = None if i % 2 else pick(v.strings, i + 3)
        record["added_arr"] = [pick(v.strings, i + k) for k in range(i % 3)]
    return record


def encode_json(record, i):
    # Half as ASCII with \u escapes, half as raw UTF-8 (the NUL is always escaped: JSON requires it).
    return json.dumps(record, ensure_ascii=i % 2 == 0).encode("utf-8")


# ---------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------

def load_state(work):
    with open(os.path.join(work, "state.json"), encoding="utf-8") as handle:
        return json.load(handle)


def save_state(work, state):
    with open(os.path.join(work, "state.json"), "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=2)


def prepare(args):
    suffix = uuid.uuid4().hex[:8]
    topics = {variant: {fmt: f"regind-{fmt}-{variant}-{suffix}" for fmt in FORMATS} for variant in VARIANT_NAMES}
    admin = AdminClient({"bootstrap.servers": args.brokers})
    names = [t for by_format in topics.values() for t in by_format.values()]
    futures = admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in names], operation_timeout=30)
    for future in futures.values():
        future.result(30)
    save_state(args.work, {"brokers": args.brokers, "registry": args.registry, "topics": topics})
    print(json.dumps(topics))


def produce(args):
    state = load_state(args.work)
    registry = Registry(state["registry"])
    topics = state["topics"]
    now = int(dt.datetime.now(UTC).timestamp() * 1000)
    hour = now // 3_600_000 * 3_600_000
    # One committed transaction of version-1 records, one aborted, then version 2 and a second
    # committed one; every transaction spans all six topics.
    producer = Producer({
        "bootstrap.servers": state["brokers"],
        "transactional.id": f"regind-{uuid.uuid4().hex[:8]}",
        "enable.idempotence": True,
        "linger.ms": 5,
    })
    producer.init_transactions(30)
    targets = [(variant, fmt) for variant in VARIANT_NAMES for fmt in FORMATS]
    ids = {variant: {fmt: {} for fmt in FORMATS} for variant in VARIANT_NAMES}
    sent = {variant: {fmt: {"good": 0, "bad": 0, "tombstones": 0, "aborted": 0} for fmt in FORMATS} for variant in VARIANT_NAMES}
    delivery_errors = []

    def on_delivery(error, _message):
        if error is not None:
            delivery_errors.append(str(error))

    def send(variant, fmt, i, value, kind, late=False):
        v = VARIANTS[variant]
        headers = [] if i % 5 == 4 else v.headers if i % 5 == 0 else v.headers[: 3 + i % len(v.headers)]
        key = None if i % 6 == 5 else f"key-{i}-\u00fc\u0000".encode()
        timestamp = hour - 60_000 + i if late else hour + (i % 40) * 1000
        producer.produce(topics[variant][fmt], value=value, key=key, headers=headers or None, partition=i % PARTITIONS, timestamp=timestamp, on_delivery=on_delivery)
        sent[variant][fmt][kind] += 1

    def good_value(variant, fmt, version, i, tag):
        v = VARIANTS[variant]
        schema_id = ids[variant][fmt][version]
        text = SCHEMAS[fmt](v, version)
        if fmt == "avro":
            return wire(schema_id, encode_avro(text, avro_record(v, i, version, tag)))
        if fmt == "protobuf":
            message = protobuf_record(v, protobuf_class(text, [0]), i, version, tag)
            # [0] written both ways the format allows: the short single 0, and count 1 + index 0.
            return wire(schema_id, message.SerializeToString(), "short" if i % 2 == 0 else [0])
        return wire(schema_id, encode_json(json_record(v, i, version, tag), i))

    def bad_values(variant, fmt):
        good = good_value(variant, fmt, 1, 0, "bad")  # protobuf: the short message index, so the payload starts at byte 6
        payload_start = 6 if fmt == "protobuf" else 5
        # Truncated: the first cut from the middle of the payload on that the independent decoder rejects.
        middle = payload_start + (len(good) - payload_start) // 2
        cuts = [n for n in range(middle, len(good)) if independent_decode(fmt, registry, good[:n])[0] is None]
        truncated = good[: cuts[0] if cuts else middle]
        values = [b"\x01" + good[1:], good[:1] + struct.pack(">i", UNKNOWN_SCHEMA_ID) + good[5:], truncated, b"\x00\x00"]
        for value in values:
            text, _ = independent_decode(fmt, registry, value)
            if text is not None:
                raise RuntimeError(f"{fmt}: the bad record {value[:12]!r}… decodes with the independent decoder")
        return values

    def register(version):
        for variant, fmt in targets:
            ids[variant][fmt][version] = registry.register(f"{topics[variant][fmt]}-value", SCHEMA_TYPES[fmt], SCHEMAS[fmt](VARIANTS[variant], version))

    register(1)
    producer.begin_transaction()
    for variant, fmt in targets:
        for i in range(12):
            send(variant, fmt, i, good_value(variant, fmt, 1, i, "committed-1"), "good")
        for j, value in enumerate(bad_values(variant, fmt)):
            send(variant, fmt, 100 + j, value, "bad")
        # A late record in partition 1, an hour bucket earlier: a second file for that range.
        send(variant, fmt, 7, good_value(variant, fmt, 1, 7, "late"), "good", late=True)
    producer.commit_transaction(30)

    producer.begin_transaction()
    for variant, fmt in targets:
        for i in range(5):
            send(variant, fmt, 200 + i, good_value(variant, fmt, 1, i, "ABORTED"), "aborted")
    # Delivered first: abort_transaction() right after produce() can fail with INVALID_TXN_STATE
    # (librdkafka issue 4849, a race with adding the partitions to the transaction).
    producer.flush(30)
    producer.abort_transaction(30)

    # Version 2 mid-stream: fields added at the top level and inside a nested record/message/object.
    register(2)
    producer.begin_transaction()
    for variant, fmt in targets:
        for i in range(12, 26):
            send(variant, fmt, i, good_value(variant, fmt, 2, i, "committed-2"), "good")
        send(variant, fmt, 300, None, "tombstones")
        send(variant, fmt, 301, good_value(variant, fmt, 1, 301, "v1-after-v2"), "good")
    producer.commit_transaction(30)
    producer.flush(30)
    if delivery_errors:
        raise RuntimeError(f"delivery failed: {delivery_errors[:5]}")
    state["schema_ids"] = ids
    state["sent"] = sent
    save_state(args.work, state)
    print(json.dumps({"schema_ids": ids, "sent": sent}))


def committed_records(brokers, topic):
    """Every committed record of the topic, from the beginning, by a read_committed consumer."""
    consumer = Consumer({
        "bootstrap.servers": brokers,
        "group.id": f"regind-verify-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    })
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        records = {}
        at_end = set()
        deadline = dt.datetime.now() + dt.timedelta(seconds=30)
        while len(at_end) < len(partitions):
            if dt.datetime.now() > deadline:
                raise RuntimeError(f"consumer did not reach the end of {topic}: partitions at end {sorted(at_end)}")
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                    continue
                raise RuntimeError(f"consumer error: {message.error()}")
            at_end.discard(message.partition())
            records[(message.partition(), message.offset())] = message
        return records
    finally:
        consumer.close()


def millis_in_micros(spec, local):
    """A column spec as encoder v5 stores it (every UTC millisecond timestamp in micros) or,
    with `local`, as v6 does (local ones in micros too: Iceberg's `timestamp`)."""
    if spec == ("ts", "ms", True) or (local and spec == ("ts", "ms", False)):
        return ("ts", "us", spec[2])
    if isinstance(spec, tuple) and spec[0] in ("list", "map"):
        return (spec[0],) + tuple(millis_in_micros(s, local) for s in spec[1:])
    if isinstance(spec, tuple) and spec[0] == "struct":
        return ("struct", [(n, millis_in_micros(s, local)) for n, s in spec[1]])
    return spec


def type_problem(spec, t, path):
    """Why the pyarrow type `t` is not docs/formats.md's mapping `spec`, or None."""
    def bad(expected):
        return f"{path}: expected {expected}, the file has {t}"
    if spec == "bool":
        return None if pa.types.is_boolean(t) else bad("boolean")
    if spec in ("int32", "int64"):
        return None if t == getattr(pa, spec)() else bad(spec)
    if spec == "float32":
        return None if t == pa.float32() else bad("float")
    if spec == "float64":
        return None if t == pa.float64() else bad("double")
    if spec == "binary":
        return None if pa.types.is_binary(t) or pa.types.is_large_binary(t) else bad("binary")
    if spec == "string":
        return None if pa.types.is_string(t) or pa.types.is_large_string(t) else bad("string")
    if spec == "date32":
        return None if pa.types.is_date32(t) else bad("date")
    kind = spec[0]
    if kind == "ts":
        _, unit, utc = spec
        ok = pa.types.is_timestamp(t) and t.unit == unit and (t.tz is not None) == utc and (not utc or t.tz in ("UTC", "+00:00", "Etc/UTC"))
        return None if ok else bad(f"timestamp[{unit}{', UTC' if utc else ', not adjusted to UTC'}]")
    if kind == "decimal":
        return None if pa.types.is_decimal(t) and t.precision == spec[1] and t.scale == spec[2] else bad(f"decimal({spec[1]}, {spec[2]})")
    if kind in ("list", "map"):
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            return bad("a list" if kind == "list" else "a list of struct {key: string, value}")
        if kind == "list":
            return type_problem(spec[1], t.value_type, f"{path}[]")
        entry = t.value_type
        if not pa.types.is_struct(entry) or [entry.field(k).name for k in range(entry.num_fields)] != ["key", "value"]:
            return bad("a list of struct {key: string, value}")
        return type_problem("string", entry.field(0).type, f"{path}[].key") or type_problem(spec[1], entry.field(1).type, f"{path}[].value")
    if kind == "struct":
        if not pa.types.is_struct(t):
            return bad("a struct")
        names = [t.field(k).name for k in range(t.num_fields)]
        wanted = [name for name, _ in spec[1]]
        if names != wanted:
            return bad(f"struct fields {wanted}")
        for k, (name, sub) in enumerate(spec[1]):
            problem = type_problem(sub, t.field(k).type, f"{path}.{name}")
            if problem:
                return problem
        return None
    raise ValueError(spec)


def normalize(spec, v):
    """Both sides in one form: map entries sorted by key (maps have no order), struct fields filled."""
    if v is None or isinstance(spec, str):
        return v
    kind = spec[0]
    if kind == "struct" and not isinstance(v, dict) or kind in ("list", "map") and not isinstance(v, list):
        return v  # the wrong shape: left as it is for the diff
    if kind == "struct":
        return {name: normalize(sub, v.get(name)) for name, sub in spec[1]}
    if kind == "list":
        return [normalize(spec[1], e) for e in v]
    if kind == "map":
        return sorted(({"key": e.get("key"), "value": normalize(spec[1], e.get("value"))} for e in v), key=lambda e: (e["key"] is None, e["key"] or ""))
    return v


def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        return (a.tzinfo is None) == (b.tzinfo is None) and a == b
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b
    return type(a) is type(b) and a == b


def first_difference(a, b, path=""):
    """The path and both values where two normalized values first differ."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for k in a:
            if not same(a[k], b[k]):
                return first_difference(a[k], b[k], f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b)):
            if not same(x, y):
                return first_difference(x, y, f"{path}[{k}]")
    return path, a, b


def short(v, limit=160):
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "…"


def verify(args):
    fmt, variant = args.format, args.variant
    state = load_state(args.work)
    registry = Registry(state["registry"])
    topic = state["topics"][variant][fmt]
    with open(os.path.join(args.work, f"{variant}-{fmt}.files.json"), encoding="utf-8") as handle:
        files = json.load(handle)
    failures = defaultdict(list)  # check → messages

    # The independent side: committed records, decoded by third-party decoders.
    committed = committed_records(state["brokers"], topic)
    expected_rows = {}
    mappings = {}
    bad_seen = 0
    tombstones = 0
    for (partition, offset), message in committed.items():
        value = message.value()
        row = {
            "_partition": partition,
            "_offset": offset,
            "_timestamp": EPOCH + dt.timedelta(milliseconds=message.timestamp()[1]),
            "_key": message.key(),
            "_headers": [{"key": k, "value": v} for k, v in (message.headers() or [])],
        }
        decoded_columns = None
        if value is None:
            tombstones += 1
            row["_value"], row["_error"] = None, None
        else:
            text, decoded = independent_decode(fmt, registry, value)
            if text is None:
                bad_seen += 1
                row["_value"], row["_error"] = value, ("an error", decoded)
            else:
                row["_value"], row["_error"] = None, None
                if text not in mappings:
                    mappings[text] = MAPPINGS[fmt](text)
                decoded_columns = mappings[text].row(decoded)
        row["decoded"] = decoded_columns
        expected_rows[(partition, offset)] = row
    sent = state["sent"][variant][fmt]
    if bad_seen != sent["bad"] or tombstones != sent["tombstones"] or len(committed) != sent["good"] + sent["bad"] + sent["tombstones"]:
        failures["test itself"].append(f"the consumer read {len(committed)} committed records ({bad_seen} bad, {tombstones} tombstones); the producer committed {sent}")

    # Column specs for each schema version, from docs/formats.md's type mapping over the registered schemas.
    specs = {}
    for version in ("1", "2"):
        schema_id = state["schema_ids"][variant][fmt][version]
        _, text = registry.schema(schema_id)
        specs[version] = MAPPINGS[fmt](text).columns()
    kafka_specs = [("_partition", "int32"), ("_offset", "int64"), ("_timestamp", ("ts", "ms", True)), ("_key", "binary"),
                   ("_headers", ("list", ("struct", [("key", "string"), ("value", "binary")]))), ("_value", "binary"), ("_error", "string")]

    # Our side: every rebuilt file, read by pyarrow.
    seen = Counter()
    actual_rows = {}
    unreadable = []
    for file in files:
        label = f"file {file['dataFileId']} (partition {file['partition']}, offsets [{file['startOffset']}, {file['endOffset']}))"
        if file.get("rebuildError"):
            failures["rebuild"].append(f"{label}: `offsetlake rebuild` failed: {file['rebuildError'].strip()}")
            unreadable.append(file)
            continue
        with open(file["path"], "rb") as handle:
            data = handle.read()
        if len(data) != int(file["fileSizeBytes"]) or hashlib.sha256(data).hexdigest() != file["sha256"]:
            failures["rebuild"].append(f"{label}: the rebuilt file has {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}; `files` lists {file['fileSizeBytes']} bytes, sha256 {file['sha256']}")
        try:
            table = pq.read_table(file["path"])
        except Exception as error:  # noqa: BLE001
            failures["pyarrow reads the file"].append(f"{label}: {type(error).__name__}: {error}")
            unreadable.append(file)
            continue
        if table.num_rows != int(file["recordCount"]):
            failures["pyarrow reads the file"].append(f"{label}: pyarrow reads {table.num_rows} rows, the catalog says {file['recordCount']}")
        names = table.schema.names
        candidates = [v for v in ("2", "1") if names == [n for n, _ in kafka_specs] + [n for n, _ in specs[v]]]
        if not candidates:
            failures["columns"].append(f"{label}: columns {names}\n    expected {[n for n, _ in kafka_specs] + [n for n, _ in specs['2']]} (schema version 2)\n    or       {[n for n, _ in kafka_specs] + [n for n, _ in specs['1']]} (version 1 only)")
            file_specs = {n: s for n, s in kafka_specs + specs["2"]}
        else:
            file_specs = dict(kafka_specs + specs[candidates[0]])
        # docs/formats.md, "Encoder v5" and "Encoder v6": from v5 on a UTC millisecond timestamp
        # is stored in micros, from v6 on a local one too
        encoder = (pq.read_metadata(file["path"]).metadata or {}).get(b"offsetlake.encoder", b"").decode()
        version = int(encoder.split("@")[1].split("/")[0]) if encoder.startswith("offsetlake-parquet@") else 0
        if version >= 5:
            file_specs = {n: millis_in_micros(s, version >= 6) for n, s in file_specs.items()}
        for name in names:
            if name in file_specs:
                problem = type_problem(file_specs[name], table.schema.field(name).type, name)
                if problem:
                    failures["column types"].append(f"{label}: {problem}")
        # docs/formats.md: "Each file's statistics count them (`_error` non-null)".
        error_stats = next((c for c in file.get("columns", []) if c["columnName"] == "_error"), None)
        file_keys = list(zip(table.column("_partition").to_pylist(), table.column("_offset").to_pylist())) if "_offset" in names else []
        expected_errors = sum(1 for key in file_keys if key in expected_rows and expected_rows[key]["_error"] is not None)
        if error_stats is None:
            failures["error rows"].append(f"{label}: the catalog has no statistics for _error")
        elif int(file["recordCount"]) - int(error_stats["nullCount"]) != expected_errors:
            failures["error rows"].append(f"{label}: the catalog's _error statistics count {int(file['recordCount']) - int(error_stats['nullCount'])} error rows, the independent decoders find {expected_errors} bad records in the file")
        for row in table.to_pylist():
            key = (row["_partition"], row["_offset"])
            seen[key] += 1
            actual_rows[key] = (row, file_specs, label)
            if row["_partition"] != file["partition"] or not int(file["startOffset"]) <= row["_offset"] < int(file["endOffset"]):
                failures["coverage"].append(f"{label}: row {key} lies outside the file's partition/offsets")
            bucket = dt.datetime.fromisoformat(file["bucket"].replace("Z", "+00:00"))
            if isinstance(row["_timestamp"], dt.datetime) and row["_timestamp"].replace(minute=0, second=0, microsecond=0) != bucket:
                failures["coverage"].append(f"{label}: row {key} has _timestamp {row['_timestamp']}, outside the file's hour bucket {file['bucket']}")

    # Every committed record exactly once; nothing else (aborted records, control records).
    failed_ranges = [(f["partition"], int(f["startOffset"]), int(f["endOffset"])) for f in unreadable]
    covered = [(f["partition"], int(f["startOffset"]), int(f["endOffset"])) for f in files]
    missing = defaultdict(list)  # (partition, why) → offsets
    for key in sorted(set(expected_rows) - set(seen)):
        where = "in a file that could not be rebuilt or read" if any(p == key[0] and s <= key[1] < e for p, s, e in failed_ranges) else (
            "not covered by any catalog file (indexing stopped before them?)" if not any(p == key[0] and s <= key[1] < e for p, s, e in covered) else "in a file's offsets but not among its rows")
        missing[(key[0], where)].append(key[1])
    for (partition, where), offsets in sorted(missing.items()):
        failures["coverage"].append(f"partition {partition}: {len(offsets)} committed records missing, {where}: offsets {offsets}")
    for key, count in sorted(seen.items()):
        if key not in expected_rows:
            failures["coverage"].append(f"row {key} is not a committed record (aborted or control?)")
        elif count > 1:
            failures["coverage"].append(f"committed record {key} appears in {count} rows")

    # Values, column by column.
    value_diffs = defaultdict(list)
    for key in sorted(set(expected_rows) & set(actual_rows)):
        expected = expected_rows[key]
        actual, file_specs, label = actual_rows[key]
        for name in ("_partition", "_offset", "_timestamp", "_key", "_headers", "_value"):
            if name in actual and not same(expected[name], actual[name]):
                value_diffs[name].append((key, expected[name], actual[name], ""))
        if expected["_error"] is None and actual.get("_error") is not None:
            value_diffs["_error"].append((key, None, actual.get("_error"), " (decodable by the independent decoder)"))
        if expected["_error"] is not None:
            if actual.get("_error") is None:
                value_diffs["_error"].append((key, f"an error ({expected['_error'][1]})", None, ""))
            elif not actual["_error"].startswith("value: "):
                value_diffs["_error"].append((key, "text starting 'value: '", actual["_error"], ""))
        decoded = expected["decoded"] or {}
        for name, spec in file_specs.items():
            if name in KAFKA_COLUMNS or name not in actual:
                continue
            want = normalize(spec, decoded.get(name))
            got = normalize(spec, actual[name])
            if not same(want, got):
                path, a, b = first_difference(want, got)
                value_diffs[name].append((key, a, b, path))
        if expected["decoded"] is not None:
            for name, value in decoded.items():
                if name not in actual and value is not None:
                    value_diffs[name].append((key, value, "<no such column in the file>", ""))
    for name, diffs in value_diffs.items():
        lines = [f"column {name}: {len(diffs)} of {len(actual_rows)} rows differ"]
        for key, want, got, path in diffs[:4]:
            lines.append(f"    row {key}{' at ' + name + path if path else ''}: expected {short(want)}, file has {short(got)}")
        failures["values" if name not in ("_error", "_value") else "error rows"].append("\n".join(lines))

    checks = ["test itself", "rebuild", "pyarrow reads the file", "coverage", "columns", "column types", "values", "error rows"]
    log(f"== {fmt} ({variant}: topic {topic}): {len(committed)} committed records ({bad_seen} bad, {tombstones} tombstones), {len(files)} catalog files, {len(actual_rows)} rows read by pyarrow")
    for check in checks:
        problems = failures.get(check, [])
        unchecked = not actual_rows and check in ("columns", "column types", "values", "error rows")
        log(f"-- {check}: {'not checked: no rows were read' if unchecked and not problems else 'ok' if not problems else f'{len(problems)} problem(s)'}")
        for problem in problems[:40]:
            log(f"  {problem}")
        if len(problems) > 40:
            log(f"  … and {len(problems) - 40} more")
    print(json.dumps({"format": fmt, "variant": variant, "committed": len(committed), "rows": len(actual_rows), "failed": {k: len(v) for k, v in failures.items() if v}}))
    return 1 if any(failures.values()) else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["prepare", "produce", "verify"])
    parser.add_argument("--work", required=True)
    parser.add_argument("--brokers")
    parser.add_argument("--registry")
    parser.add_argument("--format", choices=FORMATS)
    parser.add_argument("--variant", choices=VARIANT_NAMES, default="full")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args)
    elif args.command == "produce":
        produce(args)
    else:
        sys.exit(verify(args))


if __name__ == "__main__":
    main()
