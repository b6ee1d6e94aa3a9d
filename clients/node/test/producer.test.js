// The Node producer against a real Redis and a real Python `fairway worker`, and the conformance
// vectors. Run by the Python suite (tests/integration/protocol/test_node_client.py), which starts the
// Redis and passes REDIS_URL and FAIRWAY_BIN; `npm test` with those set runs them alone.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createClient } from 'redis';

import { Client, JobCancelledError, JobError, JobFailedError, LIMITS } from '../src/index.js';
import { Clock, dump, expand, load, mismatches } from './conformance.js';

const run = promisify(execFile);
const REDIS_URL = process.env.REDIS_URL;
const FAIRWAY = process.env.FAIRWAY_BIN;
if (!REDIS_URL || !FAIRWAY) throw new Error('set REDIS_URL (a Redis the tests may flush) and FAIRWAY_BIN (the fairway command)');
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

let redis;
let client;
before(async () => {
  redis = createClient({ url: REDIS_URL });
  await redis.connect();
  client = await Client.connect({ url: REDIS_URL });
});
after(async () => {
  await client.close();
  await redis.quit();
});
beforeEach(async () => {
  await redis.flushAll();
});

async function callNodeClient(call) {
  if (Array.isArray(call)) { // calls in order: their ids joined
    const ids = [];
    for (const one of call) ids.push(...await callNodeClient(one));
    return ids;
  }
  const [[op, raw]] = Object.entries(call);
  const spec = expand(raw);
  const where = { queue: spec.queue, tenant: spec.tenant };
  if (op === 'enqueue') {
    return [await client.enqueue(spec.handler, spec.args ?? [], {
      ...where, delay: spec.delay, maxTries: spec.max_tries, timeout: spec.timeout, uniqueKey: spec.unique_key,
      uniqueFor: spec.unique_for, traceparent: spec.traceparent, jobId: spec.job_id, kwargs: spec.kwargs,
    })];
  }
  if (op === 'enqueue_many') return client.enqueueMany(spec.handler, spec.calls, spec.kwargs ? { ...where, kwargs: spec.kwargs } : where);
  if (op === 'enqueue_chunked') return client.enqueueChunked(spec.handler, spec.rows, { ...where, chunkSize: spec.chunk_size });
  throw new Error(`unknown call ${op}`);
}

describe('conformance: calls', () => {
  for (const vector of load('calls')) {
    test(vector.name, async () => {
      const clock = await Clock.start(redis);
      if (vector.expect.refused) {
        await assert.rejects(callNodeClient(vector.call), (error) =>
          error instanceof JobError && error.code === vector.expect.refused);
      } else {
        const ids = await callNodeClient(vector.call);
        if (vector.expect.ids) assert.deepEqual(ids, vector.expect.ids);
        if (!Array.isArray(vector.call)) assert.equal(new Set(ids).size, ids.length);
      }
      await clock.stop();
      assert.deepEqual(mismatches(vector.expect.redis, await dump(redis), clock), []);
    });
  }
});

describe('conformance: scripts', () => {
  const scripts = {
    enqueue: readFileSync(new URL('../scripts/enqueue.lua', import.meta.url), 'utf8'),
    enqueue_tenant: readFileSync(new URL('../scripts/enqueue_tenant.lua', import.meta.url), 'utf8'),
  };
  for (const vector of load('scripts')) {
    test(vector.name, async () => {
      const clock = await Clock.start(redis);
      const command = ['EVAL', scripts[vector.script], String(vector.keys.length), ...vector.keys, ...expand(vector.argv)];
      if (vector.expect.error) {
        await assert.rejects(redis.sendCommand(command), (error) => error.message.split(' ', 1)[0] === vector.expect.error);
      } else {
        assert.deepEqual(await redis.sendCommand(command), vector.expect.reply);
      }
      await clock.stop();
      assert.deepEqual(mismatches(vector.expect.redis, await dump(redis), clock), []);
    });
  }
});

