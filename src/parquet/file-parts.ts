/**
 * A file as its parts in order, each kept as it was written: indexing hashes the parts
 * and keeps the footer, so the bytes are joined into one buffer only when a file is
 * served (`joinParts`). Its own module because every writer step appends to it.
 */

/** The parts of a file in order, joined once at the end. */
export class Parts {
  readonly list: Uint8Array[] = [];
  offset = 0;
  push(bytes: Uint8Array): void {
    this.list.push(bytes);
    this.offset += bytes.byteLength;
  }
}

export function joinParts(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
