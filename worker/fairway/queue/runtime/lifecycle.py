"""A worker process's life: stop signals, the interrupt that ends an idle wait, and the watchdog for
jobs that ignore their timeout. Shutdown paths log and never raise."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol, TypeVar

log = logging.getLogger("fairway.worker")
HARD_EXIT_CODE = 70  # a job ignored its timeout: the process exits so its supervisor restarts it
T = TypeVar("T")
FORCED_EXIT_CODE = 130  # a second Ctrl-C: stopped at once, as a shell reports an interrupted command


class JobTimeout(BaseException):
    """Raised inside a job that ran past its timeout (BaseException, so `except Exception` cannot eat it)."""


class Interrupted(BaseException):
    """A stop signal arrived while idle: leave the blocking read or sleep now."""


class StopSignals:
    """SIGTERM/SIGINT ask for a stop; while `idle`, they also interrupt the wait. SIGALRM times jobs out."""

    def __init__(self) -> None:
        self.stopping = False
        self.reason = ""
        self.idle = False
        self.interrupts = 0  # SIGINTs seen: the second forces the stop
        self._previous: dict[int, Any] = {}

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.stopping and signum == signal.SIGINT and self.interrupts:
            # A second Ctrl-C: stop now. Nothing is lost: the jobs still running keep their leases until
            # they run out (retryAfter), then go back to ready as lost, not as a spent try.
            log.warning("second interrupt: stopping now; the jobs still running run again elsewhere")
            logging.shutdown()
            os._exit(FORCED_EXIT_CODE)
        if signum == signal.SIGINT:
            self.interrupts += 1
        if not self.stopping:
            hint = " (Ctrl-C again: stop now)" if signum == signal.SIGINT else ""
            log.info("%s received: taking no more jobs; running ones finish first%s", signal.Signals(signum).name, hint)
        self.stopping = True
        self.reason = signal.Signals(signum).name
        if self.idle:
            raise Interrupted()

    def idle_wait(self, wait: Callable[[], T]) -> T | None:
        """Wait with stop signals allowed to cut the wait short (Interrupted propagates); what `wait`
        gave (None: a stop came first)."""
        self.idle = True
        try:
            return None if self.stopping else wait()
        finally:
            self.idle = False

    def install(self) -> bool:
        """Our handlers for the run (main thread only); `restore` puts the previous ones back."""
        if threading.current_thread() is not threading.main_thread():
            return False
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
            self._previous[sig] = signal.getsignal(sig)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGALRM, _raise_timeout)
        return True

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


def _raise_timeout(_signum: int, _frame: FrameType | None) -> None:
    raise JobTimeout()


class RssProbe:
    """This process's resident memory, cheap enough to read after every job (one pread of statm)."""

    def __init__(self) -> None:
        self._page_mib = os.sysconf("SC_PAGE_SIZE") / 2**20
        try:
            self._fd: int | None = os.open("/proc/self/statm", os.O_RDONLY)
        except OSError:  # not Linux: the peak RSS is the best there is
            self._fd = None

    def mib(self) -> float:
        if self._fd is None:
            import resource

            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return int(os.pread(self._fd, 128, 0).split()[1]) * self._page_mib

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class Recycles(Protocol):
    def recycled(self, reason: str) -> None: ...


class MemoryGuard:
    """Recycle above the memory limit: checked after every job and on the housekeeping timer, so a
    leaking handler is caught at the job that crossed the line, not a second later."""

    def __init__(self, limit_mib: float, signals: StopSignals, metrics: Recycles) -> None:
        self.limit_mib = limit_mib  # 0: no limit
        self.signals = signals
        self.metrics = metrics
        self.rss = RssProbe()

    def check(self) -> None:
        limit = self.limit_mib
        if limit and self.rss.mib() > limit:
            if not self.signals.stopping:
                self.metrics.recycled("memory")
            self.signals.reason = f"memory above {limit} MiB"
            self.signals.stopping = True

    def close(self) -> None:
        self.rss.close()


class Watchdog:
    """A job that ignores its timeout interrupt makes the worker exit, so its supervisor restarts it;
    the job stays reserved and is handed out again after retry_after."""

    def __init__(self, clock: Callable[[], float], describe: Callable[[], str]) -> None:
        self.clock = clock
        self.describe = describe
        self.deadline: float | None = None
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._watch, name="fairway-watchdog", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(0.25):
            deadline = self.deadline
            if deadline is not None and self.clock() > deadline:
                log.critical(
                    "job %s ignored its timeout; exiting so the worker is restarted; the job stays "
                    "reserved and is handed out again after retry_after",
                    self.describe(),
                )
                os._exit(HARD_EXIT_CODE)


OUTAGE_BACKOFF_MAX_S = 1.0  # short: a worker is back within about a second of Redis


class Backoff:
    """An outage as the worker lives it: logged once when it starts and once when it ends, with a
    wait that doubles up to OUTAGE_BACKOFF_MAX_S in between."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.since: float | None = None
        self.wait_s = 0.1

    def failed(self, exc: BaseException, doing: str) -> float:
        """Seconds to wait before trying again."""
        if self.since is None:
            self.since = self.clock()
            log.error(
                "Redis is unreachable %s (%s: %s); retrying with backoff, nothing is lost",
                doing,
                type(exc).__name__,
                exc,
            )
        wait, self.wait_s = self.wait_s, min(self.wait_s * 2, OUTAGE_BACKOFF_MAX_S)
        return wait

    def succeeded(self) -> None:
        if self.since is not None:
            log.warning("Redis is reachable again after %.1f s", self.clock() - self.since)
        self.since, self.wait_s = None, 0.1
