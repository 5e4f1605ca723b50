import { describe, expect, it } from 'vitest';
import { faultHook, parseFault } from '../../src/common/faults.js';

describe('fault hooks (OFFSETLAKE_FAULT)', () => {
  it('parses <point>[:<n>[:kill|stop]] and refuses anything else, so a typo in a scenario is not a silent no-op', () => {
    expect(parseFault('before-commit')).toEqual({ point: 'before-commit', nth: 1, action: 'kill' });
    expect(parseFault('after-build:3:stop')).toEqual({ point: 'after-build', nth: 3, action: 'stop' });
    for (const wrong of ['before-comit', 'after-commit:0', 'after-commit:x', 'after-commit:2:pause', 'after-commit:2:kill:1']) {
      expect(() => parseFault(wrong)).toThrow(/OFFSETLAKE_FAULT/);
    }
  });

  it('acts once, the nth time its own point is passed; other points do not count; unset does nothing', () => {
    const signals: string[] = [];
    const hook = faultHook(parseFault('after-commit:2'), (name) => signals.push(name));
    hook('after-build');
    hook('after-commit');
    expect(signals).toEqual([]);
    hook('before-commit');
    hook('after-commit');
    hook('after-commit');
    expect(signals).toEqual(['SIGKILL']);
    const none = faultHook(undefined, (name) => signals.push(name));
    none('after-commit');
    expect(signals).toEqual(['SIGKILL']);
  });
});
