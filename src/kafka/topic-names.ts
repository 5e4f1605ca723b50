/**
 * Kafka's rule for topic names, apart from the client: the catalog checks a table's topic
 * name without loading the Kafka client (`table list` and `table drop` never talk to Kafka).
 */

/** Kafka's rule for topic names: 1–249 of ASCII letters, digits, '.', '_' and '-', and not `.` or `..`. */
export function topicNameProblem(name: string): string | undefined {
  if (name === '' || name === '.' || name === '..') return `"${name}" cannot name a Kafka topic`;
  if (name.length > 249) return `a Kafka topic name has at most 249 characters; "${name.slice(0, 20)}…" has ${name.length}`;
  const bad = /[^a-zA-Z0-9._-]/.exec(name);
  if (bad) return `topic name "${name}" contains ${JSON.stringify(bad[0])}: Kafka allows ASCII letters, digits, '.', '_' and '-'`;
  return undefined;
}
