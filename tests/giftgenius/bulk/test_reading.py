"""Reading the CSV: row problems, whole-input errors, delimiters and numbers as spreadsheets write them."""

from __future__ import annotations

import random

import pytest

from giftgenius.bulk import EXPECTED_HEADER, BulkInputError, RowProblem
from tests.giftgenius.bulk.support import (
    SMALL,
    assert_progress_is_sound,
    expect_error,
    make_csv,
    run,
)

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
