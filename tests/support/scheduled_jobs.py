"""A handler module that declares a schedule beside its handler, as docs/schedules.md shows: every
worker that imports it ticks `beat` (tests/integration/worker/test_schedules.py)."""

from __future__ import annotations

import fairway


@fairway.job(queue="beats")
def beat(label: str) -> str:
    return label


fairway.schedule("beat", every=1, handler=beat, args=["from-python"])
