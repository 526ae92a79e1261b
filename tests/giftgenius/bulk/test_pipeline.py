"""The analysis: gifts within budget, real progress off the event loop, options, and resuming."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from giftgenius.bulk import analyze
from tests.giftgenius.bulk.support import (
    CATALOG,
    DEPARTMENTS,
    INTERESTS,
    SMALL,
    Recorder,
    assert_progress_is_sound,
    generated_csv,
    make_csv,
    run,
)

# --- a small file ---


async def test_small_file_gives_each_person_gifts_within_budget() -> None:
    result, _progress = await run(SMALL, occasion="Christmas", budget_per_person=50)
    assert [person.name for person in result.people] == ["Ada Lovelace", "Grace Hopper", "Katherine Johnson"]
    assert [person.budget for person in result.people] == [25.0, 50.0, 120.0]
    assert result.people[0].interests == ("board games", "chess")
    assert result.problems == []
    assert result.occasion == "holiday"
    for person in result.people:
        assert len(person.gifts) == 3
        assert person.note is None
        for gift in person.gifts:
            assert set(gift) == {"name", "price", "category"}
            assert 0 < gift["price"] <= person.budget
    catalog_names = {gift.name for gift in CATALOG.gifts}
    assert all(gift["name"] in catalog_names for person in result.people for gift in person.gifts)
    tags = {gift.name: set(gift.tags) for gift in CATALOG.gifts}
    assert any(tags[gift["name"]] & {"board games", "chess"} for gift in result.people[0].gifts)
    assert result.departments == {"Engineering": 2, "Finance": 1}
    assert result.interests["hiking"] == 1
    assert result.summary_text() == "Picked gifts for all 3 people; no rows had problems."


async def test_gift_count_is_configurable() -> None:
    result, _progress = await run(SMALL, count=1)
    assert [len(person.gifts) for person in result.people] == [1, 1, 1]


async def test_header_is_flexible() -> None:
    text = "\ufeff Name ,EMAIL, Interests ,Department\nAda,ada@example.com,tea,Engineering\n"
    result, _progress = await run(text, budget_per_person=30)
    assert len(result.people) == 1
    person = result.people[0]
    assert (person.name, person.department, person.interests, person.budget) == (
        "Ada",
        "Engineering",
        ("tea",),
        30.0,
    )
    assert all(gift["price"] <= 30 for gift in person.gifts)


async def test_nothing_within_budget_is_a_note_not_an_error() -> None:
    text = make_csv([["Penny", "Finance", "coffee", "1"], ["Rich", "Finance", "coffee", "80"]])
    result, _progress = await run(text)
    penny, rich = result.people
    assert list(penny.gifts) == []
    assert penny.note is not None
    assert "raise the budget" in penny.note
    assert rich.gifts
    assert rich.note is None
    assert result.summary_text().startswith("Picked gifts for 1 of 2 people; no rows had problems.")
    assert "1 person has no gift within budget" in result.summary_text()


# --- progress ------------------------------------------------------------------------------------------


async def test_progress_is_per_row_and_strictly_increasing() -> None:
    result, recorder = await run(generated_csv(200))
    assert len(result.people) == 200
    assert_progress_is_sound(recorder)
    assert len(recorder.calls) > 100
    by_stage = {stage: [p for p, s in recorder.calls if s == stage] for stage in recorder.stages}
    assert max(by_stage["parse"]) <= 3.0
    assert min(by_stage["extract"]) > 3.0
    assert max(by_stage["extract"]) <= 6.0
    assert min(by_stage["match"]) > 6.0
    assert max(by_stage["match"]) <= 96.0
    assert min(by_stage["write"]) > 96.0
    assert len(by_stage["match"]) > 50, "matching, nine tenths of the bar, moves in small steps"
    for stage, percents in by_stage.items():
        assert len(percents) > 2, stage


async def test_progress_for_a_single_row() -> None:
    _result, recorder = await run(make_csv([["Ada", "Eng", "tea", ""]]))
    assert recorder.calls == [
        (0.0, "parse"),
        (3.0, "parse"),
        (6.0, "extract"),
        (96.0, "match"),
        (100.0, "write"),
    ]


async def test_checkpoint_can_stop_the_job() -> None:
    class Stop(Exception):
        pass

    calls = 0

    async def checkpoint() -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise Stop

    recorder = Recorder()
    with pytest.raises(Stop):
        await analyze(generated_csv(500), progress=recorder, catalog=CATALOG, checkpoint=checkpoint)
    assert calls == 3
    assert recorder.percents[-1] < 100.0


@pytest.mark.slow
async def test_ten_thousand_rows() -> None:
    checkpoints = 0

    async def checkpoint() -> None:
        nonlocal checkpoints
        checkpoints += 1

    recorder = Recorder()
    result = await analyze(generated_csv(10_000), progress=recorder, checkpoint=checkpoint)
    assert len(result.people) == 10_000
    assert result.problems == []
    assert result.with_gifts == 10_000
    assert_progress_is_sound(recorder)
    assert len(recorder.calls) <= 201
    assert checkpoints >= 4 * 10_000 // 50 - 4
    assert sum(result.departments.values()) == 10_000
    assert len(result.interests) == 10


async def test_the_rows_are_worked_through_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A big file must not hold the loop: the per-row work runs on another thread, and the
    progress callback (which writes to the store) runs on the loop."""
    from giftgenius.bulk.reading import parse_row

    loop_thread = threading.get_ident()
    row_threads: set[int] = set()

    def watched(*args: Any) -> Any:
        row_threads.add(threading.get_ident())
        return parse_row(*args)

    monkeypatch.setattr("giftgenius.bulk.pipeline.parse_row", watched)
    reported_on: set[int] = set()

    async def progress(_percent: float, _stage: str) -> None:
        reported_on.add(threading.get_ident())

    await analyze(generated_csv(100), progress=progress, catalog=CATALOG)
    assert row_threads, "the rows were parsed"
    assert loop_thread not in row_threads
    assert reported_on == {loop_thread}


