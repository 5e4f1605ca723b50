"""The peers benchmark's workload, written by an independent producer (confluent-kafka, not
offsetlake's code): a clickstream of about 575-byte JSON values (strings, numbers, a
nested object, timestamps as epoch milliseconds and as RFC 3339 text), one header, keys
`u0000000`..`u0099999`, Kafka timestamps spread evenly over the last 24 hours and jittered
by up to ±2 s (so records of two hours mix at each boundary), round-robin over the
partitions. `--format avro` writes the same records in Avro, in the Confluent wire format
(magic byte 0, the 4-byte schema id the registry gave when this script registered the
schema under TOPIC-value).

usage: produce.py --brokers H:P --topic T --format json|avro --records N --partitions P
                  [--registry URL] [--seed S] [--now-ms MS]
prints one JSON line: records, key/value/header bytes, schema id, first/last timestamps
"""
import argparse
import io
import json
import random
import struct
import sys
import time
import uuid

from confluent_kafka import Producer

EVENT_TYPES = ["page_view", "click", "add_to_cart", "remove_from_cart", "checkout", "search", "login", "logout"]
COUNTRIES = ["US", "DE", "FR", "GB", "JP", "BR", "IN", "CA", "AU", "NL", "SE", "ES"]
BROWSERS = ["Firefox", "Chrome", "Safari", "Edge", "Opera"]
OSES = ["Linux", "Windows", "macOS", "Android", "iOS"]
PAGES = [f"/catalog/category-{c:02d}/product-{p:04d}" for c in range(20) for p in range(25)]
AGENTS = [
    f"Mozilla/5.0 ({os_}; rv:{v}.0) {b}/{v}.0.{v * 37 % 9000}.{v % 97}"
    for os_ in OSES for b in BROWSERS for v in range(100, 140, 8)
]

AVRO_SCHEMA = {
    "type": "record",
    "name": "Click",
    "namespace": "bench.peers",
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "user_id", "type": "string"},
        {"name": "session_id", "type": "string"},
        {"name": "event_type", "type": "string"},
        {"name": "page", "type": "string"},
        {"name": "referrer", "type": "string"},
        {"name": "user_agent", "type": "string"},
        {"name": "ip", "type": "string"},
        {"name": "country", "type": "string"},
        {"name": "duration_ms", "type": "long"},
        {"name": "price", "type": "double"},
        {"name": "quantity", "type": "long"},
        {"name": "ts", "type": "long"},
        {"name": "event_time", "type": "string"},
        {"name": "device", "type": {"type": "record", "name": "Device", "fields": [
            {"name": "os", "type": "string"},
            {"name": "browser", "type": "string"},
            {"name": "width", "type": "long"},
            {"name": "height", "type": "long"},
            {"name": "mobile", "type": "boolean"},
        ]}},
        {"name": "campaign", "type": "string"},
    ],
}


def rfc3339(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def record(rng, ts):
    user = rng.randrange(100_000)
    os_ = rng.choice(OSES)
    return {
        "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "user_id": f"u{user:07d}",
        "session_id": f"{rng.getrandbits(128):032x}",
        "event_type": rng.choice(EVENT_TYPES),
        "page": rng.choice(PAGES),
        "referrer": f"https://ref-{rng.randrange(500):03d}.example.com/s?q=item-{rng.randrange(10000):05d}",
        "user_agent": rng.choice(AGENTS),
        "ip": f"{rng.randrange(1, 224)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
        "country": rng.choice(COUNTRIES),
        "duration_ms": rng.randrange(0, 120_000),
        "price": round(rng.random() * 500, 2),
        "quantity": rng.randrange(1, 10),
        "ts": ts,
        "event_time": rfc3339(ts),
        "device": {
            "os": os_,
            "browser": rng.choice(BROWSERS),
            "width": rng.choice([360, 390, 414, 768, 1280, 1440, 1920, 2560]),
            "height": rng.choice([640, 844, 896, 1024, 720, 900, 1080, 1440]),
            "mobile": os_ in ("Android", "iOS"),
        },
        "campaign": f"cmp-{rng.randrange(40):02d}-{rng.choice(['spring', 'summer', 'autumn', 'winter'])}-{rng.choice(['email', 'social', 'search', 'display'])}",
    }


def register(registry, subject):
    import requests

    response = requests.post(
        f"{registry}/subjects/{subject}/versions",
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        data=json.dumps({"schemaType": "AVRO", "schema": json.dumps(AVRO_SCHEMA)}),
        timeout=30,
    )
    response.raise_for_status()
    return response.json()["id"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--brokers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--format", choices=["json", "avro"], required=True)
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--registry")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--now-ms", type=int, default=None)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    now = args.now_ms or int(time.time() * 1000)
    # 2 s of room so no jittered timestamp is ahead of the broker's clock
    start, span = now - 24 * 3600 * 1000, 24 * 3600 * 1000 - 4000
    encode = None
    schema_id = None
    if args.format == "avro":
        import fastavro

        parsed = fastavro.parse_schema(AVRO_SCHEMA)
        schema_id = register(args.registry, f"{args.topic}-value")
        prefix = b"\x00" + struct.pack(">I", schema_id)

        def encode(value):
            out = io.BytesIO()
            out.write(prefix)
            fastavro.schemaless_writer(out, parsed, value)
            return out.getvalue()
    else:
        def encode(value):
            return json.dumps(value, separators=(",", ":")).encode()

    producer = Producer({
        "bootstrap.servers": args.brokers,
        "linger.ms": 20,
        "batch.size": 1_000_000,
        "queue.buffering.max.kbytes": 262144,
        "compression.type": "none",
        "acks": "all",
        "enable.idempotence": True,
    })
    failures = []

    def delivered(error, _message):
        if error is not None:
            failures.append(str(error))

    key_bytes = value_bytes = header_bytes = 0
    first = last = None
    for i in range(args.records):
        ts = start + (span * i) // max(1, args.records - 1) + rng.randint(-2000, 2000)
        ts = min(ts, now - 1)
        value = record(rng, ts)
        key = value["user_id"].encode()
        payload = encode(value)
        source = rng.choice([b"web", b"ios", b"android"])
        key_bytes += len(key)
        value_bytes += len(payload)
        header_bytes += len("source") + len(source)
        first = ts if first is None else min(first, ts)
        last = ts if last is None else max(last, ts)
        while True:
            try:
                producer.produce(args.topic, value=payload, key=key, partition=i % args.partitions, timestamp=ts, headers=[("source", source)], on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    if remaining or failures:
        print(json.dumps({"error": f"{remaining} undelivered, {len(failures)} failed: {failures[:3]}"}))
        sys.exit(1)
    print(json.dumps({
        "records": args.records,
        "keyBytes": key_bytes,
        "valueBytes": value_bytes,
        "headerBytes": header_bytes,
        "schemaId": schema_id,
        "firstTimestamp": first,
        "lastTimestamp": last,
    }))


if __name__ == "__main__":
    main()
