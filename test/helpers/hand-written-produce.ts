/**
 * Record batches of a shape no standard producer makes on request (test/helpers/record-batch-bytes.ts
 * writes them), sent to a real broker by a plain Produce v7 request (zstd needs v7) from
 * Python, between records from confluent-kafka: three JSON records `{"n":"a0"}`..`a2` to
 * partition 0 before the batches and three `b0`..`b2` after. The broker validates each batch
 * (it decompresses it) before it takes it, and answers with an error code per batch.
 */
import { execFile } from 'node:child_process';

const producer = `
import json, socket, struct, sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
brokers, topic, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
p = Producer({"bootstrap.servers": brokers, "enable.idempotence": True, "linger.ms": 5})
errors = []
def sent(error, message):
    if error is not None: errors.append(str(error))
def records(prefix):
    for i in range(3): p.produce(topic, value=('{"n":"%s%d"}' % (prefix, i)).encode(), partition=0, on_delivery=sent)
    p.flush(60)
records("a")
metadata = AdminClient({"bootstrap.servers": brokers}).list_topics(topic, timeout=30)
leader = metadata.brokers[metadata.topics[topic].partitions[0].leader]
s = lambda text: struct.pack(">h", len(text)) + text.encode()
codes = []
with socket.create_connection((leader.host, leader.port), timeout=120) as conn:
    def read(n):
        data = b""
        while len(data) < n:
            part = conn.recv(n - len(data))
            if not part: raise SystemExit("the broker closed the connection")
            data += part
        return data
    for correlation, path in enumerate(paths):
        batch = open(path, "rb").read()
        body = struct.pack(">hhi", 0, 7, correlation) + s("hand-written-produce") + struct.pack(">hhi", -1, -1, 60000)
        body += struct.pack(">i", 1) + s(topic) + struct.pack(">i", 1) + struct.pack(">ii", 0, len(batch)) + batch
        conn.sendall(struct.pack(">i", len(body)) + body)
        answer = read(struct.unpack(">i", read(4))[0])
        at = 4 + 4  # correlation id, topic count
        at += 2 + struct.unpack(">h", answer[at:at + 2])[0] + 4  # topic name, partition count
        partition, error = struct.unpack(">ih", answer[at:at + 6])
        codes.append(error)
records("b")
if errors: sys.exit("; ".join(errors))
print(json.dumps(codes))
`;

/**
 * Produces the records around the batches in `batchFiles` (each a file of one batch's bytes),
 * in order, to partition 0 of `topic`; returns the broker's error code for each batch (0: taken).
 */
export function produceAroundBatches(brokers: readonly string[], topic: string, batchFiles: readonly string[]): Promise<number[]> {
  return new Promise((resolve, reject) => {
    execFile('python3', ['-c', producer, brokers.join(','), topic, ...batchFiles], { timeout: 300_000 }, (error, stdout, stderr) =>
      (error ? reject(new Error(`could not produce: ${stderr || error.message}`)) : resolve(JSON.parse(stdout) as number[])));
  });
}
