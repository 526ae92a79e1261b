"""The job state machine: every (state, input) pair, and any sequence of inputs."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from herald.jobs.machine import (
    TERMINAL,
    TRANSITIONS,
    IllegalTransition,
    JobInput,
    JobState,
    JobStatus,
    Outcome,
    apply,
)


def test_table_is_total() -> None:
    assert set(TRANSITIONS) == set(itertools.product(JobStatus, JobInput))


@pytest.mark.parametrize(("status", "event"), list(itertools.product(JobStatus, JobInput)))
def test_each_pair(status: JobStatus, event: JobInput) -> None:
    state = JobState(status, 40.0, "stage")
    outcome, expected = TRANSITIONS[(status, event)]
    if outcome is Outcome.REFUSE:
        with pytest.raises(IllegalTransition):
            apply(state, event, 60.0)
        return
    found, after = apply(state, event, 60.0, "next")
    assert found is outcome
    assert after.status is expected
    if outcome is Outcome.ABSORB:
        assert after == state
    if status in TERMINAL:
        assert outcome is Outcome.ABSORB, "the only legal input after the end is the same ending again"


def test_terminal_states_absorb_only_their_own_input() -> None:
    for status in TERMINAL:
        absorbed = [event for event in JobInput if TRANSITIONS[(status, event)][0] is Outcome.ABSORB]
        assert len(absorbed) == 1


def test_progress_never_decreases() -> None:
    _, state = apply(JobState(JobStatus.RUNNING), JobInput.PROGRESS, 30, "a")
    with pytest.raises(IllegalTransition):
        apply(state, JobInput.PROGRESS, 29.9, "b")
    with pytest.raises(IllegalTransition):
        apply(state, JobInput.PROGRESS, 101, "b")
    _, same = apply(state, JobInput.PROGRESS, 30, "b")
    assert (same.percentage, same.stage) == (30, "b")


inputs = st.tuples(st.sampled_from(list(JobInput)), st.floats(min_value=-10, max_value=110, allow_nan=False))


@given(st.lists(inputs, max_size=40))
def test_any_sequence(sequence: list[tuple[JobInput, float]]) -> None:
    state = JobState()
    ended: JobStatus | None = None
    for event, percentage in sequence:
        before = state
        try:
            _, state = apply(state, event, percentage, "s")
        except IllegalTransition:
            assert state == before, "a refused input leaves the job unchanged"
            continue
        assert state.percentage >= before.percentage, "progress never goes back"
        if ended is not None:
            assert state == before, "after the end, nothing changes"
        if state.status in TERMINAL:
            ended = state.status
    if ended is not None:
        assert state.status is ended
