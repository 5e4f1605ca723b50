/**
 * A Confluent-compatible Schema Registry, read by schema id (`GET /schemas/ids/{id}`):
 * ids are registry-wide and a schema under an id never changes, so every answer is
 * cached for the life of the process (an unknown id only briefly: it may be registered
 * soon). Basic auth comes from the URL's user:password or SCHEMA_REGISTRY_USER /
 * SCHEMA_REGISTRY_PASSWORD.
 *
 * "Cannot be reached" (connection refused, timeout, 5xx, 401/403) is
 * RegistryUnavailableError after a few retries with backoff: the indexer then waits and
 * writes no files. "No such id" (404) is an answer, not an outage: those records become
 * rows with an error. An HTTP 200 whose body is not a schema (not JSON, no schema text, a
 * reference answered so) is tried again the same few times and is then an
 * UnreadableSchema naming the id and what the registry said: the registry answers, so
 * waiting for it could last forever (docs/design.md, "Schemas"); its records become error
 * rows, and the id is asked again (after `missingTtlMs`) for later records.
 */
import { retrying } from '../common/retry.js';

export type SchemaType = 'AVRO' | 'PROTOBUF' | 'JSON';

/** A registry schema with its references resolved (by the name the schema imports them under). */
export interface RegistrySchema {
  id: number;
  type: SchemaType;
  schema: string;
  references: { name: string; type: SchemaType; schema: string }[];
}

export class RegistryUnavailableError extends Error {
  override name = 'RegistryUnavailableError';
  constructor(readonly url: string, reason: string, options?: { cause?: unknown }) {
    super(`Schema Registry ${url} cannot be reached: ${reason}`, options);
  }
}

/** The registry answered for `id`, but not with a schema: `unreadable` says what it answered. */
export interface UnreadableSchema {
  id: number;
  unreadable: string;
}

export function isUnreadable(schema: RegistrySchema | UnreadableSchema): schema is UnreadableSchema {
  return 'unreadable' in schema;
}

export interface SchemaRegistry {
  readonly url: string;
  /** The schema under `id`, null when the registry has no such id, or what it answered when that was not a schema. */
  schemaById(id: number): Promise<RegistrySchema | UnreadableSchema | null>;
}

export interface RegistryOptions {
  user?: string | undefined;
  password?: string | undefined;
  /** Pauses between tries when the registry cannot be reached; one try more than pauses. */
  backoffMs?: readonly number[];
  timeoutMs?: number;
  /** How long "no such id" (and an answer that is not a schema) is believed before asking again. */
  missingTtlMs?: number;
}

const defaultBackoff = [200, 800, 2000];

interface SchemaAnswer {
  schema: string;
  schemaType?: SchemaType;
  references?: { name: string; subject: string; version: number }[];
}

/** The registry's URL without credentials, and the headers of a request (basic auth from the URL or the environment). */
function registryAccess(url: string, options: Pick<RegistryOptions, 'user' | 'password'>, env: NodeJS.ProcessEnv): { base: string; headers: Record<string, string> } {
  const parsed = new URL(url);
  const user = options.user ?? (parsed.username ? decodeURIComponent(parsed.username) : env.SCHEMA_REGISTRY_USER);
  const password = options.password ?? (parsed.password ? decodeURIComponent(parsed.password) : env.SCHEMA_REGISTRY_PASSWORD);
  parsed.username = '';
  parsed.password = '';
  const base = parsed.toString().replace(/\/+$/, '');
  const headers: Record<string, string> = { accept: 'application/vnd.schemaregistry.v1+json, application/json' };
  if (user !== undefined) headers.authorization = `Basic ${Buffer.from(`${user}:${password ?? ''}`).toString('base64')}`;
  return { base, headers };
}

