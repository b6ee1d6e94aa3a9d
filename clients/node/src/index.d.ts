// Types for @fairway/producer (src/index.js is plain JavaScript: no build step to use it).
import type { RedisClientType } from 'redis';

/** Any JSON value: what args and kwargs may hold (no NaN, Infinity, BigInt or cycles). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

export declare const PROTOCOL_VERSION: 1;
export declare const LIMITS: Readonly<{
  documentBytes: number;
  documentsPerCall: number;
  delaySeconds: number;
  timeoutSeconds: number;
  maxTries: number;
  depth: number;
  uniqueKeyBytes: number;
  uniqueForSeconds: number;
  resultTtlSeconds: number;
}>;

/** The protocol's refusal codes (docs/protocol.md): raised before sending, or by the enqueue scripts. */
export type RefusalCode =
  | 'TOO_LARGE' | 'TOO_MANY' | 'NO_DOCUMENTS' | 'BAD_DOCUMENT' | 'BAD_ID' | 'BAD_HANDLER' | 'BAD_QUEUE'
  | 'BAD_TENANT' | 'MISMATCH' | 'BAD_DELAY' | 'BAD_KEYS' | 'TOO_DEEP' | 'BAD_VALUE' | 'BAD_TRIES' | 'BAD_TIMEOUT' | 'BAD_UNIQUE' | 'BAD_RESULT_TTL'
  | 'BAD_CHUNK_SIZE' | 'BAD_OPTION' | 'BAD_TRACE' | 'BAD_BATCH';

export declare class JobError extends Error {
  readonly code: RefusalCode;
}

export interface ClientOptions {
  /** Redis URL; default FAIRWAY_REDIS_URL, else redis://127.0.0.1:6379. Standalone Redis. */
  url?: string;
  /** A node-redis client to use instead of `url` (connected or not). */
  redis?: RedisClientType<any, any, any>;
  /** Key prefix, as the workers' `prefix` (default "fairway"). */
  prefix?: string;
  /** The tenant group's queue prefix, as the workers' `--tenants` (default "tenant-"). */
  tenantPrefix?: string;
  /** Refuse documents over this many bytes (at most, and by default, 524288). */
  maxPayloadBytes?: number;
}

export interface Where {
  /** Queue name (default "default"); ignored when `tenant` is given. */
  queue?: string;
  /** Tenant id: the job goes to the tenant's queue in the tenant group. */
  tenant?: string;
}

export interface EnqueueOptions extends Where {
  /** Seconds before the job is ready (on the Redis server's clock). */
  delay?: number;
  /** Overrides the worker's `tries` (1 to 1000). */
  maxTries?: number;
  /** Seconds; overrides the worker's `timeout`. */
  timeout?: number;
  /** While a job of this queue (or tenant) with this key waits or runs, resolve to its id instead (1-200 bytes). */
  uniqueKey?: string;
  /** Hold the unique key at most this many seconds; alone, the key is the handler and its arguments. */
  uniqueFor?: number;
  /** Keep the handler's return value this many seconds after the job settles (1 to 30 days): read it with `result`. */
  resultTtl?: number;
  /** The W3C traceparent of the span that enqueues it (e.g. from OpenTelemetry's propagation.inject): the
   * worker's span for each attempt is its child (docs/traces.md). */
  traceparent?: string;
  /** Your own id (1-256 of A-Z a-z 0-9 _ . : -): enqueue again with it after a timeout so handlers can dedupe. */
  jobId?: string;
  /** Keyword arguments for the handler: any names (`queue`, `timeout` included); never read as options. */
  kwargs?: { [key: string]: Json };
}

export interface ManyOptions extends Where {
  /** Keyword arguments for every job's handler (any names). */
  kwargs?: { [key: string]: Json };
}

export interface ChunkOptions extends ManyOptions {
  /** Rows per job (default 500). */
  chunkSize?: number;
}

export declare function buildDocument(
  job: EnqueueOptions & { handler: string; queue: string; args?: Json[] },
  now?: number,
  limit?: number,
): string;

/** A unique job's key when only `uniqueFor` is given: `sha1:` + the SHA-1 of `[handler, args, kwargs]`. */
export declare function defaultUniqueKey(handler: string, args: Json[], kwargs: { [key: string]: Json }): string;

export declare class Client {
  constructor(options?: ClientOptions);
  static connect(options?: ClientOptions): Promise<Client>;
  readonly redis: RedisClientType<any, any, any>;
  /** Enqueue one job; resolves to its id, or to the id of the job holding its unique key (nothing written). */
  enqueue(handler: string, args?: Json[], options?: EnqueueOptions): Promise<string>;
  /** One job per argument array, in order, in transactions of up to 1000; resolves to the ids. */
  enqueueMany(handler: string, calls: Iterable<Json[]>, options?: ManyOptions): Promise<string[]>;
  /** Split large work at dispatch: one job per `chunkSize` rows, its args `[rows]`. */
  enqueueChunked(handler: string, rows: Json[], options?: ChunkOptions): Promise<string[]>;
  /** A job's kept result: its handler's return value; rejects with JobFailedError, JobCancelledError or ResultError. */
  result(jobId: string, options?: Where & { timeout?: number }): Promise<Json>;
  /** Cancel a job where it was enqueued: a waiting one never starts, a running one is told (docs/cancel.md). */
  cancel(jobId: string, options?: Where): Promise<'cancelled' | 'running' | 'finished' | 'unknown'>;
  close(): Promise<void>;
}

export declare class JobFailedError extends Error {
  readonly jobId: string;
  readonly exception: string;
  readonly failure: string;
  readonly attempts?: number;
}

export declare class JobCancelledError extends Error {
  readonly jobId: string;
}

export declare class ResultError extends Error {
  readonly code: 'RESULT_TOO_LARGE' | 'RESULT_NOT_JSON';
}
