import { stackCommand, stackUsage } from './stack.js';
import { tableCommand, tableUsage } from './table.js';
import { filesCommand, inspectUsage, statusCommand } from './inspect.js';
import { checkCommand, indexUsage, rebuildCommand, runCommand } from './run-commands.js';
import { stopQuietlyWhenThePipeCloses, UsageError } from './output.js';
import { commandHelp, helpText } from './help.js';
import { serveUsage } from './serve.js';
import { queryUsage } from './query.js';
import { sqlUsage } from './sql.js';
import { attachUsage } from './attach.js';
import { backfillCommand, backfillUsage, retentionCommand } from './backfill.js';
import { topicCommand, topicUsage } from './topic.js';
import { produceCommand, produceUsage } from './produce.js';
import { latestCatalogVersion } from '../catalog/migrations.js';
import { encoderVersion } from '../parquet/encoder.js';
import project from '../../package.json' with { type: 'json' };

const commands: Record<string, (args: string[]) => Promise<number>> = {
  stack: stackCommand,
  table: tableCommand,
  topic: topicCommand,
  produce: produceCommand,
  files: filesCommand,
  status: statusCommand,
  run: runCommand,
  rebuild: rebuildCommand,
  check: checkCommand,
  backfill: backfillCommand,
  retention: retentionCommand,
  serve: async (args) => (await import('./serve.js')).serveCommand(args),
  query: async (args) => (await import('./query.js')).queryCommand(args),
  sql: async (args) => (await import('./sql.js')).sqlCommand(args),
  attach: async (args) => (await import('./attach.js')).attachCommand(args),
  demo: async (args) => (await import('./demo.js')).demoCommand(args),
};

const usage = `usage:
${stackUsage}
${topicUsage}
${produceUsage}
${tableUsage}
${inspectUsage}
${indexUsage}
${backfillUsage}
${serveUsage}
${queryUsage}
${sqlUsage}
${attachUsage}
offsetlake demo
offsetlake --version`;

/** What a bug report needs: this offsetlake, the catalog version it migrates to, the encoder it writes new files with. */
function versionText(): string {
  return `offsetlake ${project.version} (catalog version ${latestCatalogVersion}, encoder ${encoderVersion}, Node ${process.versions.node})\n`;
}

/** Runs one command; errors become one line on stderr and a non-zero exit code. */
export async function main(argv: string[]): Promise<number> {
  stopQuietlyWhenThePipeCloses();
  const [name, ...args] = argv;
  if ((name === '--version' || name === '-V' || name === 'version') && args.length === 0) {
    process.stdout.write(versionText());
    return 0;
  }
  if (name === undefined || ((name === 'help' || name === '--help' || name === '-h') && args.length === 0)) {
    process.stdout.write(`${usage}\n\n\`offsetlake help COMMAND\` (or COMMAND --help) says more about one.\n`);
    return name === undefined ? 2 : 0;
  }
  // `help CMD`, `CMD --help`, `CMD -h`, `CMD SUBCOMMAND --help`, `stack help`: the command's help, and nothing else runs
  const asked = name === 'help' || name === '--help' || name === '-h' ? args[0]! : name;
  const flagsBeforeEnd = args.slice(0, args.includes('--') ? args.indexOf('--') : args.length);
  if (asked !== name || flagsBeforeEnd.some((a) => a === '--help' || a === '-h') || (args[0] === 'help' && name in commandHelp)) {
    if (!(asked in commandHelp)) {
      // commands that print their own help (topic, produce)
      const own = commands[asked];
      if (own) return own(['--help']);
      process.stderr.write(`offsetlake: unknown command "${asked}"\n${usage}\n`);
      return 2;
    }
    process.stdout.write(helpText(asked));
    return 0;
  }
  const command = commands[name];
  try {
    if (!command) throw new UsageError(`unknown command "${name}"\n${usage}`);
    return await command(args);
  } catch (error) {
    const err = error as Error;
    process.stderr.write(`offsetlake ${name}: ${err.message}\n`);
    if (process.env.OFFSETLAKE_DEBUG && err.stack) process.stderr.write(`${err.stack}\n`);
    return err instanceof UsageError ? 2 : 1;
  }
}
