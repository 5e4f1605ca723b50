import type { ParseArgsConfig } from 'node:util';
import { dropTable, listTables } from '../catalog/tables.js';
import { formatSettings, parseFormat, resolveSettings, settingNames } from '../table/settings.js';
import { withCatalog, withEngine } from './engine.js';
import { printJson, printTable, UsageError } from './output.js';
import { tableUsage } from './help.js';
import { parseCommandArgs } from './args.js';
import { parseInlineIndex, type IndexSpec } from '../indexes/ddl.js';
import { indexDdlText } from '../catalog/index-ddl.js';

// Each setting is accepted by its specification name and with '-' for '_'.
const settingOptions = Object.fromEntries(
  settingNames.flatMap((name) => [[name, { type: 'string' }], [name.replaceAll('_', '-'), { type: 'string' }]]),
) as Record<string, { type: 'string' }>;

const options = {
  json: { type: 'boolean' },
  topic: { type: 'string' },
  format: { type: 'string' },
  'if-exists': { type: 'boolean' },
  index: { type: 'string', multiple: true },
  'database-url': { type: 'string' },
  'kafka-brokers': { type: 'string' },
  ...settingOptions,
} satisfies ParseArgsConfig['options'];

export async function tableCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('table', args, options, true, `the table settings are ${settingNames.map((n) => `--${n}`).join(', ')}`);
  const [action, name] = positionals;
  const flags = values as Record<string, string | boolean | undefined>;
  const engineFlags = { databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] };

  if (action === 'create') {
    if (!name) throw new UsageError(`table create needs a NAME; usage: ${tableUsage}`);
    if (!values.topic) throw new UsageError('table create needs --topic TOPIC');
    const given: Record<string, string> = {};
    for (const setting of settingNames) {
      const text = flags[setting] ?? flags[setting.replaceAll('_', '-')];
      if (typeof text === 'string') given[setting] = text;
    }
    let settings: ReturnType<typeof resolveSettings>;
    let format: ReturnType<typeof parseFormat>;
    let indexes: IndexSpec[];
    try {
      settings = resolveSettings(given);
      format = parseFormat(values.format ?? 'json');
      indexes = (values.index ?? []).map((text) => parseInlineIndex(text));
    } catch (error) {
      // a setting or format the command line got wrong: nothing was asked of Kafka or the catalog
      throw new UsageError((error as Error).message);
    }
    // only create talks to Kafka: list and drop load neither these modules nor the Kafka client
    const [{ createTableFromTopic }, { planTablePartitions }] = await Promise.all([import('../table-topic/create-table.js'), import('../backfill/plan.js')]);
    const { table, history } = await withEngine(engineFlags, async (engine) => {
      const created = await createTableFromTopic(engine, { name, topic: values.topic!, format, settings, indexes });
      // the history below each partition's start is planned now, so that status shows it at once
      const planned = await planTablePartitions(engine.catalog, engine.kafka, created);
      return { table: created, history: planned.reduce((sum, p) => sum + (p.done ? 0n : BigInt(p.cursor) - BigInt(p.target)), 0n) };
    });
    if (values.json) printJson({ ...table, historyNotIndexed: history });
    else {
      process.stdout.write(`created table ${table.name} on topic ${table.topic} (${table.partitions.length} partitions)\n`);
      for (const index of table.indexes) process.stdout.write(`with index ${indexDdlText(table.name, index)}: active\n`);
      if (history > 0n) process.stdout.write(`the topic holds ${history} offsets of history below where indexing starts: \`offsetlake backfill ${table.name}\` indexes them (history: ${formatSettings(table.settings).history})\n`);
    }
    return 0;
  }
  if (action === 'list') {
    const tables = await withCatalog(engineFlags, (engine) => listTables(engine.catalog));
    if (values.json) printJson(tables);
    else printTable(tables.map((t) => ({ name: t.name, topic: t.topic, format: t.format, ...formatSettings(t.settings) })));
    return 0;
  }
  if (action === 'drop') {
    if (!name) throw new UsageError(`table drop needs a NAME; usage: ${tableUsage}`);
    const dropped = await withCatalog(engineFlags, (engine) => dropTable(engine.catalog, name, { ifExists: values['if-exists'] }));
    if (values.json) printJson({ dropped });
    else process.stdout.write(dropped ? `dropped table ${name}\n` : `no table named ${name}\n`);
    return 0;
  }
  throw new UsageError(`unknown table action "${action ?? ''}"; usage: ${tableUsage}`);
}
