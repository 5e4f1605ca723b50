"""Records written by a Kafka producer we did not write (confluent-kafka, librdkafka), for
tests of our Fetch and record-batch decoding: the broker stores its batches as they come
(the topic's compression.type is `producer`), so a read returns librdkafka's own bytes.

stdin:  JSON {"brokers": "host:port", "topic": str, "partition": int, "compression": "none" | "gzip" | "snappy" | "lz4" | "zstd",
              "transactions": [{"abort": bool, "records": [record]}]  (transactional producer, in order)
              or "records": [record]  (idempotent producer),
              "lingerMs": int, "batchRecords": int}
        record: {"key": hex | null, "value": hex | null, "headers": [[name, hex | null]], "timestamp": ms | null}
stdout: JSON {"delivered": n, "partitions": {"<partition>": {"count": n, "first": offset, "last": offset}}}
        (from the producer's own delivery reports)
"""
import json
import sys

from confluent_kafka import Producer


def main():
    request = json.load(sys.stdin)
    config = {
        "bootstrap.servers": request["brokers"],
        "compression.type": request.get("compression", "none"),
        "linger.ms": int(request.get("lingerMs", 50)),
        "batch.num.messages": int(request.get("batchRecords", 10000)),
        "enable.idempotence": True,
    }
    transactions = request.get("transactions")
    if transactions is not None:
        config["transactional.id"] = f"offsetlake-test-{request['topic']}"
    producer = Producer(config)
    delivered = 0
    errors = []
    partitions = {}

    def on_delivery(error, message):
        nonlocal delivered
        if error is not None:
            errors.append(str(error))
        else:
            delivered += 1
            seen = partitions.setdefault(str(message.partition()), {"count": 0, "first": message.offset(), "last": message.offset()})
            seen["count"] += 1
            seen["first"] = min(seen["first"], message.offset())
            seen["last"] = max(seen["last"], message.offset())

    def send(record):
        unhex = lambda h: None if h is None else bytes.fromhex(h)
        kwargs = {"key": unhex(record.get("key")), "value": unhex(record.get("value")), "partition": int(request.get("partition", 0)), "on_delivery": on_delivery}
        headers = record.get("headers")
        if headers:
            kwargs["headers"] = [(name, unhex(value)) for name, value in headers]
        if record.get("timestamp") is not None:
            kwargs["timestamp"] = int(record["timestamp"])
        producer.produce(request["topic"], **kwargs)

    if transactions is None:
        for record in request["records"]:
            send(record)
        producer.flush(60)
    else:
        producer.init_transactions(30)
        for transaction in transactions:
            producer.begin_transaction()
            for record in transaction["records"]:
                send(record)
            producer.flush(60)
            if transaction.get("abort"):
                producer.abort_transaction(30)
            else:
                producer.commit_transaction(30)
    if errors:
        raise RuntimeError("; ".join(errors[:5]))
    json.dump({"delivered": delivered, "partitions": partitions}, sys.stdout)


if __name__ == "__main__":
    main()
