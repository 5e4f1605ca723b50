/** The byte layout index entries share: varints and length-prefixed bytes, written and read. Pure. */

export class ByteWriter {
  private buffer = new Uint8Array(256);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buffer.length) return;
    const next = new Uint8Array(Math.max(this.buffer.length * 2, this.length + n));
    next.set(this.buffer.subarray(0, this.length));
    this.buffer = next;
  }

  byte(b: number): void {
    this.room(1);
    this.buffer[this.length++] = b;
  }

  varint(n: number): void {
    this.room(5);
    while (n >= 0x80) {
      this.buffer[this.length++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buffer[this.length++] = n;
  }

  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buffer.set(b, this.length);
    this.length += b.length;
  }

  done(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }
}

export class ByteReader {
  at = 0;
  constructor(private readonly b: Uint8Array) {}

  get done(): boolean {
    return this.at >= this.b.length;
  }

  varint(): number {
    let n = 0;
    let scale = 1;
    for (;;) {
      const c = this.b[this.at++];
      if (c === undefined) throw new IndexEntryError('index entry ends inside a number');
      n += (c & 0x7f) * scale;
      if (c < 0x80) return n;
      scale *= 128;
    }
  }

  bytes(n: number): Uint8Array {
    if (this.at + n > this.b.length) throw new IndexEntryError('index entry ends inside a value');
    const out = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}

/** An entry that cannot be read: the index is skipped for that read. */
export class IndexEntryError extends Error {
  override name = 'IndexEntryError';
}