async def test_reports_may_be_spaced_in_time_keeping_each_stage_and_the_end() -> None:
    recorder = Recorder()
    await analyze(generated_csv(400), progress=recorder, catalog=CATALOG, report_every=3600)
    assert recorder.stages == ["parse", "extract", "match", "write"]
    assert [stage for _percent, stage in recorder.calls] == ["parse", "extract", "match", "write", "write"]
    assert recorder.percents[-1] == 100.0


# --- properties ----------------------------------------------------------------------------------------

NAMES = st.text(
    alphabet=st.characters(categories=["L", "Nd"]) | st.sampled_from(" ,'\"-."), min_size=1, max_size=20
).filter(lambda name: any(char.isalnum() for char in name))
ROWS = st.lists(
    st.tuples(
        NAMES,
        st.sampled_from(DEPARTMENTS),
        st.lists(st.sampled_from(INTERESTS), min_size=1, max_size=4),
        st.none() | st.floats(min_value=1, max_value=500, allow_nan=False, allow_infinity=False),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=ROWS,
    default=st.floats(min_value=1, max_value=300),
    occasion=st.sampled_from(["holiday", "birthday", "farewell"]),
)
def test_gifts_stay_within_each_budget(
    rows: list[tuple[str, str, list[str], float | None]], default: float, occasion: str
) -> None:
    text = make_csv(
        [
            [name, department, "; ".join(interests), "" if budget is None else repr(budget)]
            for name, department, interests, budget in rows
        ]
    )
    result, recorder = asyncio.run(run(text, budget_per_person=default, occasion=occasion))
    assert result.problems == []
    assert len(result.people) == len(rows)
    for person, (_name, _department, _interests, budget) in zip(result.people, rows, strict=True):
        expected = default if budget is None else budget
        assert person.budget == expected
        assert all(gift["price"] <= expected for gift in person.gifts)
        assert person.gifts or person.note
    assert_progress_is_sound(recorder)


@pytest.mark.slow
async def test_a_resumed_run_reuses_the_saved_matches_and_ends_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    from giftgenius.suggest import Suggester

    text = generated_csv(4_500)
    matched = 0
    real = Suggester.ranking

    def counting(self: Suggester, **kwargs: Any) -> object:
        nonlocal matched
        matched += 1
        return real(self, **kwargs)

    monkeypatch.setattr(Suggester, "ranking", counting)
    saved: list[dict[str, object]] = []

    async def save(state: dict[str, object]) -> None:
        saved.append(orjson.loads(orjson.dumps(state)))  # as the store keeps it: JSON

    whole = await analyze(text, progress=Recorder(), catalog=CATALOG, save=save)
    assert saved, "a long run saves its matches"
    every_match, matched = matched, 0
    last = saved[-1]["matches"]
    assert isinstance(last, list)
    resumed = await analyze(text, progress=Recorder(), catalog=CATALOG, resume=saved[-1])
    assert resumed.to_json() == whole.to_json(), "a resumed run ends with the same result"
    assert matched == every_match - len(last), "what was saved is not matched again"
    ignored = await analyze(text, progress=Recorder(), catalog=CATALOG, resume={"matches": "garbled"})
    assert ignored.to_json() == whole.to_json()
