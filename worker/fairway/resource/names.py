"""Names users write (queues, tenant prefixes, handler modules): one pattern each, used by every layer.

The CRD, the spec model, the worker settings, the producer and the CLI check a name with the same
pattern, so a name one of them accepts is never refused (or stranded) by another.
"""

from __future__ import annotations

import re

QUEUE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$"
# For checks outside pydantic (producer, worker settings): always with fullmatch, since `$` alone
# lets one trailing newline through ("default\n" would strand a job on a key no worker reads).
QUEUE_NAME = re.compile(QUEUE_NAME_PATTERN.removeprefix("^").removesuffix("$"))
QUEUE_NAME_RULE = "start with a letter or digit, then letters, digits, _ . : - (at most 63 characters)"
TENANT_PREFIX_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,31}$"
TENANT_PREFIX = re.compile(TENANT_PREFIX_PATTERN.removeprefix("^").removesuffix("$"))
MAX_TENANT_ID_LENGTH = 64
TENANT_ID_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_TENANT_ID_LENGTH - 1}}}$"
TENANT_ID = re.compile(TENANT_ID_PATTERN.removeprefix("^").removesuffix("$"))
TENANT_ID_RULE = f"a letter or digit, then letters, digits, _ . - (at most {MAX_TENANT_ID_LENGTH} characters)"
MODULE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
DEFAULT_TENANT_PREFIX = "tenant-"
REDIS_URL_ENV = "FAIRWAY_REDIS_URL"  # every entry point's Redis when none is given: verbs, workers, Client(), pods
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_WEIGHT = 1
DEFAULT_PREFIX = "fairway"  # the first part of every Redis key (`fairway:{high}:ready`)
SERVED_NAME_MARK = "@"  # a served name starting with it is a tenant group, never a queue (queue names cannot)


def served_name_of_group(queue_prefix: str) -> str:
    """The name a tenant group is served, listed and paused under: `@tenant-`."""
    return f"{SERVED_NAME_MARK}{queue_prefix}"


def is_group_name(served_name: str) -> bool:
    return served_name.startswith(SERVED_NAME_MARK)


def effective_weight(weight: int | None) -> int:
    """Omitted, zero and negative weights count as the default of 1 (as the seed specifies)."""
    return weight if weight is not None and weight > 0 else DEFAULT_WEIGHT
