"""Pure queue-ordering logic: no Redis, no clock, no randomness of its own (a `random.Random` is injected).

Weights are data: a poll's order is a weighted random permutation drawn without replacement
(Efraimidis-Spirakis: sort by u ** (1 / w), u uniform), so a queue of weight 3 comes first three
times as often as one of weight 1, and every queue is in every order, so none starves. Without
weights the order is Horizon's strict left-to-right priority.

Equivalence used by the standalone hot path: the first *non-empty* queue of such a permutation is
distributed exactly as one draw among the non-empty queues with probability proportional to weight
(the largest key over any subset falls on member i with probability w_i / sum(w)). The Lua script
therefore draws among the queues that hold work instead of walking the whole order, which keeps
the cost per job flat in the number of served queues (bench/queues_scaling.py).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence

from fairway.resource.names import effective_weight


def weighted_order(
    queues: Sequence[str],
    weights: Mapping[str, int] | None,
    paused: Collection[str],
    rng: random.Random,
) -> list[str]:
    """This poll's order: every un-paused queue exactly once; strict priority when there are no weights."""
    served = [q for q in queues if q not in paused]
    if not weights:
        return served
    keyed = [(rng.random() ** (1.0 / effective_weight(weights.get(q))), q) for q in served]
    keyed.sort(key=lambda pair: pair[0], reverse=True)
    return [q for _, q in keyed]


def rank_table(queues: Sequence[str], weights: Mapping[str, int] | None) -> tuple[bool, list[int]]:
    """What the hot-path script needs per queue: (strict?, weight per queue or rank per queue)."""
    if not weights:
        return True, list(range(len(queues)))
    return False, [effective_weight(weights.get(q)) for q in queues]