export function schemaRegistry(url: string, options: RegistryOptions = {}, env: NodeJS.ProcessEnv = process.env): SchemaRegistry {
  const { base, headers } = registryAccess(url, options, env);
  const backoff = options.backoffMs ?? defaultBackoff;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const missingTtlMs = options.missingTtlMs ?? 5_000;
  const found = new Map<number, Promise<RegistrySchema>>();
  const missing = new Map<number, number>();
  const unreadable = new Map<number, { since: number; schema: UnreadableSchema }>();

  async function get(path: string): Promise<SchemaAnswer | null> {
    try {
      return await retrying({ pausesMs: backoff }, (error) => error instanceof Unanswered, async () => {
        let response: Response;
        try {
          response = await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(timeoutMs) });
        } catch (error) {
          const cause = (error as { cause?: { code?: string; message?: string } }).cause;
          throw new Unanswered(cause?.code ?? cause?.message ?? (error as Error).message);
        }
        if (response.status === 404) return null;
        if (response.ok) {
          const text = await response.text().catch(() => '');
          let answer: SchemaAnswer | undefined;
          try {
            answer = JSON.parse(text) as SchemaAnswer | undefined;
          } catch {
            throw new NotASchema(`HTTP ${response.status} for ${path} is not JSON: ${excerpt(text)}`);
          }
          const problem = answerProblem(answer);
          if (problem) throw new NotASchema(`HTTP ${response.status} for ${path} ${problem}: ${excerpt(text)}`);
          return answer!;
        }
        await response.body?.cancel();
        throw new Unanswered(`HTTP ${response.status} for ${path}`);
      });
    } catch (error) {
      if (error instanceof NotASchema) throw new NotASchema(`${error.message} (${backoff.length + 1} tries)`);
      if (error instanceof Unanswered) throw new RegistryUnavailableError(base, `${error.message} (${backoff.length + 1} tries)`);
      throw error;
    }
  }

  async function resolve(answer: SchemaAnswer, id: number, depth: number): Promise<RegistrySchema> {
    const references: RegistrySchema['references'] = [];
    for (const reference of answer.references ?? []) {
      // a reference that cannot be had is left out: the schema then cannot be read, and
      // its records become rows with that error (indexing never stops on a bad schema)
      if (depth > 10) break;
      const referenced = await get(`/subjects/${encodeURIComponent(reference.subject)}/versions/${reference.version}`);
      if (!referenced) continue;
      const inner = await resolve(referenced, id, depth + 1);
      // dependencies first, so that a schema is always read after what it names
      for (const r of inner.references) if (!references.some((known) => known.name === r.name)) references.push(r);
      references.push({ name: reference.name, type: inner.type, schema: inner.schema });
    }
    return { id, type: answer.schemaType ?? 'AVRO', schema: answer.schema, references };
  }

  async function schemaOf(id: number): Promise<RegistrySchema | null> {
    const cached = found.get(id);
    if (cached) return cached;
    const missingSince = missing.get(id);
    if (missingSince !== undefined && Date.now() - missingSince < missingTtlMs) return null;
    const answer = await get(`/schemas/ids/${id}`);
    if (!answer) {
      missing.set(id, Date.now());
      return null;
    }
    const schema = resolve(answer, id, 0);
    found.set(id, schema);
    schema.catch(() => found.delete(id));
    return schema;
  }

  return {
    url: base,
    async schemaById(id) {
      const garbled = unreadable.get(id);
      if (garbled && Date.now() - garbled.since < missingTtlMs) return garbled.schema;
      try {
        return await schemaOf(id);
      } catch (error) {
        if (!(error instanceof NotASchema)) throw error;
        const schema: UnreadableSchema = { id, unreadable: `the Schema Registry's answer for schema id ${id} is not a schema: ${error.message}` };
        unreadable.set(id, { since: Date.now(), schema });
        return schema;
      }
    },
  };
}

/** The registry answered a registration with an error: the schema was not registered. */
export class RegistryRefusedError extends Error {
  override name = 'RegistryRefusedError';
  constructor(readonly url: string, readonly subject: string, readonly status: number, readonly reason: string) {
    super(`the Schema Registry at ${url} refused the schema for subject "${subject}" (HTTP ${status}): ${reason}`);
  }
}

/**
 * Registers a schema under a subject (POST /subjects/{subject}/versions) and returns its
 * registry-wide id; a schema the subject already has keeps its id. One try: a
 * registration is made by a person at a command line, who can run it again.
 */
export async function registerSchema(url: string, subject: string, type: SchemaType, schema: string, options: Pick<RegistryOptions, 'user' | 'password' | 'timeoutMs'> = {}, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { base, headers } = registryAccess(url, options, env);
  let response: Response;
  try {
    response = await fetch(`${base}/subjects/${encodeURIComponent(subject)}/versions`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify(type === 'AVRO' ? { schema } : { schema, schemaType: type }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new RegistryUnavailableError(base, cause?.code ?? cause?.message ?? (error as Error).message);
  }
  const text = await response.text();
  let answer: { id?: unknown; message?: unknown } | undefined;
  try {
    answer = JSON.parse(text) as typeof answer;
  } catch {
    answer = undefined;
  }
  if (response.ok && typeof answer?.id === 'number') return answer.id;
  if (response.status >= 500 || response.status === 401 || response.status === 403) throw new RegistryUnavailableError(base, `HTTP ${response.status} for a registration under ${subject}`);
  const reason = typeof answer?.message === 'string' ? answer.message : text.slice(0, 200) || 'no reason given';
  throw new RegistryRefusedError(base, subject, response.status, reason);
}

/** One try that got no usable answer: tried again, and after the last try the registry is unavailable. */
class Unanswered extends Error {}

/** One try answered HTTP 200 with something that is not a schema: tried again, and after the last try the id is unreadable. */
class NotASchema extends Unanswered {}

const schemaTypes: readonly unknown[] = ['AVRO', 'PROTOBUF', 'JSON'] satisfies SchemaType[];

/** Why a registry's JSON answer is not a schema (the fields this client reads), if it is not. */
function answerProblem(answer: unknown): string | undefined {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return 'is not a JSON object';
  const { schema, schemaType, references } = answer as Record<string, unknown>;
  if (typeof schema !== 'string') return 'has no schema text';
  if (schemaType !== undefined && !schemaTypes.includes(schemaType)) return 'names no schema type this client knows';
  if (references === undefined) return undefined;
  const wellFormed = Array.isArray(references) && references.every((r: unknown) => typeof r === 'object' && r !== null && typeof (r as { name?: unknown }).name === 'string' && typeof (r as { subject?: unknown }).subject === 'string' && Number.isInteger((r as { version?: unknown }).version));
  return wellFormed ? undefined : 'has references that are not a list of name, subject and version';
}

/** What the registry said, short enough for an error row: its first 200 characters, as JSON text (quotes and control characters escaped). */
export function excerpt(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

const registries = new Map<string, SchemaRegistry>();

/** The process's registry client for `url`: one per URL, so its cache of schemas serves every build. */
export function defaultRegistry(url: string): SchemaRegistry {
  let registry = registries.get(url);
  if (!registry) {
    registry = schemaRegistry(url);
    registries.set(url, registry);
  }
  return registry;
}
