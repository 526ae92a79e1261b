"""The tracker alone: any interleaving of repeats and reorderings yields the history exactly once."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from herald.client import JobEvent, JobEventTracker

JOB = "job1"
TERMINALS: dict[str, dict[str, Any]] = {
    "completed": {"status": "completed", "resultResourceId": "herald://jobs/job1/result.json"},
    "failed": {"status": "failed", "error": {"code": "bad", "message": "no"}},
    "cancelled": {"status": "cancelled", "reason": "asked"},
}


def numbered(kinds_and_payloads: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Params of a job's events, sequenced from 1 in the given order."""
    return [
        JobEvent(JOB, sequence, kind, f"2026-01-01T00:00:{sequence % 60:02d}.000Z", payload).to_params()
        for sequence, (kind, payload) in enumerate(kinds_and_payloads, start=1)
    ]


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[str, dict[str, Any]]]:
    """A legal history: created, started, non-decreasing progress, one ending."""
    percentages = sorted(draw(st.lists(st.integers(0, 100), max_size=6)))
    steps = [("progress", {"percentage": float(p), "stage": f"at {p}"}) for p in percentages]
    ending = draw(st.sampled_from(sorted(TERMINALS)))
    return [
        ("created", {"tool": "t", "status": "pending"}),
        ("started", {"status": "running"}),
        *steps,
        (ending, TERMINALS[ending]),
    ]


@st.composite
def deliveries(draw: st.DrawFn, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every event at least once, some several times, in any order."""
    repeats = draw(st.lists(st.sampled_from(events), max_size=2 * len(events)))
    return draw(st.permutations(events + repeats))


def feed(tracker: JobEventTracker, arrivals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for params in arrivals:
        delivered = tracker.accept(params)
        assert not (out and delivered and out[-1]["type"] in {f"job.{k}" for k in TERMINALS}), (
            "nothing is delivered after the ending"
        )
        out.extend(event.to_params() for event in delivered)
    return out


@given(st.data())
def test_repeats_and_reorderings_yield_the_canonical_history(data: st.DataObject) -> None:
    canonical = numbered(data.draw(histories()))
    tracker = JobEventTracker(JOB)
    assert feed(tracker, data.draw(deliveries(canonical))) == canonical
    assert tracker.finished
    assert tracker.rejected == []
    assert tracker.last_sequence == len(canonical)
    assert tracker.waiting == 0
    assert tracker.status == canonical[-1]["status"]


@given(st.data())
def test_an_early_event_waits_for_the_gap_before_it(data: st.DataObject) -> None:
    canonical = numbered(data.draw(histories()))
    tracker = JobEventTracker(JOB)
    assert tracker.accept(canonical[-1]) == []
    assert tracker.waiting == 1
    assert not tracker.finished
    assert feed(tracker, canonical[:-1]) == canonical


@pytest.mark.parametrize("illegal", ["progress after the end", "second ending", "progress going back"])
@given(data=st.data())
def test_an_illegal_event_is_rejected_and_the_rest_flows(illegal: str, data: st.DataObject) -> None:
    history = data.draw(histories())
    if illegal == "progress after the end":
        at = len(history)
        bad: tuple[str, dict[str, Any]] = ("progress", {"percentage": 100.0, "stage": "late"})
    elif illegal == "second ending":
        at = len(history)
        kind = data.draw(st.sampled_from(sorted(TERMINALS)))
        bad = (kind, TERMINALS[kind])
    else:
        history.insert(2, ("progress", {"percentage": 60.0, "stage": "ahead"}))
        at = 3
        bad = ("progress", {"percentage": 10.0, "stage": "behind"})
        history = [
            (
                kind,
                {**payload, "percentage": max(payload["percentage"], 60.0)}
                if kind == "progress"
                else payload,
            )
            for kind, payload in history
        ]
    with_bad = numbered([*history[:at], bad, *history[at:]])
    injected = with_bad[at]
    expected = [params for params in with_bad if params is not injected]
    tracker = JobEventTracker(JOB)
    assert feed(tracker, data.draw(deliveries(with_bad))) == expected
    assert [rejected.event.to_params() for rejected in tracker.rejected] == [injected]
    assert tracker.rejected[0].reason
    assert tracker.finished


def test_events_of_another_job_are_rejected() -> None:
    tracker = JobEventTracker(JOB)
    other = JobEvent("other", 1, "created", "2026-01-01T00:00:00.000Z", {"tool": "t", "status": "pending"})
    assert tracker.accept(other.to_params()) == []
    assert tracker.rejected[0].reason == "it belongs to job 'other'"
    assert tracker.last_sequence == 0


def test_progress_updates_what_the_tracker_reports() -> None:
    tracker = JobEventTracker(JOB)
    events = numbered(
        [
            ("created", {"tool": "t", "status": "pending"}),
            ("started", {"status": "running"}),
            ("progress", {"percentage": 40.0, "stage": "reading"}),
        ]
    )
    feed(tracker, events)
    assert (tracker.status, tracker.percentage, tracker.stage, tracker.finished) == (
        "running",
        40.0,
        "reading",
        False,
    )
