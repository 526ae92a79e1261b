"""What the bulk analysis tests share: CSV makers, a progress recorder, and run helpers."""

from __future__ import annotations

import csv
import io
import itertools
import random
from collections.abc import Sequence

import pytest

from giftgenius.bulk import BulkInputError, BulkResult, analyze
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


#: Three people, one per budget case: under, default (blank) and over the default.
SMALL = make_csv(
    [
        ["Ada Lovelace", "Engineering", "board games; Chess", "25"],
        ["Grace Hopper", "Engineering", "coffee;hiking", ""],
        ["Katherine Johnson", "Finance", "gardening", "120"],
    ]
)


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


def assert_progress_is_sound(recorder: Recorder) -> None:
    percents = recorder.percents
    assert percents[0] == 0.0
    assert percents[-1] == 100.0
    assert all(later > earlier for earlier, later in itertools.pairwise(percents))
    assert all(0.0 <= percent <= 100.0 for percent in percents)
    assert recorder.stages == ["parse", "extract", "match", "write"]
