"""Committed records read by a Kafka client we did not write (confluent-kafka, librdkafka)
with isolation.level=read_committed: what tests expect our files to hold. With
"isolation": "read_uncommitted", every data record instead, those of aborted and open
transactions too: what an event source mapping with a consumer's default isolation
puts in its events.

stdin:  JSON {"brokers": "host:port", "ranges": [{"topic", "partition", "start", "end"}, ...], "offsetsOnly": bool, "isolation": "read_committed" | "read_uncommitted", "timeoutSeconds": 60}
stdout: JSON, one list per range: [{"offset", "timestamp", "key", "value", "headers"}], bytes as hex
        (with offsetsOnly: one list of offsets per range)
"""
import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition


def read_range(consumer, topic, partition, start, end, deadline, offsets_only):
    out = []
    if end <= start:
        return out
    tp = TopicPartition(topic, partition, start)
    consumer.assign([tp])
    while True:
        for message in consumer.consume(10000, timeout=0.2):
            if message.error():
                # an error past the range (a batch librdkafka cannot read, fetched ahead) is not this range's
                if message.topic() == topic and message.partition() == partition and message.offset() is not None and message.offset() >= end:
                    continue
                raise RuntimeError(f"{topic}-{partition}: {message.error()}")
            if message.topic() != topic or message.partition() != partition or message.offset() >= end:
                continue
            if offsets_only:
                out.append(message.offset())
                continue
            out.append({
                "offset": message.offset(),
                "timestamp": message.timestamp()[1],
                "key": None if message.key() is None else message.key().hex(),
                "value": None if message.value() is None else message.value().hex(),
                "headers": [[k, None if v is None else v.hex()] for k, v in (message.headers() or [])],
            })
        position = consumer.position([TopicPartition(topic, partition)])[0].offset
        last = (out[-1] if offsets_only else out[-1]["offset"]) if out else -1
        if position >= end or last >= end - 1:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic}-{partition}: read_committed stopped at {position} before {end}")
    consumer.unassign()
    return out


def main():
    request = json.load(sys.stdin)
    consumer = Consumer({
        "bootstrap.servers": request["brokers"],
        "group.id": "offsetlake-test-independent-reader",
        "isolation.level": request.get("isolation", "read_committed"),
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "fetch.max.bytes": 64 * 1024 * 1024,
        "max.partition.fetch.bytes": 16 * 1024 * 1024,
    })
    try:
        deadline = time.monotonic() + float(request.get("timeoutSeconds", 60))
        offsets_only = bool(request.get("offsetsOnly"))
        answer = [read_range(consumer, r["topic"], int(r["partition"]), int(r["start"]), int(r["end"]), deadline, offsets_only) for r in request["ranges"]]
    finally:
        consumer.close()
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
