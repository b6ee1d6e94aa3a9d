"""`fairway simulate --plot`: each pool's replicas over time, one column per policy, over the jobs
waiting for it (matplotlib, the optional `plot` extra). Long runs are drawn at most MAX_POINTS wide,
each point the highest value of its span, so a day is as readable as a minute."""

from __future__ import annotations

from collections.abc import Sequence

from fairway.simulate.run import Result

MAX_POINTS = 1500


class PlotUnavailable(RuntimeError):
    pass


def _spans(times: Sequence[float], values: Sequence[float]) -> tuple[list[float], list[float]]:
    """At most MAX_POINTS points: each the highest value of its span (a peak is never lost)."""
    if len(times) <= MAX_POINTS:
        return list(times), list(values)
    size = -(-len(times) // MAX_POINTS)
    return [times[i] for i in range(0, len(times), size)], [
        max(values[i : i + size]) for i in range(0, len(values), size)
    ]


def plot(results: Sequence[Result], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable("needs matplotlib: pip install 'fairway[plot]'") from None
    pools = sorted({pool for r in results for _, replicas, _ in r.timeline for pool in replicas})
    fig, axes = plt.subplots(
        len(pools),
        len(results),
        figsize=(4.2 * len(results), 2.4 * len(pools)),
        sharex=True,
        sharey="row",
        squeeze=False,
    )
    top = {pool: max((rep.get(pool, 0) for r in results for _, rep, _ in r.timeline), default=1) for pool in pools}
    # One waiting-jobs scale per pool across the policies (as the pods' scale is): side by side, the
    # policies are compared by eye, so a backlog of 1,500 must not look like one of 16.
    most_waiting = {
        pool: max((w.get(pool, 0) for r in results for _, _, w in r.timeline), default=0) or 1 for pool in pools
    }
    hours = max((t for r in results for t, _, _ in r.timeline), default=0) > 7200
    scale, unit = (3600.0, "hours") if hours else (1.0, "seconds")
    for col, result in enumerate(results):
        times = [t / scale for t, _, _ in result.timeline]
        for row, pool in enumerate(pools):
            ax = axes[row][col]
            waiting = ax.twinx()
            xs, ws = _spans(times, [w.get(pool, 0) for _, _, w in result.timeline])
            waiting.fill_between(xs, ws, color="0.85", step="post", linewidth=0)
            waiting.set_ylim(0, most_waiting[pool] * 1.05)
            if col == len(results) - 1:
                waiting.set_ylabel("waiting jobs", color="0.4")
            xs, ps = _spans(times, [rep.get(pool, 0) for _, rep, _ in result.timeline])
            ax.step(xs, ps, where="post", color="tab:blue", linewidth=1.2)
            ax.set_zorder(waiting.get_zorder() + 1)
            ax.patch.set_visible(False)
            ax.set_ylim(0, top[pool] + 0.5)
            ax.yaxis.get_major_locator().set_params(integer=True)
            if row == 0:
                ax.set_title(f"{result.policy}: {result.replica_changes:,} changes, {result.pod_seconds:,.0f} pod-s")
            if col == 0:
                ax.set_ylabel(f"pods: {pool}")
            if row == len(pools) - 1:
                ax.set_xlabel(f"simulated {unit}")
    fig.suptitle("replicas per pool (blue) over the jobs waiting for it (grey)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
