"""The estimate of a job's time left: smoothed, rising at most 1.5 times per report unless progress stalls."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from giftgenius.eta import MAX_RISE, MIN_LEFT, EtaEstimator


def estimates(steps: list[tuple[float, float]]) -> list[float | None]:
    """The estimates after each (seconds since the last report, percent gained) step from 0% at time 0."""
    estimator = EtaEstimator(0.0)
    now = percentage = 0.0
    out = []
    for seconds, gained in steps:
        now += seconds
        percentage += gained
        out.append(estimator.update(percentage, now))
    return out


def test_no_progress_yet_has_no_estimate() -> None:
    assert EtaEstimator(10.0).update(0.0, 12.0) is None


def test_done_is_zero() -> None:
    estimator = EtaEstimator(0.0)
    assert estimator.update(50.0, 5.0) == pytest.approx(5.0)
    assert estimator.update(100.0, 9.0) == 0.0
    assert estimator.update(100.0, 10.0) == 0.0


def test_work_that_remains_never_reads_as_none_left() -> None:
    """A fast job (half a percent every millisecond) still has work left until 100%."""
    said = estimates([(0.001, 0.5)] * 199)
    assert min(estimate for estimate in said if estimate is not None) == MIN_LEFT
    assert estimates([(0.001, 0.5)] * 200)[-1] == 0.0


def test_a_steady_job_gets_the_true_time_left() -> None:
    assert estimates([(0.5, 0.5)] * 100)[-1] == pytest.approx(50.0)


def test_a_report_not_ahead_of_the_last_keeps_the_estimate() -> None:
    estimator = EtaEstimator(0.0)
    first = estimator.update(20.0, 20.0)
    assert estimator.update(20.0, 30.0) == first


def test_a_job_that_slows_down_rises_at_most_one_and_a_half_times_per_report() -> None:
    """Parse fast (0.01 s a percent), then match slowly (1 s a percent): a naive estimate jumps 100-fold."""
    steps = [(0.005, 0.5)] * 20 + [(0.5, 0.5)] * 120
    seen = [estimate for estimate in estimates(steps) if estimate is not None]
    rises = [later / earlier for earlier, later in itertools.pairwise(seen)]
    assert max(rises) == pytest.approx(MAX_RISE), "the cap is what holds the estimate back"
    assert all(rise <= MAX_RISE + 1e-9 for rise in rises)
    assert seen[-1] == pytest.approx(100 - 70, rel=0.1), "it still catches up with the new pace"


def test_one_quick_step_does_not_collapse_the_estimate() -> None:
    before, after = estimates([(1.0, 1.0)] * 50 + [(0.0, 1.0)])[-2:]
    assert before is not None
    assert after is not None
    assert after > 0.85 * before


def test_a_stall_lets_the_estimate_rise_past_the_cap() -> None:
    steady = [(1.0, 0.5)] * 100  # 2 s a percent: 100 s left at 50%
    held, stalled = estimates([*steady, (99.0, 0.5)])[-1], estimates([*steady, (101.0, 0.5)])[-1]
    assert held == pytest.approx(100.0 * MAX_RISE), "progress within the time left: capped"
    assert stalled is not None
    assert stalled > 100.0 * MAX_RISE, "no progress for longer than the time left: not capped"


@given(st.lists(st.tuples(st.floats(0.0, 30.0), st.floats(0.01, 5.0)), min_size=2, max_size=60))
def test_any_rise_past_the_cap_follows_a_stall(steps: list[tuple[float, float]]) -> None:
    seen = estimates(steps)
    for (seconds, _gained), (earlier, later) in zip(steps[1:], itertools.pairwise(seen), strict=True):
        assert earlier is not None
        assert later is not None
        if later > earlier * MAX_RISE * (1 + 1e-9):
            # At the floor, the estimate held back was less than what was said.
            assert seconds > earlier or earlier == MIN_LEFT
