/**
 * Issue 25.4: the tests' Python readers are the pinned ones, whatever else the machine
 * has (issue 46.6: exactly the lock's, nothing else installed). An older botocore put ahead on the path (PYTHONPATH, as a user's site or another
 * project's would be) is named by the pin check, and changes nothing of the environment
 * the set-up makes and the tests run in.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const requirements = 'test/integration/requirements-reader.txt';
const lock = 'test/integration/requirements-reader.lock.txt';
const pinnedBotocore = /^botocore==(\S+)$/m.exec(execFileSync('cat', [requirements], { encoding: 'utf8' }))![1]!;

// a botocore 1.35.0 as pip would leave it: its metadata and a module that says so
const elsewhere = mkdtempSync(join(tmpdir(), 'offsetlake-old-botocore-'));
mkdirSync(join(elsewhere, 'botocore-1.35.0.dist-info'));
writeFileSync(join(elsewhere, 'botocore-1.35.0.dist-info', 'METADATA'), 'Metadata-Version: 2.1\nName: botocore\nVersion: 1.35.0\n');
mkdirSync(join(elsewhere, 'botocore'));
writeFileSync(join(elsewhere, 'botocore', '__init__.py'), "__version__ = '1.35.0'\n");
// a distribution the lock does not name, as an install outside it would leave one
const unlocked = mkdtempSync(join(tmpdir(), 'offsetlake-unlocked-'));
mkdirSync(join(unlocked, 'left_pad-1.0.0.dist-info'));
writeFileSync(join(unlocked, 'left_pad-1.0.0.dist-info', 'METADATA'), 'Metadata-Version: 2.1\nName: left-pad\nVersion: 1.0.0\n');
afterAll(() => rmSync(unlocked, { recursive: true, force: true }));
afterAll(() => rmSync(elsewhere, { recursive: true, force: true }));

describe("the tests' Python", () => {
  it('is the project\'s own environment, and holds every pinned version', () => {
    const prefix = execFileSync('python3', ['-c', 'import sys; print(sys.prefix)'], { encoding: 'utf8' }).trim();
    expect(prefix).toMatch(/\/python-[0-9a-f]{12}$/);
    expect(spawnSync('python3', ['test/python_pins.py', requirements], { encoding: 'utf8' }).status).toBe(0);
    const exactly = spawnSync('python3', ['test/python_pins.py', lock, '--exactly'], { encoding: 'utf8' });
    expect(exactly.status, exactly.stdout).toBe(0);
    expect(execFileSync('python3', ['-c', 'import botocore; print(botocore.__version__)'], { encoding: 'utf8' }).trim()).toBe(pinnedBotocore);
  });

  it('names an older botocore ahead on the path, with the version it found and the pinned one', () => {
    const check = spawnSync('python3', ['test/python_pins.py', requirements], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: elsewhere } });
    expect(check.status).toBe(1);
    expect(check.stdout).toContain(`botocore 1.35.0 (pinned ${pinnedBotocore})`);
  });

  it('names, with --exactly, a distribution installed that the lock does not pin', () => {
    expect(spawnSync('python3', ['test/python_pins.py', lock], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: unlocked } }).status).toBe(0);
    const check = spawnSync('python3', ['test/python_pins.py', lock, '--exactly'], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: unlocked } });
    expect(check.status).toBe(1);
    expect(check.stdout).toContain('left-pad 1.0.0 (not pinned)');
  });

  it('set-up with an older botocore ahead on the path still gives the pinned environment, unchanged', () => {
    const setUp = spawnSync('bash', ['test/python-env.sh'], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: elsewhere } });
    expect(setUp.status, setUp.stderr).toBe(0);
    const venv = setUp.stdout.trim();
    const botocore = execFileSync(join(venv, 'bin', 'python'), ['-c', 'import botocore; print(botocore.__version__, botocore.__file__)'], { encoding: 'utf8' }).trim();
    expect(botocore.split(' ')[0]).toBe(pinnedBotocore);
    expect(botocore.split(' ')[1]!.startsWith(venv)).toBe(true);
  });
});
