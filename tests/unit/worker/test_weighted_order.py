"""The pure weighted ordering: every served queue once per order, paused never, proportional first picks."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from fairway.queue.protocol.scheduling import rank_table, weighted_order
from fairway.resource.names import effective_weight

names = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), min_size=1, max_size=12, unique=True)


@given(names, st.data(), st.integers(0, 2**32))
def test_every_unpaused_queue_appears_exactly_once(queues: list[str], data: st.DataObject, seed: int) -> None:
    weights = {q: data.draw(st.integers(-3, 10)) for q in queues if data.draw(st.booleans())}
    paused = set(data.draw(st.lists(st.sampled_from(queues), max_size=len(queues))))
    order = weighted_order(queues, weights, paused, random.Random(seed))
    assert sorted(order) == sorted(q for q in queues if q not in paused)
    assert len(order) == len(set(order))
    assert not paused & set(order)


@given(names, st.integers(0, 2**32))
def test_without_weights_the_order_is_strict_priority(queues: list[str], seed: int) -> None:
    assert weighted_order(queues, {}, (), random.Random(seed)) == queues
    assert weighted_order(queues, None, (), random.Random(seed)) == queues


def test_first_place_is_proportional_to_weight() -> None:
    rng = random.Random(7)
    draws = 60_000
    firsts = Counter(
        weighted_order(["high", "default", "low"], {"high": 3, "default": 2}, (), rng)[0] for _ in range(draws)
    )
    for queue, share in (("high", 3 / 6), ("default", 2 / 6), ("low", 1 / 6)):
        assert abs(firsts[queue] / draws - share) < 0.01, (queue, firsts)


def test_weights_are_relative() -> None:
    small = [weighted_order(["a", "b", "c"], {"a": 3, "b": 2, "c": 1}, (), random.Random(s)) for s in range(200)]
    large = [weighted_order(["a", "b", "c"], {"a": 30, "b": 20, "c": 10}, (), random.Random(s)) for s in range(200)]
    assert Counter(o[0] for o in small)["a"] > 60
    assert Counter(o[0] for o in large)["a"] > 60
    assert abs(Counter(o[0] for o in small)["a"] - Counter(o[0] for o in large)["a"]) < 40


def test_zero_and_negative_weights_count_as_one() -> None:
    assert [effective_weight(w) for w in (None, 0, -5, 1, 4)] == [1, 1, 1, 1, 4]
    rng = random.Random(3)
    firsts = Counter(weighted_order(["a", "b"], {"a": 0, "b": -1}, (), rng)[0] for _ in range(20_000))
    assert abs(firsts["a"] / 20_000 - 0.5) < 0.015


def test_rank_table_is_strict_ranks_without_weights_and_weights_with() -> None:
    assert rank_table(["a", "b", "c"], {}) == (True, [0, 1, 2])
    assert rank_table(["a", "b", "c"], {"a": 3, "c": 0}) == (False, [3, 1, 1])