describe('refused server-side with the documented errors', () => {
  // A raw client (no checks of its own) sends what a careless producer might: the scripts refuse it.
  let raw;
  before(() => {
    raw = new Client({ redis, tenantPrefix: 'tenant-' });
  });

  test('a tenant id with a colon, brace, space and wildcard', async () => {
    const doc = JSON.stringify({ id: 'x1', handler: 'record', queue: 'tenant-x', args: [] });
    await assert.rejects(raw.enqueueTenantDocuments('bad id:{x}*', [doc], 0), (error) =>
      error instanceof JobError && error.code === 'BAD_TENANT' && /no braces, colons, spaces or wildcards/.test(error.message));
    assert.deepEqual(await redis.keys('*'), []);
  });

  test('a 600 KiB document', async () => {
    const doc = JSON.stringify({ id: 'x2', handler: 'record', queue: 'emails', args: ['y'.repeat(600 * 1024)] });
    const base = 'fairway:{emails}:';
    await assert.rejects(
      raw.runScript('enqueue', [`${base}ready`, `${base}notify`, `${base}delayed`, 'fairway:active', 'fairway:queues'], [doc, '0', 'emails']),
      (error) => error.code === 'TOO_LARGE' && error.message.includes(`${LIMITS.documentBytes}-byte limit`));
    await assert.rejects(raw.enqueueTenantDocuments('acme', [doc], 0), (error) => error.code === 'TOO_LARGE');
    assert.deepEqual(await redis.keys('*'), []);
  });

  test('the client refuses the same before sending, naming the field', async () => {
    await assert.rejects(client.enqueue('record', [], { tenant: 'a:b' }), /tenant id "a:b" is invalid/);
    await assert.rejects(client.enqueue('record', ['z'.repeat(LIMITS.documentBytes)]), /enqueueChunked/);
    await assert.rejects(client.enqueue('record', [Number.NaN]), /NaN and Infinity are not JSON/);
    await assert.rejects(client.enqueue('record', [], { delay: -1 }), (error) => error.code === 'BAD_DELAY');
    assert.deepEqual(await redis.keys('*'), []);
  });

  test('a misspelt option is refused, never dropped: handler kwargs go in kwargs', async () => {
    for (const [call, options] of [
      [() => client.enqueue('record', [], { delay_s: 60 }), 'delay_s'],
      [() => client.enqueue('record', [], { maxtries: 3 }), 'maxtries'],
      [() => client.enqueueMany('record', [[1]], { delay: 5 }), 'delay'],
      [() => client.enqueueChunked('record', [1, 2], { chunk_size: 1 }), 'chunk_size'],
    ]) {
      await assert.rejects(call(), (error) => error.code === 'BAD_OPTION' && error.message.includes(`"${options}"`)
        && error.message.includes('kwargs'));
    }
    assert.deepEqual(await redis.keys('*'), []);
    const id = await client.enqueue('record', [], { kwargs: { queue: 'q', timeout: 1, jobId: 'j', delay: 2 } });
    const [doc] = await redis.lRange('fairway:{default}:ready', 0, -1);
    const parsed = JSON.parse(doc);
    assert.equal(parsed.id, id);
    assert.deepEqual(parsed.kwargs, { queue: 'q', timeout: 1, jobId: 'j', delay: 2 });
    assert.equal(parsed.timeout, undefined);
    assert.equal(parsed.queue, 'default');
  });
});

