"""The conformance vectors in docs/conformance/ (docs/protocol.md): expanding their generators, reading
a database back, and matching it. clients/node/test/conformance.js implements the same rules."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import redis

VECTORS = Path(__file__).resolve().parents[2] / "docs" / "conformance"
ID = re.compile(r"[A-Za-z0-9_.:-]{1,256}")
TOLERANCE_MS = 5_000  # clocks: the test's, between the call and the read-back, plus Redis's
BIG_PREFIX, BIG_SUFFIX = '{"id":"big","v":1,"handler":"noop","queue":"emails","args":["', '"]}'


def load(name: str) -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads((VECTORS / f"{name}.json").read_text())["vectors"]
    return vectors


def expand(value: Any) -> Any:
    """Generators: {"$document_of_bytes": N}, {"$string_of_bytes": N}, {"$nested_list": N},
    {"$number": "NaN" | "Infinity"}; in lists, {"$repeat": N, "value": v}."""
    if isinstance(value, dict):
        if "$nested_list" in value:
            nested: list[Any] = []
            for _ in range(value["$nested_list"] - 1):
                nested = [nested]
            return nested
        if "$number" in value:
            return float(value["$number"])
        if "$document_of_bytes" in value:
            n = value["$document_of_bytes"]
            return BIG_PREFIX + "x" * (n - len(BIG_PREFIX) - len(BIG_SUFFIX)) + BIG_SUFFIX
        if "$string_of_bytes" in value:
            return "x" * value["$string_of_bytes"]
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            if isinstance(item, dict) and "$repeat" in item:
                out += [expand(item["value"])] * item["$repeat"]
            else:
                out.append(expand(item))
        return out
    return value


def dump(r: redis.Redis) -> dict[str, Any]:
    """Every key of the database as {"list"|"set"|"zset"|"hash"|"string": value}."""
    out: dict[str, Any] = {}
    for raw in r.keys("*"):
        key = raw.decode()
        kind = r.type(key).decode()
        if kind == "list":
            out[key] = {"list": [v.decode() for v in r.lrange(key, 0, -1)]}
        elif kind == "set":
            out[key] = {"set": sorted(v.decode() for v in r.smembers(key))}
        elif kind == "zset":
            out[key] = {"zset": [[m.decode(), s] for m, s in r.zrange(key, 0, -1, withscores=True)]}
        elif kind == "hash":
            out[key] = {"hash": {k.decode(): v.decode() for k, v in r.hgetall(key).items()}}
        else:
            out[key] = {"string": r.get(key).decode()}  # type: ignore[union-attr]
    return out


class Clock:
    """The window a call happened in, on the test's clock and on Redis's, for `$now_ms` matchers."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r
        self.local = (_ms(), 0)
        self.redis = (self._redis_ms(), 0)

    def _redis_ms(self) -> int:
        seconds, micros = self.r.time()
        return int(seconds) * 1000 + int(micros) // 1000

    def stop(self) -> None:
        self.local = (self.local[0], _ms())
        self.redis = (self.redis[0], self._redis_ms())


def _ms() -> int:
    import time

    return int(time.time() * 1000)


def mismatches(expected: dict[str, Any], actual: dict[str, Any], clock: Clock) -> list[str]:
    """What differs between a vector's expected state and the database, as readable lines."""
    problems = []
    for key in sorted(set(expected) | set(actual)):
        if key not in actual:
            problems.append(f"{key}: missing")
        elif key not in expected:
            problems.append(f"{key}: written but not expected: {str(actual[key])[:200]}")
        else:
            problems += [f"{key}: {p}" for p in _match_key(expand(expected[key]), actual[key], clock)]
    return problems


