"""What a bulk analysis gives: a gift list per person, the problems, and a summary; as JSON and CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from giftgenius.bulk.reading import RowProblem

_PEOPLE_PER_SLICE = 500
_ROWS_IN_SUMMARY = 5
# A spreadsheet runs a cell starting with one of these as a formula (OWASP, "CSV injection").
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True, slots=True)
class PersonResult:
    """The gifts picked for one employee; ``budget`` is the budget actually applied to them.

    ``gifts`` holds ``{"name", "price", "category"}`` dicts, best first. When nothing fits,
    ``gifts`` is empty and ``note`` explains why. People with the same interests and budget share
    the same dicts, so a big file makes few objects (and little work for the garbage collector,
    which pauses every thread while it runs): read them, never change them.
    """

    name: str
    department: str
    interests: tuple[str, ...]
    budget: float
    gifts: Sequence[dict[str, Any]]
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The person as JSON types."""
        return {
            "name": self.name,
            "department": self.department,
            "interests": list(self.interests),
            "budget": self.budget,
            "gifts": list(self.gifts),
            "note": self.note,
        }


@dataclass(frozen=True)
class BulkResult:
    """Everything a bulk analysis produced.

    ``departments`` counts usable employees per department (most first); ``interests`` holds the most
    common interests with their counts (most first). ``unvaried`` counts, per budget, the people whose
    budget fit too few gifts to vary (see `giftgenius.bulk.pipeline`): their gifts may go to more
    than the usual share of the people, and the summary says so rather than leaving it unexplained.
    """

    people: list[PersonResult]
    problems: list[RowProblem]
    occasion: str
    budget_per_person: float
    departments: dict[str, int]
    interests: dict[str, int]
    unvaried: dict[float, int] = field(default_factory=dict)

    @property
    def with_gifts(self) -> int:
        """How many people got at least one gift."""
        return sum(1 for person in self.people if person.gifts)

    def to_json(self) -> dict[str, Any]:
        """The full result as JSON types, with a summary block."""
        return {
            "occasion": self.occasion,
            "budgetPerPerson": self.budget_per_person,
            "people": [person.to_json() for person in self.people],
            **self._after_people(),
        }

    def _after_people(self) -> dict[str, Any]:
        return {
            "problems": [{"row": problem.row, "reason": problem.reason} for problem in self.problems],
            "summary": {
                "people": len(self.people),
                "withGifts": self.with_gifts,
                "problems": len(self.problems),
                "departments": dict(self.departments),
                "topInterests": [
                    {"interest": interest, "count": count} for interest, count in self.interests.items()
                ],
                "budgetsTooSmallToVary": [
                    {"budget": budget, "people": count} for budget, count in self.unvaried.items()
                ],
            },
        }

    def to_json_bytes(self) -> bytes:
        """:meth:`to_json` as UTF-8 JSON (`write_json` into one buffer)."""
        out = io.BytesIO()
        self.write_json(out.write)
        return out.getvalue()

    def write_json(self, write: Callable[[bytes], object]) -> None:
        """:meth:`to_json` as UTF-8 JSON, handed to ``write`` a few hundred people at a time.

        The whole document at once would hold the GIL in one orjson call (60 ms for 40,000
        people) and make a hundred thousand objects that live long enough for a full garbage
        collection, which also holds every thread: on a worker thread, both are the event
        loop's wait. In slices, neither happens, and a writer that packs each slice as it
        comes (`herald.jobs.documents.Packing`) never holds the whole text (80 MB for
        100,000 people).
        """
        people = self.people
        write(orjson.dumps({"occasion": self.occasion, "budgetPerPerson": self.budget_per_person})[:-1])
        write(b',"people":[')
        for at in range(0, len(people), _PEOPLE_PER_SLICE):
            if at:
                write(b",")
            write(orjson.dumps([person.to_json() for person in people[at : at + _PEOPLE_PER_SLICE]])[1:-1])
        write(b"],")
        write(orjson.dumps(self._after_people())[1:])

    def to_csv(self) -> str:
        """A header, then one line per person: name, department, each gift's name and price, note."""
        out = io.StringIO()
        self.write_csv(lambda lines: out.write(lines.decode()))
        return out.getvalue()

    def write_csv(self, write: Callable[[bytes], object]) -> None:
        """:meth:`to_csv` as UTF-8, handed to ``write`` a few hundred lines at a time."""
        slots = max((len(person.gifts) for person in self.people), default=0) or 1
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        header = ["name", "department"]
        for number in range(1, slots + 1):
            header += [f"gift_{number}", f"gift_{number}_price"]
        writer.writerow([*header, "note"])
        for done, person in enumerate(self.people, start=1):
            line = [_inert(person.name), _inert(person.department)]
            for index in range(slots):
                if index < len(person.gifts):
                    gift = person.gifts[index]
                    line += [_inert(str(gift["name"])), f"{float(gift['price']):.2f}"]
                else:
                    line += ["", ""]
            writer.writerow([*line, _inert(person.note or "")])
            if done % _PEOPLE_PER_SLICE == 0:
                write(buffer.getvalue().encode())
                buffer.seek(0)
                buffer.truncate()
        write(buffer.getvalue().encode())

    def summary_text(self) -> str:
        """One or two sentences for people.

        For example: "Picked gifts for 97 of 100 people; 3 rows had problems (rows 4, 17, 52)."
        """
        total = len(self.people)
        done = self.with_gifts
        if done == total:
            picked = f"Picked gifts for all {total} {_plural(total, 'person', 'people')}"
        else:
            picked = f"Picked gifts for {done} of {total} {_plural(total, 'person', 'people')}"
        if not self.problems:
            first = f"{picked}; no rows had problems."
        else:
            count = len(self.problems)
            rows = [str(problem.row) for problem in self.problems[:_ROWS_IN_SUMMARY]]
            listed = ", ".join(rows)
            if count > _ROWS_IN_SUMMARY:
                listed += f" and {count - _ROWS_IN_SUMMARY} more"
            had = "row had a problem" if count == 1 else "rows had problems"
            first = f"{picked}; {count} {had} ({_plural(count, 'row', 'rows')} {listed})."
        missing = total - done
        sentences = [first]
        if missing:
            verb = "has" if missing == 1 else "have"
            sentences.append(
                f"{missing} {_plural(missing, 'person', 'people')} {verb} no gift within budget; "
                "see each person's note for the budget that would work."
            )
        if self.unvaried:
            sentences.append(self._unvaried_text())
        return " ".join(sentences)

    def _unvaried_text(self) -> str:
        """The sentence for budgets too small to vary the gifts."""
        people = sum(self.unvaried.values())
        budgets = ", ".join(f"${budget:.2f}" for budget in self.unvaried)
        whose = "person's budget" if people == 1 else "people's budgets"
        fit = "fits" if people == 1 else "fit"
        return (
            f"{people} {whose} ({budgets}) {fit} too few gifts to vary, "
            "so the same gifts may go to more than 5% of the people."
        )


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def _inert(cell: str) -> str:
    """``cell`` as text a spreadsheet shows rather than runs.

    Whoever opens the export in Excel, LibreOffice or Google Sheets would otherwise have a name such as
    ``=HYPERLINK(...)`` from the input evaluated as a formula. A leading single quote is what OWASP
    recommends: the spreadsheet shows the cell as text. Prices are left alone: they are numbers this
    module formats, so they always start with a digit and stay numbers.
    """
    return "'" + cell if cell.startswith(_FORMULA_STARTS) else cell