describe('jobs from Node run exactly once on a Python worker', () => {
  const unicode = ['Zoë 👋 日本語 — ünïcødé', { emoji: '🎉', 'ключ': 'значение', nested: [[1, [2, [3, { d: null }]]], true, 2.5] }];
  const fifty = { rows: Array.from({ length: 500 }, (_, i) => ({ i, text: `row ${i} ${'é'.repeat(40)}` })) };

  test('plain, tenant, delayed and chunked; arguments byte-identical; queues listed before any worker ran', async () => {
    assert.ok(Buffer.byteLength(JSON.stringify(fifty)) > 50_000);
    const sent = new Map();
    const remember = (ids, args, kwargs = {}) => ids.forEach((id, i) => sent.set(id, { args: Array.isArray(args[0]) ? args[i] : args, kwargs }));
    remember([await client.enqueue('record', unicode, { queue: 'emails' })], unicode);
    remember([await client.enqueue('record', [fifty], { queue: 'emails', kwargs: { note: 'fünfzig' } })], [fifty], { note: 'fünfzig' });
    remember([await client.enqueue('record', ['later'], { queue: 'emails', delay: 1 })], ['later']);
    remember([await client.enqueue('record', unicode, { tenant: 'acme' })], unicode);
    remember([await client.enqueue('record', ['tenant later'], { tenant: 'globex', delay: 1 })], ['tenant later']);
    const rows = Array.from({ length: 7 }, (_, i) => `row-${i}-ø`);
    const chunkIds = await client.enqueueChunked('record', rows, { chunkSize: 3, tenant: 'acme' });
    remember(chunkIds, [[rows.slice(0, 3)], [rows.slice(3, 6)], [rows.slice(6)]]);
    const plainChunks = await client.enqueueChunked('record', rows, { chunkSize: 4, queue: 'imports' });
    remember(plainChunks, [[rows.slice(0, 4)], [rows.slice(4)]]);

    const { stdout } = await run(FAIRWAY, ['queues', '--redis', REDIS_URL, '--json']);
    const listed = Object.fromEntries(JSON.parse(stdout).map((row) => [row.queue, row]));
    assert.deepEqual(Object.keys(listed).sort(), ['@tenant-', 'emails', 'imports']);
    assert.equal(listed.emails.ready, 2);
    assert.equal(listed.emails.delayed, 1);
    assert.equal(listed.imports.ready, 2);
    assert.equal(listed['@tenant-'].ready, 4);
    assert.equal(listed['@tenant-'].delayed, 1);

    const record = join(mkdtempSync(join(tmpdir(), 'fairway-node-')), 'record.jsonl');
    const worker = await run(FAIRWAY, [
      'worker', '--redis', REDIS_URL, '--queues', 'emails,imports', '--tenants', 'tenant-',
      '--handlers', 'node_e2e_handlers', '--burst', '--log-format', 'json',
    ], { env: { ...process.env, PYTHONPATH: FIXTURES, NODE_E2E_RECORD: record }, timeout: 60_000 });
    const outcomes = worker.stdout.trim().split('\n').map((line) => JSON.parse(line)).filter((l) => l.event === 'job.finished');
    assert.equal(outcomes.length, sent.size);
    assert.ok(outcomes.every((l) => l.outcome === 'ok'), worker.stdout);

    assert.ok(existsSync(record));
    const seen = readFileSync(record, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    assert.deepEqual(seen.map((l) => l.id).sort(), [...sent.keys()].sort(), 'every job ran exactly once');
    for (const line of seen) {
      const { args, kwargs } = sent.get(line.id);
      assert.equal(line.args, JSON.stringify(args), `args of ${line.id} arrived byte-identical`);
      assert.equal(line.kwargs, JSON.stringify(kwargs));
      assert.equal(line.attempt, 1);
    }
    const tenants = seen.filter((l) => l.tenant).map((l) => `${l.tenant}:${l.queue}`).sort();
    assert.deepEqual(tenants, ['acme:tenant-acme', 'acme:tenant-acme', 'acme:tenant-acme', 'acme:tenant-acme', 'globex:tenant-globex']);
  });
});

describe('results written by a Python worker, read from Node', () => {
  test('a value, a tenant job\'s value, a failure after its last try, and a clear timeout', async () => {
    const product = await client.enqueue('multiply', [6, 7], { queue: 'math', resultTtl: 60 });
    const tenant = await client.enqueue('multiply', [2, 3], { tenant: 'acme', resultTtl: 60 });
    const failed = await client.enqueue('fail', ['card declined'], { queue: 'math', resultTtl: 60, maxTries: 2 });
    const waiting = client.result(product, { queue: 'math', timeout: 20 }); // waits while the worker starts
    await run(FAIRWAY, [
      'worker', '--redis', REDIS_URL, '--queues', 'math', '--tenants', 'tenant-', '--handlers', 'node_e2e_handlers', '--burst',
    ], { env: { ...process.env, PYTHONPATH: FIXTURES }, timeout: 60_000 });
    assert.deepEqual(await waiting, { product: 42 });
    assert.deepEqual(await client.result(tenant, { tenant: 'acme', timeout: 1 }), { product: 6 });
    await assert.rejects(client.result(failed, { queue: 'math', timeout: 1 }), (error) =>
      error instanceof JobFailedError && error.exception === 'JobFailed' && error.failure === 'card declined' && error.attempts === 2);
    await assert.rejects(client.result('never-enqueued', { queue: 'math', timeout: 0.2 }), /no result within 0.2 s/);
    await assert.rejects(client.enqueue('multiply', [1, 1], { resultTtl: 0 }), (error) => error.code === 'BAD_RESULT_TTL');
  });
});

describe('cancelling from Node (docs/cancel.md)', () => {
  test('waiting, delayed and tenant jobs never start; finished and unknown jobs are said to be so', async () => {
    const waiting = await client.enqueue('multiply', [1, 2], { queue: 'math', resultTtl: 60 });
    const delayed = await client.enqueue('multiply', [3, 4], { queue: 'math', delay: 60 });
    const tenant = await client.enqueue('multiply', [5, 6], { tenant: 'acme' });
    const kept = await client.enqueue('multiply', [7, 8], { tenant: 'acme', resultTtl: 60 });
    assert.equal(await client.cancel(waiting, { queue: 'math' }), 'cancelled');
    assert.equal(await client.cancel(delayed, { queue: 'math' }), 'cancelled');
    assert.equal(await client.cancel(tenant, { tenant: 'acme' }), 'cancelled');
    assert.equal(await client.cancel(waiting, { queue: 'math' }), 'finished', 'its cancelled result is kept');
    await assert.rejects(client.result(waiting, { queue: 'math', timeout: 1 }), (error) => error instanceof JobCancelledError);
    assert.equal(await client.cancel('never-enqueued', { queue: 'math' }), 'unknown');
    await run(FAIRWAY, [
      'worker', '--redis', REDIS_URL, '--queues', 'math', '--tenants', 'tenant-', '--handlers', 'node_e2e_handlers', '--burst',
    ], { env: { ...process.env, PYTHONPATH: FIXTURES }, timeout: 60_000 });
    assert.deepEqual(await client.result(kept, { tenant: 'acme', timeout: 1 }), { product: 56 }, 'the one left ran');
    assert.equal(await client.cancel(kept, { tenant: 'acme' }), 'finished');
    assert.equal(await redis.hLen('fairway:{math}:failed'), 0);
    await assert.rejects(client.cancel('bad id!', { queue: 'math' }), (error) => error.code === 'BAD_ID');
    await assert.rejects(client.cancel(waiting, { tenant: 'no spaces' }), (error) => error.code === 'BAD_TENANT');
  });

  test('a running job is told and ends as cancelled, not retried', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'fairway-node-')), 'started');
    const job = await client.enqueue('until_cancelled', [marker], { tenant: 'acme', maxTries: 3, resultTtl: 60 });
    const worker = execFile(FAIRWAY, [
      'worker', '--redis', REDIS_URL, '--tenants', 'tenant-', '--handlers', 'node_e2e_handlers', '--log-format', 'json',
      '--metrics-port', '0', '--health-port', '0',
    ], { env: { ...process.env, PYTHONPATH: FIXTURES } });
    let out = '';
    worker.stdout.on('data', (chunk) => { out += chunk; });
    const exited = new Promise((resolve) => worker.on('exit', resolve));
    try {
      for (let i = 0; i < 200 && !existsSync(marker); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(existsSync(marker), 'the handler started');
      assert.equal(await client.cancel(job, { tenant: 'acme' }), 'running');
      await assert.rejects(client.result(job, { tenant: 'acme', timeout: 20 }), (error) => error instanceof JobCancelledError);
    } finally {
      worker.kill('SIGTERM');
      await exited;
    }
    const lines = out.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line))
      .filter((line) => line.event === 'job.finished');
    assert.deepEqual(lines.map((line) => [line.outcome, line.attempt]), [['cancelled', 1]]);
  });
});
