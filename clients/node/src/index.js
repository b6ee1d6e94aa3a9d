// Fairway's producer for Node.js: enqueue jobs that Fairway's Python workers run.
// The wire format and keys are docs/protocol.md's; this file follows it with no Python in sight.
// Every option is checked here, where the caller can still be told what to fix, and the protocol's
// limits are enforced again inside Redis by the enqueue scripts (scripts/, from `fairway scripts`).

import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createClient } from 'redis';

/** The protocol's limits (docs/protocol.md, "Limits"). */
export const LIMITS = Object.freeze({
  documentBytes: 512 * 1024,
  documentsPerCall: 1000,
  delaySeconds: 366 * 86400,
  timeoutSeconds: 7 * 86400,
  maxTries: 1000,
  depth: 64,
  uniqueKeyBytes: 200,
  uniqueForSeconds: 366 * 86400,
  resultTtlSeconds: 30 * 86400,
});
export const PROTOCOL_VERSION = 1;

const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$/;
const TENANT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const TENANT_PREFIX = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,31}$/;
const HANDLER = /^[A-Za-z_][A-Za-z0-9_.:]{0,199}$/;
const JOB_ID = /^[A-Za-z0-9_.:-]{1,256}$/;
const PREFIX = /^[A-Za-z0-9_.-]{1,32}$/;
// W3C Trace Context (docs/traces.md): what OpenTelemetry's propagator writes as `traceparent`.
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
// The codes the enqueue scripts refuse a call with (docs/protocol.md, "Refusals"); nothing was written.
const REFUSALS = new Set(['TOO_LARGE', 'TOO_MANY', 'NO_DOCUMENTS', 'BAD_DOCUMENT', 'BAD_ID', 'BAD_HANDLER', 'BAD_QUEUE',
  'BAD_TENANT', 'MISMATCH', 'BAD_DELAY', 'BAD_KEYS', 'BAD_UNIQUE', 'BAD_BATCH']);

/** Bad input: the message names the field and the fix; `code` is the protocol's refusal code. */
export class JobError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'JobError';
    this.code = code;
  }
}

/** The job failed for good: `exception` is its exception's type name, `message` its text. */
export class JobFailedError extends Error {
  constructor(jobId, exception, message, attempts) {
    super(`job ${jobId} failed${attempts ? ` after ${attempts} attempt${attempts === 1 ? '' : 's'}` : ''}: ${exception}: ${message}`);
    this.name = 'JobFailedError';
    Object.assign(this, { jobId, exception, attempts });
    this.failure = message;
  }
}

/** The job was cancelled (docs/cancel.md): it never ran, or it stopped when told. */
export class JobCancelledError extends Error {
  constructor(jobId) {
    super(`job ${jobId} was cancelled`);
    this.name = 'JobCancelledError';
    this.jobId = jobId;
  }
}

// How long a running job's cancel flag is kept (ms): its worker tells it within seconds (docs/cancel.md).
const CANCEL_FLAG_MS = 86_400_000;

/** The job finished but its value could not be kept: `code` is RESULT_TOO_LARGE or RESULT_NOT_JSON. */
export class ResultError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'ResultError';
    this.code = code;
  }
}

const SCRIPTS = Object.fromEntries(
  ['enqueue', 'enqueue_tenant', 'cancel'].map((name) => [
    name,
    readFileSync(new URL(`../scripts/${name}.lua`, import.meta.url), 'utf8'),
  ]),
);

// The options each call takes; anything else is refused (BAD_OPTION), so a misspelt `delay` never
// passes silently. The handler's keyword arguments go in `kwargs`, whatever their names.
const ENQUEUE_OPTIONS = ['queue', 'tenant', 'delay', 'maxTries', 'timeout', 'uniqueKey', 'uniqueFor', 'resultTtl', 'traceparent', 'jobId', 'kwargs'];
const MANY_OPTIONS = ['queue', 'tenant', 'kwargs'];
const CHUNK_OPTIONS = ['queue', 'tenant', 'kwargs', 'chunkSize'];

function checkOptions(call, options, known) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new JobError('BAD_OPTION', `${call}: options must be an object, e.g. { queue: 'high' }`);
  }
  const unknown = Object.keys(options).filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new JobError('BAD_OPTION', `${call} has no option "${unknown[0]}": the options are ${known.join(', ')}; `
      + `the handler's keyword arguments go in kwargs: { kwargs: { ${JSON.stringify(unknown[0])}: ... } }`);
  }
  return options;
}

