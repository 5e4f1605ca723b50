"""Deletes the benchmark's topics when it is done (confluent-kafka's admin client).

usage: delete_topics.py --brokers H:P TOPIC [TOPIC ...]
"""
import argparse

from confluent_kafka.admin import AdminClient


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--brokers", required=True)
    parser.add_argument("topics", nargs="+")
    args = parser.parse_args()
    admin = AdminClient({"bootstrap.servers": args.brokers})
    for topic, future in admin.delete_topics(args.topics, operation_timeout=30).items():
        try:
            future.result()
        except Exception as error:  # a topic that is not there is not a failure here
            print(f"{topic}: {error}")


if __name__ == "__main__":
    main()
