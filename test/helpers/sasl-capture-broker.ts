/**
 * A TLS server that speaks just enough of the Kafka protocol to take a client's SASL
 * OAUTHBEARER authentication and keep the token: what an MSK broker's IAM listener
 * (port 9098) sees first. It answers ApiVersions (advertising itself and the SASL
 * requests), SaslHandshake (OAUTHBEARER only) and SaslAuthenticate, which it refuses
 * with SASL_AUTHENTICATION_FAILED once the token is kept, so the client gives up
 * instead of going on to requests this server does not know.
 *
 * Framing and request shapes from the Kafka protocol guide: a request is an INT32 size,
 * then api_key INT16, api_version INT16, correlation_id INT32, client_id NULLABLE_STRING,
 * then (flexible versions: SaslAuthenticate v2+, ApiVersions v3+) tagged fields. The
 * certificate is self-signed, made with openssl; a client trusts it through
 * NODE_EXTRA_CA_CERTS.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type TLSSocket } from 'node:tls';

const apiVersionsKey = 18;
const saslHandshakeKey = 17;
const saslAuthenticateKey = 36;
/** Kafka's error code SASL_AUTHENTICATION_FAILED. */
const saslAuthenticationFailed = 58;

export interface SaslCaptureBroker {
  /** `127.0.0.1:port`, for KAFKA_BROKERS. */
  address: string;
  /** The PEM file of the server's self-signed certificate, for NODE_EXTRA_CA_CERTS. */
  certificateFile: string;
  /** The requests received, in order: `<api key>v<version>`, the handshake's mechanism after a colon. */
  requests: string[];
  /** The bearer tokens of the SaslAuthenticate requests, in order. */
  tokens: string[];
  close(): Promise<void>;
}

/** A TLS server on 127.0.0.1 with a fresh self-signed certificate for that address. */
export async function startSaslCaptureBroker(): Promise<SaslCaptureBroker> {
  const dir = mkdtempSync(join(tmpdir(), 'offsetlake-sasl-broker-'));
  const [keyFile, certificateFile] = [join(dir, 'key.pem'), join(dir, 'certificate.pem')];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=offsetlake test broker',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certificateFile], { stdio: 'pipe' });
  const requests: string[] = [];
  const tokens: string[] = [];
  const sockets = new Set<TLSSocket>();
  const server = createServer({ key: readFileSync(keyFile), cert: readFileSync(certificateFile) }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        const frame = pending.subarray(4, 4 + pending.readInt32BE(0));
        pending = pending.subarray(4 + frame.length);
        const answer = answerRequest(new Reader(frame), requests, tokens);
        if (answer) socket.write(answer);
        else socket.destroy();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    certificateFile,
    requests,
    tokens,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The response frame to one request, or undefined to drop the connection (a request this server does not take). */
function answerRequest(request: Reader, requests: string[], tokens: string[]): Buffer | undefined {
  const apiKey = request.int16();
  const version = request.int16();
  const correlationId = request.int32();
  request.nullableString(); // client_id
  const flexible = (apiKey === saslAuthenticateKey && version >= 2) || (apiKey === apiVersionsKey && version >= 3);
  if (flexible) request.taggedFields();
  if (apiKey === apiVersionsKey && version <= 2) {
    requests.push(`ApiVersions v${version}`);
    // Response header v0; error_code, [api_key min max], throttle_time_ms (v1+).
    const advertised: [number, number, number][] = [[apiVersionsKey, 0, 2], [saslHandshakeKey, 0, 1], [saslAuthenticateKey, 0, 2]];
    return frame(correlationId, false, [int16(0), int32(advertised.length), ...advertised.map(([key, min, max]) => Buffer.concat([int16(key), int16(min), int16(max)])), ...(version >= 1 ? [int32(0)] : [])]);
  }
  if (apiKey === saslHandshakeKey && version <= 1) {
    const mechanism = request.string();
    requests.push(`SaslHandshake v${version}:${mechanism}`);
    // Response header v0; error_code (UNSUPPORTED_SASL_MECHANISM = 33 for any other), [mechanisms].
    return frame(correlationId, false, [int16(mechanism === 'OAUTHBEARER' ? 0 : 33), int32(1), string('OAUTHBEARER')]);
  }
  if (apiKey === saslAuthenticateKey && version <= 2) {
    requests.push(`SaslAuthenticate v${version}`);
    const authBytes = version >= 2 ? request.compactBytes() : request.bytes();
    // RFC 7628 client initial response: "n,,\x01auth=Bearer <token>\x01\x01" (GS2 header, key=value pairs).
    const bearer = /\x01auth=Bearer ([^\x01]*)\x01/.exec(authBytes.toString('utf8'));
    if (bearer) tokens.push(bearer[1]!);
    const message = 'offsetlake test broker: token kept, authentication refused';
    // error_code, error_message, auth_bytes, session_lifetime_ms (v1+); v2 in compact forms with tagged fields.
    const body = version >= 2
      ? [int16(saslAuthenticationFailed), compactString(message), uvarint(1), int64(0n), uvarint(0)]
      : [int16(saslAuthenticationFailed), string(message), int32(0), ...(version >= 1 ? [int64(0n)] : [])];
    return frame(correlationId, version >= 2, body);
  }
  requests.push(`api key ${apiKey} v${version} (refused)`);
  return undefined;
}

/** A response: INT32 size, correlation_id, tagged fields in a flexible header (v1), the body. */
function frame(correlationId: number, flexibleHeader: boolean, body: Buffer[]): Buffer {
  const payload = Buffer.concat([int32(correlationId), ...(flexibleHeader ? [uvarint(0)] : []), ...body]);
  return Buffer.concat([int32(payload.length), payload]);
}

const int16 = (value: number): Buffer => { const b = Buffer.alloc(2); b.writeInt16BE(value); return b; };
const int32 = (value: number): Buffer => { const b = Buffer.alloc(4); b.writeInt32BE(value); return b; };
const int64 = (value: bigint): Buffer => { const b = Buffer.alloc(8); b.writeBigInt64BE(value); return b; };
const string = (text: string): Buffer => Buffer.concat([int16(Buffer.byteLength(text)), Buffer.from(text)]);
const compactString = (text: string): Buffer => Buffer.concat([uvarint(Buffer.byteLength(text) + 1), Buffer.from(text)]);

function uvarint(value: number): Buffer {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** Reads the fields of one request in order. */
class Reader {
  #at = 0;
  constructor(private readonly buffer: Buffer) {}

  int16(): number {
    const value = this.buffer.readInt16BE(this.#at);
    this.#at += 2;
    return value;
  }

  int32(): number {
    const value = this.buffer.readInt32BE(this.#at);
    this.#at += 4;
    return value;
  }

  uvarint(): number {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = this.buffer[this.#at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  }

  take(length: number): Buffer {
    const bytes = this.buffer.subarray(this.#at, this.#at + length);
    this.#at += length;
    return bytes;
  }

  string(): string {
    return this.take(this.int16()).toString('utf8');
  }

  nullableString(): string | null {
    const length = this.int16();
    return length < 0 ? null : this.take(length).toString('utf8');
  }

  bytes(): Buffer {
    return this.take(this.int32());
  }

  compactBytes(): Buffer {
    return this.take(this.uvarint() - 1);
  }

  taggedFields(): void {
    for (let count = this.uvarint(); count > 0; count -= 1) {
      this.uvarint(); // tag
      this.take(this.uvarint());
    }
  }
}
