"""How long a job has left, from its progress reports, without the estimate climbing as it runs.

Dividing the time so far by the share done assumes the job runs at one speed. The bulk analysis does
not: parsing is fast and matching is slow, so that estimate starts low and keeps rising, and people
watch the ETA grow. :class:`EtaEstimator` instead follows the recent pace (seconds per percent),
smoothed so one slow or fast step does not swing it, and lets a new estimate be at most 1.5 times
the last one. The limit is lifted when progress has stalled, meaning the last estimate said the job
would be over before the next progress arrived; that estimate was wrong, so it holds nothing back.
"""

from __future__ import annotations

__all__ = ["EtaEstimator"]

#: How much of the pace each report's own pace makes up; the rest is the pace before it. With
#: reports every half percent, this follows roughly the last 5% of the job.
SMOOTHING = 0.1
#: The most a new estimate may be, as a multiple of the last, while progress keeps coming.
MAX_RISE = 1.5
#: The least time left said while work remains: shown rounded, less would read "0s" (done)
#: while the job still runs.
MIN_LEFT = 1.0


class EtaEstimator:
    """Seconds left, from (percentage, time) reports; pure, so the caller supplies the clock."""

    def __init__(self, started: float) -> None:
        """``started`` is when the job started, on the clock the reports use (time.monotonic)."""
        self._percentage = 0.0
        self._at = started
        self._pace: float | None = None
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
        pace = (now - self._at) / (percentage - self._percentage)
        self._pace = pace if self._pace is None else SMOOTHING * pace + (1 - SMOOTHING) * self._pace
        estimate = (100 - percentage) * self._pace
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