def _match_key(want: dict[str, Any], got: dict[str, Any], clock: Clock) -> list[str]:
    (kind, items), (got_kind, got_items) = next(iter(want.items())), next(iter(got.items()))
    if kind != got_kind:
        return [f"is a {got_kind}, expected a {kind}"]
    if kind == "set":
        return [] if sorted(items) == got_items else [f"{got_items} != {sorted(items)}"]
    if kind in ("string", "hash"):  # exact bytes
        return [] if items == got_items else [f"{str(got_items)[:200]} != {str(items)[:200]}"]
    if len(items) != len(got_items):
        return [f"{len(got_items)} entries, expected {len(items)}"]
    problems = []
    for index, (w, g) in enumerate(zip(items, got_items, strict=True)):
        if kind == "zset":
            problems += [f"[{index}] {p}" for p in _match_member(w[0], g[0], clock)]
            problems += [f"[{index}] score {p}" for p in _match_scalar(w[1], g[1], clock)]
        else:
            problems += [f"[{index}] {p}" for p in _match_member(w, g, clock)]
    return problems


def _match_member(want: Any, got: str, clock: Clock) -> list[str]:
    if isinstance(want, str):
        return [] if want == got else [f"{got[:120]!r} != {want[:120]!r}"]
    if "tenant" in want:
        tenant, _, rest = got.partition("\t")
        if tenant != want["tenant"]:
            return [f"tenant {tenant!r} != {want['tenant']!r}"]
        got = rest
    try:
        document = json.loads(got)
    except ValueError:
        return [f"not JSON: {got[:120]!r}"]
    return _match_value(want["document"], document, clock, "document") + _match_relative(want["document"], document)


def _match_relative(want: Any, got: Any) -> list[str]:
    """`"$enqueued_at+N"`: exactly the document's own enqueued_at plus N (no clock tolerance), so a
    vector can pin a rounding to the millisecond."""
    if not isinstance(want, dict) or not isinstance(got, dict):
        return []
    problems = []
    for key, value in want.items():
        if isinstance(value, str) and value.startswith("$enqueued_at+"):
            expected = got.get("enqueued_at", 0) + int(value.partition("+")[2])
            if got.get(key) != expected:
                problems.append(f"document.{key}: {got.get(key)!r} != enqueued_at + {value.partition('+')[2]}")
    return problems


def _match_value(want: Any, got: Any, clock: Clock, where: str) -> list[str]:
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where}: {got!r} is not an object"]
        if set(want) != set(got):
            return [f"{where}: fields {sorted(got)} != {sorted(want)}"]
        return [p for k in want for p in _match_value(want[k], got[k], clock, f"{where}.{k}")]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{where}: {got!r} != {want!r}"]
        return [
            p
            for i, (w, g) in enumerate(zip(want, got, strict=True))
            for p in _match_value(w, g, clock, f"{where}[{i}]")
        ]
    return [f"{where}: {p}" for p in _match_scalar(want, got, clock)]


def _match_scalar(want: Any, got: Any, clock: Clock) -> list[str]:
    if isinstance(want, str) and want.startswith("$enqueued_at+"):  # exact: _match_relative checks it
        return [] if isinstance(got, int) and not isinstance(got, bool) else [f"{got!r} is not a time in ms"]
    if isinstance(want, str) and want == "$id":
        return [] if isinstance(got, str) and ID.fullmatch(got) else [f"{got!r} is not a job id"]
    if isinstance(want, str) and want.startswith(("$now_ms", "$redis_now_ms")):
        base, _, offset = want.partition("+")
        low, high = clock.local if base == "$now_ms" else clock.redis
        extra = int(offset or 0)
        if (
            isinstance(got, bool)
            or not isinstance(got, int | float)
            or (base == "$now_ms" and not isinstance(got, int))
        ):
            return [f"{got!r} is not a time in ms"]
        ok = low + extra - TOLERANCE_MS <= got <= high + extra + TOLERANCE_MS
        return [] if ok else [f"{got} is not {want} ({low + extra}..{high + extra})"]
    if type(want) is not type(got) and not (isinstance(want, int | float) and isinstance(got, int | float)):
        return [f"{got!r} != {want!r}"]
    return [] if want == got else [f"{got!r} != {want!r}"]
