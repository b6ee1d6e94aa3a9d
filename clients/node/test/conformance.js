// The conformance vectors' rules (docs/protocol.md, "Conformance vectors"), as
// tests/support/conformance.py implements them for Python: generators, reading a database back, matching.
import { readFileSync } from 'node:fs';

export const VECTORS = new URL('../../../docs/conformance/', import.meta.url);
const ID = /^[A-Za-z0-9_.:-]{1,256}$/;
const TOLERANCE_MS = 5000;
const BIG_PREFIX = '{"id":"big","v":1,"handler":"noop","queue":"emails","args":["';
const BIG_SUFFIX = '"]}';

export function load(name) {
  return JSON.parse(readFileSync(new URL(`${name}.json`, VECTORS), 'utf8')).vectors;
}

export function expand(value) {
  if (Array.isArray(value)) {
    return value.flatMap((item) =>
      item && typeof item === 'object' && '$repeat' in item ? Array(item.$repeat).fill(expand(item.value)) : [expand(item)]);
  }
  if (value && typeof value === 'object') {
    if ('$document_of_bytes' in value) {
      const n = value.$document_of_bytes;
      return BIG_PREFIX + 'x'.repeat(n - BIG_PREFIX.length - BIG_SUFFIX.length) + BIG_SUFFIX;
    }
    if ('$string_of_bytes' in value) return 'x'.repeat(value.$string_of_bytes);
    if ('$nested_list' in value) {
      let nested = [];
      for (let level = 1; level < value.$nested_list; level += 1) nested = [nested];
      return nested;
    }
    if ('$number' in value) return Number(value.$number);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v)]));
  }
  return value;
}

export async function dump(redis) {
  const out = {};
  for (const key of await redis.keys('*')) {
    const kind = await redis.type(key);
    if (kind === 'list') out[key] = { list: await redis.lRange(key, 0, -1) };
    else if (kind === 'set') out[key] = { set: (await redis.sMembers(key)).sort() };
    else if (kind === 'zset') out[key] = { zset: (await redis.zRangeWithScores(key, 0, -1)).map((e) => [e.value, e.score]) };
    else if (kind === 'hash') out[key] = { hash: await redis.hGetAll(key) };
    else out[key] = { string: await redis.get(key) };
  }
  return out;
}

export class Clock {
  static async start(redis) {
    const clock = new Clock();
    clock.redis = redis;
    clock.local = [Date.now(), 0];
    clock.server = [await clock.redisMs(), 0];
    return clock;
  }

  async redisMs() {
    const [seconds, micros] = await this.redis.sendCommand(['TIME']);
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  async stop() {
    this.local[1] = Date.now();
    this.server[1] = await this.redisMs();
  }
}

export function mismatches(expected, actual, clock) {
  const problems = [];
  for (const key of [...new Set([...Object.keys(expected), ...Object.keys(actual)])].sort()) {
    if (!(key in actual)) problems.push(`${key}: missing`);
    else if (!(key in expected)) problems.push(`${key}: written but not expected: ${JSON.stringify(actual[key]).slice(0, 200)}`);
    else problems.push(...matchKey(expand(expected[key]), actual[key], clock).map((p) => `${key}: ${p}`));
  }
  return problems;
}

function matchKey(want, got, clock) {
  const [kind, items] = Object.entries(want)[0];
  const [gotKind, gotItems] = Object.entries(got)[0];
  if (kind !== gotKind) return [`is a ${gotKind}, expected a ${kind}`];
  if (kind === 'set') {
    const sorted = [...items].sort();
    return JSON.stringify(sorted) === JSON.stringify(gotItems) ? [] : [`${gotItems} != ${sorted}`];
  }
  if (kind === 'string' || kind === 'hash') { // exact bytes
    const same = JSON.stringify(kind === 'hash' ? Object.fromEntries(Object.entries(items).sort()) : items)
      === JSON.stringify(kind === 'hash' ? Object.fromEntries(Object.entries(gotItems).sort()) : gotItems);
    return same ? [] : [`${JSON.stringify(gotItems).slice(0, 200)} != ${JSON.stringify(items).slice(0, 200)}`];
  }
  if (items.length !== gotItems.length) return [`${gotItems.length} entries, expected ${items.length}`];
  return items.flatMap((w, i) => kind === 'zset'
    ? [...matchMember(w[0], gotItems[i][0], clock), ...matchScalar(w[1], gotItems[i][1], clock).map((p) => `score ${p}`)].map((p) => `[${i}] ${p}`)
    : matchMember(w, gotItems[i], clock).map((p) => `[${i}] ${p}`));
}

function matchMember(want, got, clock) {
  if (typeof want === 'string') return want === got ? [] : [`${got.slice(0, 120)} != ${want.slice(0, 120)}`];
  if ('tenant' in want) {
    const tab = got.indexOf('\t');
    if (got.slice(0, tab) !== want.tenant) return [`tenant ${got.slice(0, tab)} != ${want.tenant}`];
    got = got.slice(tab + 1);
  }
  let document;
  try {
    document = JSON.parse(got);
  } catch {
    return [`not JSON: ${got.slice(0, 120)}`];
  }
  return [...matchValue(want.document, document, clock, 'document'), ...matchRelative(want.document, document)];
}

// `"$enqueued_at+N"`: exactly the document's own enqueued_at plus N (no clock tolerance).
function matchRelative(want, got) {
  if (!want || typeof want !== 'object' || !got || typeof got !== 'object') return [];
  return Object.entries(want)
    .filter(([, value]) => typeof value === 'string' && value.startsWith('$enqueued_at+'))
    .flatMap(([key, value]) => {
      const expected = (got.enqueued_at ?? 0) + Number(value.split('+')[1]);
      return got[key] === expected ? [] : [`document.${key}: ${got[key]} != enqueued_at + ${value.split('+')[1]}`];
    });
}

function matchValue(want, got, clock, where) {
  if (want && typeof want === 'object' && !Array.isArray(want)) {
    if (!got || typeof got !== 'object' || Array.isArray(got)) return [`${where}: ${JSON.stringify(got)} is not an object`];
    const [w, g] = [Object.keys(want).sort(), Object.keys(got).sort()];
    if (JSON.stringify(w) !== JSON.stringify(g)) return [`${where}: fields ${g} != ${w}`];
    return w.flatMap((k) => matchValue(want[k], got[k], clock, `${where}.${k}`));
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return [`${where}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`];
    return want.flatMap((w, i) => matchValue(w, got[i], clock, `${where}[${i}]`));
  }
  return matchScalar(want, got, clock).map((p) => `${where}: ${p}`);
}

function matchScalar(want, got, clock) {
  if (typeof want === 'string' && want.startsWith('$enqueued_at+')) return Number.isInteger(got) ? [] : [`${got} is not a time in ms`];
  if (want === '$id') return typeof got === 'string' && ID.test(got) ? [] : [`${got} is not a job id`];
  if (typeof want === 'string' && (want.startsWith('$now_ms') || want.startsWith('$redis_now_ms'))) {
    const [base, offset] = want.split('+');
    const [low, high] = base === '$now_ms' ? clock.local : clock.server;
    const extra = Number(offset ?? 0);
    if (typeof got !== 'number' || (base === '$now_ms' && !Number.isInteger(got))) return [`${got} is not a time in ms`];
    const ok = low + extra - TOLERANCE_MS <= got && got <= high + extra + TOLERANCE_MS;
    return ok ? [] : [`${got} is not ${want} (${low + extra}..${high + extra})`];
  }
  return want === got ? [] : [`${JSON.stringify(got)} != ${JSON.stringify(want)}`];
}
