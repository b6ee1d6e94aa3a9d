"""Balance modes as one typed policy: what `none`, `simple` and `auto` mean, as data.

Every layer asks the policy a question (one shared pool? does the balancer resize pools? by share
of load or by backlog?) instead of comparing the mode's name, so a new mode is one row in POLICIES;
likewise a scaling strategy is one row in STRATEGIES.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Balance(StrEnum):
    NONE = "none"
    SIMPLE = "simple"
    AUTO = "auto"


class ScalingStrategy(StrEnum):
    """How `auto` measures a pool's load: time to clear (ready x average runtime), or ready jobs alone."""

    TIME = "time"
    SIZE = "size"


@dataclass(frozen=True)
class StrategyRule:
    """What a scaling strategy means, as data: every layer asks the rule, never the strategy's name."""

    weighs_runtime: bool  # a pool's load is its jobs x their average runtime (else its jobs alone)


DEFAULT_STRATEGY = ScalingStrategy.TIME  # the spec's default, and the planner's and the baseline's

STRATEGIES: dict[ScalingStrategy, StrategyRule] = {
    ScalingStrategy.TIME: StrategyRule(weighs_runtime=True),
    ScalingStrategy.SIZE: StrategyRule(weighs_runtime=False),
}


@dataclass(frozen=True)
class BalancePolicy:
    shared_pool: bool  # one pool serves every queue (and the tenant group) in weighted order; weights apply
    resized: bool  # the balancer loop changes pool sizes every cooldown (else sizes are fixed by the spec)
    by_share: bool  # pools are sized by their share of the supervisor's load (else one pool, by backlog)


POLICIES: dict[Balance, BalancePolicy] = {
    Balance.NONE: BalancePolicy(shared_pool=True, resized=True, by_share=False),
    Balance.SIMPLE: BalancePolicy(shared_pool=False, resized=False, by_share=False),
    Balance.AUTO: BalancePolicy(shared_pool=False, resized=True, by_share=True),
}


def shared_pool_cel(field: str = "self.balance") -> str:
    """CEL that holds when the mode in `field` runs one shared pool (for the CRD's rules)."""
    return " || ".join(f"{field} == '{mode.value}'" for mode, policy in POLICIES.items() if policy.shared_pool)
