/**
 * A live file: neither expired (Kafka deleted its first offsets) nor replaced by a merge
 * (migration 17). Live files and lost intervals tile each partition's indexed range
 * (invariant 1); every query that means "the table's files now" takes only these.
 */
export const liveFile = (alias: string): string => `${alias}.replaced_by IS NULL AND ${alias}.expired_at IS NULL`;