function check(ok, code, message) {
  if (!ok) throw new JobError(code, message);
}

function checkQueue(queue) {
  check(typeof queue === 'string' && QUEUE_NAME.test(queue), 'BAD_QUEUE',
    `queue ${JSON.stringify(queue)} is invalid: start with a letter or digit, then letters, digits, _ . : - (at most 63 characters)`);
  return queue;
}

function checkTenant(tenant) {
  check(typeof tenant === 'string' && TENANT_ID.test(tenant), 'BAD_TENANT',
    `tenant id ${JSON.stringify(tenant)} is invalid: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit (no braces, colons, spaces or wildcards)`);
  return tenant;
}

function delayMs(delay) {
  if (delay === undefined || delay === null) return 0;
  check(typeof delay === 'number' && Number.isFinite(delay), 'BAD_DELAY',
    `delay ${String(delay)} is not a number of seconds; pass e.g. { delay: 30 }`);
  check(delay >= 0 && delay <= LIMITS.delaySeconds, 'BAD_DELAY',
    `delay ${delay} s is out of range: give 0 to ${LIMITS.delaySeconds} seconds`);
  // Down to whole ms of the decimal as written (docs/protocol.md): 1.001 s is 1001 ms, not 1000.
  return Math.floor(Number((delay * 1000).toFixed(6)));
}

function depthOf(value) {
  let deepest = 0;
  const stack = [[value, 1]];
  while (stack.length) {
    const [node, level] = stack.pop();
    if (node !== null && typeof node === 'object') {
      deepest = Math.max(deepest, level);
      if (level > LIMITS.depth) return level;
      for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, level + 1]);
    }
  }
  return deepest;
}

function jsonValue(key, value) {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new JobError('BAD_VALUE', `args/kwargs must be JSON: ${value} is not allowed (NaN and Infinity are not JSON)`);
  }
  if (typeof value === 'bigint') {
    throw new JobError('BAD_VALUE', 'args/kwargs must be JSON: a BigInt is not; pass it as a string');
  }
  return value;
}

