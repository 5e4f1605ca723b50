/**
 * Physical names the template must fix (an RDS Proxy's name; the state machine's, which
 * its own StartExecution permission needs before it exists) are made from the stack's
 * name, so two stacks in one account and region never collide.
 */
import { createHash } from 'node:crypto';
import { Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * `<stack name>-<suffix>`, in letters, digits and single hyphens, starting with a letter
 * (what both RDS Proxy and Step Functions accept); shortened with a hash of the whole
 * when longer than `maxLength`.
 */
export function stackScopedName(scope: IConstruct, suffix: string, maxLength: number): string {
  const whole = `${Stack.of(scope).stackName}-${suffix}`;
  const clean = whole.replace(/[^A-Za-z0-9-]+/g, '-').replace(/-{2,}/g, '-').replace(/^[^A-Za-z]+/, '').replace(/-+$/, '');
  const named = /^[A-Za-z]/.test(clean) ? clean : `x-${clean}`;
  if (named.length <= maxLength) return named;
  const hash = createHash('sha256').update(whole).digest('hex').slice(0, 8);
  const tail = `-${suffix}-${hash}`;
  return `${named.slice(0, maxLength - tail.length).replace(/-+$/, '')}${tail}`;
}
