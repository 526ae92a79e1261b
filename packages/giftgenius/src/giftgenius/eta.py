"""How long a job has left, from its progress reports, without the estimate climbing as it runs.

Dividing the time so far by the share done assumes the job ran at one speed from the
start. :class:`EtaEstimator` instead takes the pace (seconds per percent) over the last
`WINDOW` points of progress: long enough that the wandering from one second to the next
(which people come next, what else the machine runs) averages out, short enough to follow
a job whose pace changes for good. The bulk analysis gives each stage its share of the
bar by its share of the time (`giftgenius.bulk.pipeline`), so its pace holds steady.

A new estimate may be at most 1.5 times the last. The limit is lifted when progress has
stalled, meaning the last estimate said the job would be over before the next progress
arrived; that estimate was wrong, so it holds nothing back. While work remains the
estimate is at least `MIN_LEFT`, never "0 s".
"""

from __future__ import annotations

from collections import deque

__all__ = ["EtaEstimator"]

#: Over how many points of progress the pace is taken.
WINDOW = 20.0
#: The most a new estimate may be, as a multiple of the last, while progress keeps coming.
MAX_RISE = 1.5
#: The least time left said while work remains: shown rounded, less would read "0s" (done)
#: while the job still runs.
MIN_LEFT = 1.0


class EtaEstimator:
    """Seconds left, from (percentage, time) reports; pure, so the caller supplies the clock."""

    def __init__(self, started: float, percentage: float = 0.0) -> None:
        """``started`` is when the job started, on the clock the reports use (time.monotonic),
        or when it reached ``percentage``, if the estimate begins later (after a download)."""
        self._percentage = percentage
        self._at = started
        #: (percentage, time) of the reports within the window, and the last one before it.
        self._seen: deque[tuple[float, float]] = deque([(percentage, started)])
        self._estimate: float | None = None

    def update(self, percentage: float, now: float) -> float | None:
        """Seconds left after ``percentage`` of the job at time ``now``.

        None before any progress (nothing to extrapolate from), 0 at 100%, and at least
        `MIN_LEFT` before. A report that is not ahead of the last tells nothing new and gets
        the last estimate back.
        """
        if percentage <= self._percentage:
            return self._said()
        if percentage >= 100:
            self._percentage, self._at, self._estimate = 100.0, now, 0.0
            return self._estimate
        seen = self._seen
        while len(seen) > 1 and seen[1][0] <= percentage - WINDOW:
            seen.popleft()
        since, then = seen[0]
        estimate = (100 - percentage) * (now - then) / (percentage - since)
        seen.append((percentage, now))
        previous = self._estimate
        if previous is not None and now - self._at <= previous:
            # Progress came within the time the last estimate left: not a stall, so hold the rise.
            estimate = min(estimate, previous * MAX_RISE)
        self._percentage, self._at, self._estimate = percentage, now, estimate
        return self._said()

    def _said(self) -> float | None:
        if self._estimate is None or self._percentage >= 100:
            return self._estimate
        return max(self._estimate, MIN_LEFT)