// JSON with object keys sorted and no whitespace: the text a unique job's default key is the SHA-1 of.
function canonicalJson(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(',')}}`;
  }
  return JSON.stringify(value, jsonValue);
}

/**
 * The unique key of a job that sets `uniqueFor` and no `uniqueKey` (docs/protocol.md, "Unique jobs"):
 * `sha1:` and the hex SHA-1 of `[handler, args, kwargs]` as canonical JSON, as every producer derives it.
 */
export function defaultUniqueKey(handler, args, kwargs) {
  return `sha1:${createHash('sha1').update(canonicalJson([handler, args, kwargs]), 'utf8').digest('hex')}`;
}

function checkUnique(document, uniqueKey, uniqueFor, handler, args, kwargs) {
  if (uniqueFor !== undefined && uniqueFor !== null) {
    check(typeof uniqueFor === 'number' && Number.isFinite(uniqueFor) && uniqueFor >= 0.001
      && uniqueFor <= LIMITS.uniqueForSeconds, 'BAD_UNIQUE',
      `uniqueFor ${String(uniqueFor)} is out of range: give seconds from 0.001 to ${LIMITS.uniqueForSeconds} (e.g. uniqueFor: 60), or leave it out to hold the key until the job settles`);
    uniqueKey ??= defaultUniqueKey(handler, args, kwargs);
  }
  if (uniqueKey === undefined || uniqueKey === null) return;
  check(typeof uniqueKey === 'string' && Buffer.byteLength(uniqueKey, 'utf8') >= 1
    && Buffer.byteLength(uniqueKey, 'utf8') <= LIMITS.uniqueKeyBytes && !/[\u0000-\u001f\u007f]/.test(uniqueKey), 'BAD_UNIQUE',
    `uniqueKey ${JSON.stringify(String(uniqueKey).slice(0, 80))} is invalid: give 1-${LIMITS.uniqueKeyBytes} bytes of text without control characters (e.g. 'invoice:42')`);
  document.unique_key = uniqueKey;
  if (uniqueFor !== undefined && uniqueFor !== null) document.unique_for = uniqueFor;
}

/**
 * Build one job document (docs/protocol.md, "The job document"): the same fields, in the same
 * order, as Fairway's Python client writes. Returns the JSON text.
 */
export function buildDocument({ handler, queue, args = [], kwargs = {}, tenant, maxTries, timeout, uniqueKey, uniqueFor, resultTtl, traceparent, jobId, delay },
  now = Date.now(), limit = LIMITS.documentBytes) {
  check(typeof handler === 'string' && HANDLER.test(handler), 'BAD_HANDLER',
    `handler ${JSON.stringify(handler)} is not a handler name: start with a letter or _, then letters, digits, _ . : (at most 200)`);
  check(Array.isArray(args), 'BAD_DOCUMENT', 'args must be an array');
  check(kwargs !== null && typeof kwargs === 'object' && !Array.isArray(kwargs), 'BAD_DOCUMENT', 'kwargs must be an object');
  const id = jobId ?? randomUUID().replaceAll('-', '');
  check(typeof id === 'string' && JOB_ID.test(id), 'BAD_ID',
    `job id ${JSON.stringify(id)} is invalid: use 1-256 letters, digits, '_', '.', ':' or '-'`);
  const document = { id, v: PROTOCOL_VERSION, handler, queue, args, kwargs, attempts: 0, enqueued_at: now };
  if (tenant !== undefined && tenant !== null) document.tenant = checkTenant(tenant);
  if (maxTries !== undefined && maxTries !== null) {
    check(Number.isInteger(maxTries) && maxTries >= 1 && maxTries <= LIMITS.maxTries, 'BAD_TRIES',
      `maxTries ${String(maxTries)} is out of range: give a whole number from 1 to ${LIMITS.maxTries}`);
    document.max_tries = maxTries;
  }
  if (timeout !== undefined && timeout !== null) {
    check(typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0 && timeout <= LIMITS.timeoutSeconds,
      'BAD_TIMEOUT', `timeout ${String(timeout)} is out of range: give seconds, more than 0 and at most ${LIMITS.timeoutSeconds}`);
    document.timeout = timeout;
  }
  checkUnique(document, uniqueKey, uniqueFor, handler, args, kwargs);
  if (resultTtl !== undefined && resultTtl !== null) {
    check(typeof resultTtl === 'number' && Number.isFinite(resultTtl) && resultTtl >= 1 && resultTtl <= LIMITS.resultTtlSeconds,
      'BAD_RESULT_TTL', `resultTtl ${String(resultTtl)} is out of range: give seconds from 1 to ${LIMITS.resultTtlSeconds} (e.g. resultTtl: 3600)`);
    document.result_ttl = resultTtl;
  }
  if (traceparent !== undefined && traceparent !== null) {
    check(typeof traceparent === 'string' && TRACEPARENT.test(traceparent), 'BAD_TRACE',
      `traceparent ${JSON.stringify(traceparent)} is not a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lowercase, ids not all zeros`);
    document.traceparent = traceparent;
  }
  const ms = delayMs(delay);
  if (ms) document.available_at = now + ms;
  const text = JSON.stringify(document, jsonValue);
  const bytes = Buffer.byteLength(text, 'utf8');
  check(bytes <= limit, 'TOO_LARGE',
    `job payload is ${bytes} bytes, over the ${limit}-byte limit; split the work into smaller jobs with enqueueChunked(handler, rows, { chunkSize })`);
  check(depthOf(document) <= LIMITS.depth, 'TOO_DEEP', `args/kwargs are nested deeper than ${LIMITS.depth - 2} levels; flatten them`);
  return text;
}

export class Client {
  /**
   * @param {object} [options]
   * @param {string} [options.url] Redis URL (default: FAIRWAY_REDIS_URL, else redis://127.0.0.1:6379)
   * @param {object} [options.redis] an already created node-redis client to use instead of `url`
   */
  constructor({ url, redis, prefix = 'fairway', tenantPrefix = 'tenant-', maxPayloadBytes = LIMITS.documentBytes } = {}) {
    if (!PREFIX.test(prefix)) throw new TypeError(`prefix ${JSON.stringify(prefix)} is invalid: 1-32 letters, digits, _ . -`);
    if (!TENANT_PREFIX.test(tenantPrefix)) throw new TypeError(`tenantPrefix ${JSON.stringify(tenantPrefix)} is invalid: start with a letter or digit, then letters, digits, _ . : - (at most 32)`);
    if (!Number.isInteger(maxPayloadBytes) || maxPayloadBytes < 1 || maxPayloadBytes > LIMITS.documentBytes) {
      throw new TypeError(`maxPayloadBytes must be from 1 to ${LIMITS.documentBytes} (the protocol's limit); got ${maxPayloadBytes}`);
    }
    this.redis = redis ?? createClient({ url: url ?? process.env.FAIRWAY_REDIS_URL ?? 'redis://127.0.0.1:6379' });
    this.prefix = prefix;
    this.tenantPrefix = tenantPrefix;
    this.maxPayloadBytes = maxPayloadBytes;
    this.shas = {};
  }

  /** Create a client and connect it. */
  static async connect(options = {}) {
    const client = new Client(options);
    if (!client.redis.isOpen) await client.redis.connect();
    return client;
  }

  async close() {
    await this.redis.quit();
  }

  /** The document's `queue`: a queue name, or for a tenant job the tenant prefix plus the tenant id
   * (up to 32 + 64 characters: a tenant's list, not a queue name, so the queue-name rule does not apply). */
  queueFor(queue, tenant) {
    if (tenant !== undefined && tenant !== null) return `${this.tenantPrefix}${checkTenant(tenant)}`;
    return checkQueue(queue ?? 'default');
  }

  /**
   * Enqueue one job; resolves to its id. `delay`, `timeout` and `uniqueFor` are in seconds. A unique job
   * (`uniqueKey`, or `uniqueFor` alone: keyed by handler and arguments) whose key a waiting or running
   * job holds is not enqueued: it resolves to that job's id (docs/unique.md).
   * @param {string} handler @param {unknown[]} [args] @param {object} [options]
   */
  async enqueue(handler, args = [], options = {}) {
    const { queue, tenant, delay, maxTries, timeout, uniqueKey, uniqueFor, resultTtl, traceparent, jobId, kwargs } =
      checkOptions('enqueue', options, ENQUEUE_OPTIONS);
    const target = this.queueFor(queue, tenant);
    const doc = buildDocument({ handler, queue: target, args, kwargs, tenant, maxTries, timeout, uniqueKey, uniqueFor, resultTtl, traceparent, jobId, delay },
      Date.now(), this.maxPayloadBytes);
    const ms = delayMs(delay);
    let reply;
    if (tenant !== undefined && tenant !== null) {
      [reply] = await this.enqueueTenantDocuments(tenant, [doc], ms);
    } else {
      const base = `${this.prefix}:{${target}}:`;
      const keys = [`${base}ready`, `${base}notify`, `${base}delayed`, `${this.prefix}:active`, `${this.prefix}:queues`];
      reply = await this.runScript('enqueue', keys, [doc, String(ms), target]);
    }
    return typeof reply === 'string' ? reply : JSON.parse(doc).id;
  }

  /** Enqueue one job per argument array in `calls`, in order; resolves to their ids (`kwargs` goes to each). */
  async enqueueMany(handler, calls, options = {}) {
    const { queue, tenant, kwargs } = checkOptions('enqueueMany', options, MANY_OPTIONS);
    const target = this.queueFor(queue, tenant);
    const now = Date.now();
    const docs = Array.from(calls, (args) =>
      buildDocument({ handler, queue: target, args, kwargs, tenant }, now, this.maxPayloadBytes));
    if (tenant !== undefined && tenant !== null) {
      await this.enqueueTenantDocuments(tenant, docs, 0);
    } else {
      const base = `${this.prefix}:{${target}}:`;
      for (let start = 0; start < docs.length; start += LIMITS.documentsPerCall) {
        const part = docs.slice(start, start + LIMITS.documentsPerCall);
        await this.redis.multi()
          .rPush(`${base}ready`, part)
          .rPush(`${base}notify`, part.map(() => '1'))
          .sAdd(`${this.prefix}:active`, target)
          .sAdd(`${this.prefix}:queues`, target)
          .exec();
      }
    }
    return docs.map((doc) => JSON.parse(doc).id);
  }

  /** Split large work at dispatch: one job per `chunkSize` rows (its args: [rows]). */
  async enqueueChunked(handler, rows, options = {}) {
    const { chunkSize = 500, queue, tenant, kwargs } = checkOptions('enqueueChunked', options, CHUNK_OPTIONS);
    if (!Number.isInteger(chunkSize) || chunkSize < 1) throw new JobError('BAD_CHUNK_SIZE', `chunkSize ${String(chunkSize)} must be a whole number, at least 1`);
    const chunks = [];
    for (let start = 0; start < rows.length; start += chunkSize) chunks.push([rows.slice(start, start + chunkSize)]);
    return this.enqueueMany(handler, chunks, { queue, tenant, kwargs });
  }

  /**
   * A job's kept result (docs/results.md): waits up to `timeout` seconds (default 30) with one blocking
   * read on a connection of its own, resolving to the handler's return value. Rejects with a
   * JobFailedError (`exception`, `message`, `attempts`) when the job failed for good, a ResultError
   * (`code`) when its value could not be kept, and an Error when nothing came in time.
   */
  async result(jobId, { queue, tenant, timeout = 30 } = {}) {
    check(typeof jobId === 'string' && JOB_ID.test(jobId), 'BAD_ID', `job id ${JSON.stringify(jobId)} is invalid`);
    const base = this.familyOf(queue, tenant);
    const key = `${base}result:${jobId}`;
    const waiter = this.redis.duplicate();
    await waiter.connect();
    let raw;
    try {
      raw = await waiter.sendCommand(['BLMOVE', key, key, 'LEFT', 'LEFT', String(timeout)]);
      if (raw === null) {
        const record = await waiter.hGet(`${base}failed`, jobId);
        if (record) raw = JSON.stringify({ status: 'failed', ...JSON.parse(record) });
      }
    } finally {
      await waiter.quit();
    }
    if (raw === null) throw new Error(`job ${jobId}: no result within ${timeout} s (still running or waiting, not kept, or expired)`);
    const entry = JSON.parse(raw);
    if (entry.status === 'failed') throw new JobFailedError(jobId, entry.exception, entry.message, entry.attempts);
    if (entry.status === 'cancelled') throw new JobCancelledError(jobId);
    if (entry.code) throw new ResultError(entry.code, `job ${jobId}: ${entry.code}: ${entry.message}`);
    return entry.value;
  }

  /**
   * Cancel a job where it was enqueued (docs/cancel.md): resolves to `cancelled` (it was waiting or
   * delayed: it never starts), `running` (its worker tells it within seconds; it ends as cancelled),
   * `finished` (nothing to cancel) or `unknown` (no such job in that queue or tenant).
   */
  async cancel(jobId, { queue, tenant } = {}) {
    check(typeof jobId === 'string' && JOB_ID.test(jobId), 'BAD_ID', `job id ${JSON.stringify(jobId)} is invalid`);
    const base = this.familyOf(queue, tenant);
    const inGroup = tenant !== undefined && tenant !== null;
    const jobKey = inGroup ? `${tenant}\t${jobId}` : jobId;
    const waitsIn = inGroup ? `t:${tenant}` : 'ready';
    const args = [base, jobId, jobKey, waitsIn, inGroup ? `${tenant}\t` : '', String(CANCEL_FLAG_MS)];
    return String(await this.runScript('cancel', [`${base}cancel:${jobId}`], args));
  }

  /** The key prefix of a job's family: its queue's, or the tenant group's for a tenant job (both checked). */
  familyOf(queue, tenant) {
    if (tenant !== undefined && tenant !== null) return (checkTenant(tenant), `${this.prefix}:{tenants:${this.tenantPrefix}}:`);
    return `${this.prefix}:{${checkQueue(queue ?? 'default')}}:`;
  }

  /** The script's reply per document: a number when it was written, else the id holding its unique key. */
  async enqueueTenantDocuments(tenant, docs, ms) {
    const group = `${this.prefix}:{tenants:${this.tenantPrefix}}:`;
    const keys = [`${group}ring`, `${this.prefix}:active`, `${this.prefix}:queues`];
    const replies = [];
    for (let start = 0; start < docs.length; start += LIMITS.documentsPerCall) {
      const part = docs.slice(start, start + LIMITS.documentsPerCall);
      const reply = await this.runScript('enqueue_tenant', keys, [group, tenant, String(ms), `@${this.tenantPrefix}`, ...part]);
      replies.push(...(Array.isArray(reply) ? reply : part.map(() => 1)));
    }
    return replies;
  }

  /** EVALSHA, loading the script on first use or after a Redis restart; refusals become JobErrors. */
  async runScript(name, keys, args) {
    const command = (sha) => ['EVALSHA', sha, String(keys.length), ...keys, ...args];
    try {
      this.shas[name] ??= await this.redis.scriptLoad(SCRIPTS[name]);
      try {
        return await this.redis.sendCommand(command(this.shas[name]));
      } catch (error) {
        if (!String(error?.message).startsWith('NOSCRIPT')) throw error;
        this.shas[name] = await this.redis.scriptLoad(SCRIPTS[name]);
        return await this.redis.sendCommand(command(this.shas[name]));
      }
    } catch (error) {
      const code = String(error?.message ?? '').split(' ', 1)[0];
      if (REFUSALS.has(code)) throw new JobError(code, error.message);
      throw error;
    }
  }
}
