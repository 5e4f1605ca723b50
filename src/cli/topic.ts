/** `topic create NAME`: a topic of one's own (auto-create is off on the local broker). */
import type { ParseArgsConfig } from 'node:util';
import { connectKafka, type KafkaConnection } from '../kafka/connect.js';
import { KafkaRequestError, protocolErrorCodes } from '../kafka/errors.js';
import { compactionProblem, createTopic, topicPartitions } from '../kafka/topics.js';
import { topicNameProblem } from '../kafka/topic-names.js';
import { useLocalStackDefaults } from '../stack/index.js';
import { printJson, UsageError } from './output.js';
import { topicUsage } from './help.js';
import { parseCommandArgs, wholeNumberFlag } from './args.js';

const options = {
  partitions: { type: 'string' },
  config: { type: 'string', multiple: true },
  'if-not-exists': { type: 'boolean' },
  json: { type: 'boolean' },
  'kafka-brokers': { type: 'string' },
} satisfies ParseArgsConfig['options'];


/** Brokers from the flag, then KAFKA_BROKERS, then the local stack. */
function kafkaBrokers(flag: string | undefined): string {
  useLocalStackDefaults();
  return flag ?? process.env.KAFKA_BROKERS!;
}

/** A failure whose message already says what happened and what was written: withKafka passes it on as it is. */
export class CommandFailure extends Error {
  override name = 'CommandFailure';
}

/** A Kafka connection for one command, closed whatever happens; "Kafka does not answer" said as a sentence. */
export async function withKafka<T>(flag: string | undefined, work: (kafka: KafkaConnection) => Promise<T>): Promise<T> {
  const brokers = kafkaBrokers(flag);
  const kafka = connectKafka({ brokers });
  try {
    return await work(kafka);
  } catch (error) {
    const unreachable = error instanceof CommandFailure ? undefined : networkFailure(error);
    if (unreachable) {
      throw new Error(`Kafka at ${brokers} does not answer (${unreachable}); \`offsetlake stack up\` starts the local one, or name your brokers with KAFKA_BROKERS or --kafka-brokers`, { cause: error });
    }
    throw error;
  } finally {
    await kafka.close();
  }
}

/** The reason when the error chain is the library failing to reach any broker (ECONNREFUSED, ETIMEDOUT, …). */
export function networkFailure(error: unknown): string | undefined {
  let network = false;
  let reason: string | undefined;
  const visit = (e: unknown, depth: number): void => {
    if (depth > 6 || e === null || typeof e !== 'object') return;
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) reason ??= code;
    if (code === 'PLT_KFK_NETWORK' || (typeof message === 'string' && /Cannot connect to any broker/.test(message))) network = true;
    for (const inner of (e as { errors?: unknown[] }).errors ?? []) visit(inner, depth + 1);
    visit((e as { cause?: unknown }).cause, depth + 1);
  };
  visit(error, 0);
  return network ? (reason ?? 'no connection') : undefined;
}

/** The broker's own sentence about a refused CreateTopics (`Unknown topic config name: x`), if it gave one. */
function brokerMessage(error: unknown): string | undefined {
  let found: string | undefined;
  const visit = (e: unknown, depth: number): void => {
    if (found || depth > 6 || e === null || typeof e !== 'object') return;
    const topics = (e as { response?: { topics?: { errorMessage?: unknown }[] } }).response?.topics;
    const message = topics?.find((t) => typeof t.errorMessage === 'string' && t.errorMessage !== '')?.errorMessage;
    if (typeof message === 'string') found = message;
    for (const inner of (e as { errors?: unknown[] }).errors ?? []) visit(inner, depth + 1);
    visit((e as { cause?: unknown }).cause, depth + 1);
  };
  visit(error, 0);
  return found;
}

const TOPIC_ALREADY_EXISTS = 36;
const INVALID_PARTITIONS = 37;
const INVALID_REPLICATION_FACTOR = 38;
const INVALID_CONFIG = 40;
const POLICY_VIOLATION = 44;


export async function topicCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('topic', args, options);
  const [action, name, ...rest] = positionals;
  if (action !== 'create') throw new UsageError(action === undefined ? `topic needs an action; usage: ${topicUsage}` : `unknown topic action "${action}"; usage: ${topicUsage}`);
  if (name === undefined) throw new UsageError(`topic create needs a NAME; usage: ${topicUsage}`);
  if (rest.length > 0) throw new UsageError(`topic create takes one NAME, got also "${rest.join(' ')}" (flags start with --)`);
  const nameProblem = topicNameProblem(name);
  if (nameProblem) throw new UsageError(nameProblem);

  const partitions = wholeNumberFlag('partitions', values.partitions, 1);
  const configs: Record<string, string> = {};
  for (const text of values.config ?? []) {
    const at = text.indexOf('=');
    const key = at < 0 ? '' : text.slice(0, at).trim();
    if (at < 0 || key === '') throw new UsageError(`--config takes KEY=VALUE (such as --config retention.ms=604800000), got "${text}"`);
    if (Object.hasOwn(configs, key)) throw new UsageError(`--config ${key} is given twice ("${configs[key]}" and "${text.slice(at + 1)}"); give it once`);
    configs[key] = text.slice(at + 1);
  }

  const result = await withKafka(values['kafka-brokers'], async (kafka) => {
    try {
      await createTopic(kafka, name, partitions, { configs });
      return { topic: name, created: true, partitions, configs };
    } catch (error) {
      const code = error instanceof KafkaRequestError ? error.code : protocolErrorCodes(error)[0];
      const said = brokerMessage(error);
      if (code === TOPIC_ALREADY_EXISTS) {
        const existing = (await topicPartitions(kafka, name)).length;
        if (values['if-not-exists']) return { topic: name, created: false, partitions: existing, configs: {} };
        throw new Error(`topic "${name}" already exists (${existing} partition${existing === 1 ? '' : 's'}); choose another name, or write into it with \`offsetlake produce ${name}\``);
      }
      if (code === INVALID_CONFIG) {
        // nothing was created: Kafka checks the configs before it creates the topic
        throw new UsageError(`Kafka refused the topic's configuration: ${said ?? 'a config is invalid'}. Topic "${name}" was not created; the topic configs are listed at https://kafka.apache.org/documentation/#topicconfigs`);
      }
      if (code === INVALID_PARTITIONS || code === INVALID_REPLICATION_FACTOR || code === POLICY_VIOLATION) {
        throw new Error(`Kafka refused to create topic "${name}": ${said ?? (error as Error).message}`);
      }
      throw error;
    }
  });

  if (values.json) printJson(result);
  else if (!result.created) process.stdout.write(`topic ${name} already exists (${result.partitions} partition${result.partitions === 1 ? '' : 's'}); left as it is\n`);
  else {
    const settings = Object.entries(result.configs).map(([k, v]) => `${k}=${v}`);
    process.stdout.write(`created topic ${name} (${partitions} partition${partitions === 1 ? '' : 's'}${settings.length ? `; ${settings.join(', ')}` : ''})\n`);
  }
  const compacted = result.created && configs['cleanup.policy'] !== undefined ? compactionProblem(name, configs['cleanup.policy']) : undefined;
  if (compacted) process.stderr.write(`note: no table can be created over this topic: ${compacted}\n`);
  return 0;
}
