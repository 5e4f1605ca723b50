/**
 * The S3 face's bucket name, checked apart from the face itself: `attach` checks the name
 * it hands out without loading the reader (and with it the Kafka client).
 */

const bucketPattern = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * The first path segments of serve's other routes: a bucket so named would take their
 * requests (the S3 face is asked first), so /iceberg/… or /console would answer as S3.
 */
export const reservedBucketNames: readonly string[] = ['tables', 'metrics', 'iceberg', 'console'];

/** Whether `bucket` is a name S3 would accept and that the HTTP face's paths do not use. */
export function bucketProblem(bucket: string): string | undefined {
  if (!bucketPattern.test(bucket)) return `"${bucket}" is not an S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens)`;
  if (reservedBucketNames.includes(bucket)) return `"${bucket}" is a path of serve's own (${reservedBucketNames.map((name) => `/${name}`).join(', ')} are taken); choose another bucket name`;
  return undefined;
}
