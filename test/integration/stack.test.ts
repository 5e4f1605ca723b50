import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { isAlive, isZombie } from '../../src/stack/process.js';
import { stackConfig } from '../../src/stack/config.js';
import { kafkaService } from '../../src/stack/kafka.js';

const run = promisify(execFile);
// Its own home and ports: this stack must not disturb the one the other tests use. The ports
// lie below the kernel's ephemeral range (32768-60999), where an outgoing connection of
// another test could hold one just as Kafka binds it.
const home = mkdtempSync(join(tmpdir(), 'offsetlake-stack-test-'));
// Postgres runs as a non-root user when the tests run as root: it must reach its data folder.
chmodSync(home, 0o755);
// As a user types it: no DATABASE_URL at all (the test processes have one for the shared stack).
const { DATABASE_URL: _shared, ...inherited } = process.env;
const env = {
  ...inherited,
  OFFSETLAKE_HOME: home,
  // 100 above the shared stack's Kafka port (29092 by default): a CI run beside this one,
  // on ports of its own, moves these with its own
  ...(() => {
    const base = Number(process.env.OFFSETLAKE_KAFKA_PORT ?? 29092) + 100;
    return { OFFSETLAKE_KAFKA_PORT: String(base), OFFSETLAKE_CONTROLLER_PORT: String(base + 1), OFFSETLAKE_REGISTRY_PORT: String(base + 2), OFFSETLAKE_POSTGRES_PORT: String(base + 3) };
  })(),
};

async function offsetlake(...args: string[]) {
  const { stdout } = await run(process.execPath, ['bin/offsetlake.js', ...args], { env, timeout: 240_000 });
  return stdout;
}

/** Processes whose command line mentions this test's home: what the stack started. */
function processesUsingHome(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmdline.includes(home) && state !== 'Z') pids.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return pids;
}

afterAll(async () => {
  await offsetlake('stack', 'down').catch(() => {});
  rmSync(home, { recursive: true, force: true });
});

describe('offsetlake stack', () => {
  it('up twice, status, down: the same daemons, then none left', async () => {
    const first = JSON.parse(await offsetlake('stack', 'up', '--json'));
    expect(first.services.map((s: { name: string; state: string }) => [s.name, s.state])).toEqual([
      ['kafka', 'running'],
      ['registry', 'running'],
      ['postgres', 'running'],
    ]);
    expect(first.environment.KAFKA_BROKERS).toBe(`127.0.0.1:${env.OFFSETLAKE_KAFKA_PORT}`);
    expect(first.catalogVersion).toBeGreaterThanOrEqual(1);
    const pids = first.services.map((s: { pid: number }) => s.pid);
    expect(pids.every((pid: number) => Number.isInteger(pid) && pid > 0)).toBe(true);

    const second = JSON.parse(await offsetlake('stack', 'up', '--json'));
    expect(second.services.map((s: { pid: number }) => s.pid)).toEqual(pids);
    // the tests' start asks for infinite retention: a broker started without it is not silently reused
    const asTheTestsAsk = { ...stackConfig({}, env), brokerSettings: { 'log.retention.ms': '-1' } };
    await expect(kafkaService.up(asTheTestsAsk, () => {})).rejects.toThrow(`Kafka (pid ${pids[0]}) runs without log.retention.ms=-1, which this start asks for (the tests need it); run \`offsetlake stack down\` and start again`);
    // a third time, as text: nothing to migrate, so no line says it migrated
    expect(await offsetlake('stack', 'up')).not.toContain('catalog migrated');

    const status = JSON.parse(await offsetlake('stack', 'status', '--json'));
    expect(status.services.map((s: { state: string; pid: number }) => [s.state, s.pid])).toEqual(pids.map((pid: number) => ['running', pid]));
    expect(processesUsingHome().length).toBeGreaterThanOrEqual(3);

    const down = JSON.parse(await offsetlake('stack', 'down', '--json'));
    expect(down.services.map((s: { state: string }) => s.state)).toEqual(['stopped', 'stopped', 'stopped']);
    // A stopped daemon may linger a moment as a zombie until PID 1 reaps it: that is not running.
    for (const pid of pids) expect(isAlive(pid) && !isZombie(pid), `pid ${pid} still runs`).toBe(false);
    expect(processesUsingHome()).toEqual([]);

    const after = JSON.parse(await offsetlake('stack', 'status', '--json'));
    expect(after.services.map((s: { state: string }) => s.state)).toEqual(['stopped', 'stopped', 'stopped']);
  });

  it('refuses a bad port with the flag and the value', async () => {
    await expect(offsetlake('stack', 'up', '--kafka-port', 'ninety')).rejects.toThrow('--kafka-port must be a port number from 1 to 65535, got "ninety"');
  });
});
