"""Bulk gift analysis: a CSV of employees in, a gift list per person out.

The input is CSV text with a header row naming the columns ``name``, ``department``, ``interests``
(separated by semicolons) and, optionally, ``budget``. Header names are matched case-insensitively and
extra columns are ignored. A row that cannot be used (no name, no interests, a bad budget, the wrong
number of fields) is reported as a :class:`RowProblem` and the job carries on; only input that is
unusable as a whole raises :class:`BulkInputError`.

The text is read the way spreadsheets write it. The delimiter is a comma, a semicolon (what Excel
writes where the comma is the decimal mark) or a tab (Excel's "Unicode text"), whichever the header
line holds most of. Where it is not a comma, a comma needs no quoting inside a cell, so commas separate
interests there as well as semicolons. A budget may use either decimal mark ("40.50" or "40,50"). A
leading byte order mark is dropped, and text that looks binary (a workbook or an image pasted as
text) is refused. :mod:`giftgenius.spreadsheet` turns a file's bytes into this text.

The work runs in four stages, each reporting real per-row progress through an async callback:
``parse`` (0-10%), ``extract`` (10-40%), ``match`` (40-70%) and ``write`` (70-100%). Reports are
throttled to half-percent steps, so even a very large file produces at most 201 of them, always with a
strictly increasing percentage and always ending at 100; a caller may space them in time as well.
Employees who share interests, budget and occasion share one ranking, which keeps a 10,000-row file
fast.

This module does no I/O: the caller supplies the text and the callbacks and receives a
:class:`BulkResult`. The work runs on a worker thread, so other requests go on while it computes.
"""

from __future__ import annotations

import csv
import io
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from giftgenius.catalog import Catalog, load_catalog, normalize_occasion, occasion_phrase
from giftgenius.suggest import MAX_COUNT, Suggestions, suggest_gifts
from herald.runtime.threads import LoopCall, in_thread

__all__ = [
    "EXPECTED_HEADER",
    "BulkInputError",
    "BulkResult",
    "Employee",
    "PersonResult",
    "ProgressCallback",
    "RowProblem",
    "analyze",
    "binary_reason",
]

ProgressCallback = Callable[[float, str], Awaitable[None]]
"""Receives (percentage from 0 to 100, stage name); awaited by :func:`analyze`."""

EXPECTED_HEADER = "name,department,interests,budget"
_REQUIRED = ("name", "department", "interests")
_OPTIONAL = ("budget",)

# Stage name -> (start %, end %).
_STAGES: dict[str, tuple[float, float]] = {
    "parse": (0.0, 10.0),
    "extract": (10.0, 40.0),
    "match": (40.0, 70.0),
    "write": (70.0, 100.0),
}
_PROGRESS_STEP = 0.5
_PEOPLE_PER_SLICE = 500
_CHECKPOINT_EVERY = 50
_TOP_INTERESTS = 10
_PROBLEMS_IN_HINT = 3
_ROWS_IN_SUMMARY = 5
_NO_DEPARTMENT = "(none)"
# Share of control characters (or decoding replacement marks) above which text is taken as binary.
_BINARY_SHARE = 0.01
_SAMPLE_CHARS = 8192

_SPACES = re.compile(r"\s+")
_BINARY_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")
# Delimiter -> its name in messages; on a tie in the header the first one wins.
_DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab"}
# Delimiter -> what separates interests within a cell.
_INTEREST_SEPARATORS = {",": re.compile(";"), ";": re.compile("[;,]"), "\t": re.compile("[;,]")}
_THOUSANDS = re.compile(r"\d{1,3}(,\d{3})+")
# A spreadsheet runs a cell starting with one of these as a formula (OWASP, "CSV injection").
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class BulkInputError(ValueError):
    """The input as a whole is unusable.

    ``code`` is a stable identifier (``empty_input``, ``not_csv``, ``missing_columns``,
    ``no_valid_rows``, ``invalid_options``), ``message`` says what is wrong and ``hint`` says what a
    person can do about it.
    """

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint

    def to_json(self) -> dict[str, str]:
        """``{"code", "message", "hint"}`` for clients."""
        return {"code": self.code, "message": self.message, "hint": self.hint}


@dataclass(frozen=True, slots=True)
class RowProblem:
    """A row that was skipped; ``row`` is its 1-based line number in the file (the header is line 1)."""

    row: int
    reason: str


@dataclass(frozen=True, slots=True)
class Employee:
    """One usable CSV row. Interests are lowercase and de-duplicated; ``budget`` is None when blank."""

    row: int
    name: str
    department: str
    interests: tuple[str, ...]
    budget: float | None


@dataclass(frozen=True, slots=True)
class PersonResult:
    """The gifts picked for one employee; ``budget`` is the budget actually applied to them.

    ``gifts`` holds ``{"name", "price", "category", "reason"}`` dicts, best first. When nothing fits,
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
    common interests with their counts (most first).
    """

    people: list[PersonResult]
    problems: list[RowProblem]
    occasion: str
    budget_per_person: float
    departments: dict[str, int]
    interests: dict[str, int]

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
            },
        }

    def to_json_bytes(self) -> bytes:
        """:meth:`to_json` as UTF-8 JSON, built and serialised a few hundred people at a time.

        The whole document at once would hold the GIL in one orjson call (60 ms for 40,000
        people) and make a hundred thousand objects that live long enough for a full garbage
        collection, which also holds every thread: on a worker thread, both are the event
        loop's wait. In slices, neither happens.
        """
        people = self.people
        head = orjson.dumps({"occasion": self.occasion, "budgetPerPerson": self.budget_per_person})
        slices = (
            orjson.dumps([person.to_json() for person in people[at : at + _PEOPLE_PER_SLICE]])[1:-1]
            for at in range(0, len(people), _PEOPLE_PER_SLICE)
        )
        return head[:-1] + b',"people":[' + b",".join(slices) + b"]," + orjson.dumps(self._after_people())[1:]

    def to_csv(self) -> str:
        """A header, then one line per person: name, department, each gift's name and price, note."""
        slots = max((len(person.gifts) for person in self.people), default=0) or 1
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        header = ["name", "department"]
        for number in range(1, slots + 1):
            header += [f"gift_{number}", f"gift_{number}_price"]
        writer.writerow([*header, "note"])
        for person in self.people:
            line = [_inert(person.name), _inert(person.department)]
            for index in range(slots):
                if index < len(person.gifts):
                    gift = person.gifts[index]
                    line += [_inert(str(gift["name"])), f"{float(gift['price']):.2f}"]
                else:
                    line += ["", ""]
            writer.writerow([*line, _inert(person.note or "")])
        return buffer.getvalue()

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
        if not missing:
            return first
        verb = "has" if missing == 1 else "have"
        return (
            f"{first} {missing} {_plural(missing, 'person', 'people')} {verb} no gift within budget; "
            "see each person's note for the budget that would work."
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


class _Progress:
    """Maps per-item completion onto each stage's range and throttles reports.

    Reports go in half-percent steps, and at most one per ``report_every`` seconds within a stage
    (the first of each stage and the last, 100%, always go), so a small file makes a handful of
    events and a big one no more than a listener can use. It runs on the analysis thread and hands
    each report, checkpoint and save to the event loop through ``call``.
    """

    def __init__(
        self,
        call: LoopCall,
        callback: ProgressCallback,
        checkpoint: Callable[[], Awaitable[None]] | None,
        report_every: float,
    ) -> None:
        self._call = call
        self._callback = callback
        self._checkpoint = checkpoint
        self._report_every = report_every
        self._last = -1.0
        self._last_stage: str | None = None
        self._last_at = 0.0
        self._ticks = 0

    def report(self, percent: float, stage: str) -> None:
        step = math.floor(min(max(percent, 0.0), 100.0) / _PROGRESS_STEP) * _PROGRESS_STEP
        if step <= self._last:
            return
        now = time.monotonic()
        if stage == self._last_stage and step < 100.0 and now - self._last_at < self._report_every:
            return
        self._last, self._last_stage, self._last_at = step, stage, now
        self._call.run(self._callback, step, stage)

    def item_done(self, stage: str, done: int, total: int) -> None:
        """Record that ``done`` of ``total`` items of ``stage`` are finished."""
        start, end = _STAGES[stage]
        self.report(start + (end - start) * done / total, stage)
        self._ticks += 1
        if self._ticks % _CHECKPOINT_EVERY == 0:
            # Where the caller may cancel: the thread learns it here, or in the checkpoint.
            self._call.check()
            if self._checkpoint is not None:
                self._call.run(self._checkpoint)

    def save(self, save: Callable[[dict[str, Any]], Awaitable[None]], state: dict[str, Any]) -> None:
        self._call.run(save, state)

    def finish(self) -> None:
        self.report(100.0, "write")


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _check_options(occasion: str, budget_per_person: float, count: int) -> None:
    if not isinstance(occasion, str) or not occasion.strip():
        raise BulkInputError(
            "invalid_options", "The occasion is empty.", "Name an occasion such as 'holiday' or 'birthday'."
        )
    if (
        isinstance(budget_per_person, bool)
        or not isinstance(budget_per_person, int | float)
        or not math.isfinite(budget_per_person)
        or budget_per_person <= 0
    ):
        raise BulkInputError(
            "invalid_options",
            f"The budget per person must be a positive number of US dollars, got {budget_per_person!r}.",
            "Use a budget such as 50.",
        )
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise BulkInputError(
            "invalid_options",
            f"The number of gifts per person must be a whole number from 1 to {MAX_COUNT}, got {count!r}.",
            "Ask for 3 gifts per person, for example.",
        )


def binary_reason(text: str) -> str | None:
    """Why ``text`` is binary data rather than CSV text, as a clause (e.g. "it contains NUL characters").

    None when it reads as text. A NUL never occurs in a text file (other than a UTF-16 one, which must be
    decoded first); otherwise more than 1% of control characters or decoding replacement marks in the
    first 8,192 characters gives it away: a workbook, an image or an archive.
    """
    if "\x00" in text:
        return "it contains NUL characters"
    sample = text[:_SAMPLE_CHARS]
    controls = len(_BINARY_CHARS.findall(sample))
    if controls > len(sample) * _BINARY_SHARE:
        return f"{controls} of its first {len(sample)} characters are control characters"
    return None


def _check_text(text: str) -> None:
    """Raise BulkInputError when ``text`` is empty or binary, so there is nothing to read as CSV."""
    if not text.strip():
        raise BulkInputError(
            "empty_input",
            "The CSV is empty.",
            f"Paste or upload a CSV whose first line is the header {EXPECTED_HEADER}, "
            "followed by one line per employee.",
        )
    reason = binary_reason(text)
    if reason is not None:
        raise BulkInputError(
            "not_csv",
            f"The CSV is binary data, not text: {reason}. It may be a spreadsheet workbook (.xlsx), "
            "an image, or a file read in the wrong encoding.",
            f"Send the CSV text itself, whose first line is the header {EXPECTED_HEADER}: export the sheet "
            "as CSV (UTF-8) and pass that file's contents.",
        )


def _delimiter(text: str) -> str:
    """The delimiter the header line (the first that is not blank) holds most of; a comma if none.

    The header names hold no comma, semicolon or tab, so counting them on that line is exact for any
    file with our header, and a file without one fails on its columns whatever is picked.
    ``csv.Sniffer`` is not used: it judges by how evenly characters recur across rows, so it gives up
    ("Could not determine delimiter") on valid semicolon files whose quoted interests hold semicolons
    and whose unquoted cells hold commas, and a comma fallback would then misread them.
    """
    header = next((line for line in text.splitlines() if line.strip()), "")
    return max(_DELIMITERS, key=header.count)


def _read_records(csv_text: str) -> tuple[list[tuple[int, list[str]]], str]:
    """Every CSV record with the line it starts on, and the delimiter.

    Raises BulkInputError for empty, binary or non-CSV text.
    """
    text = csv_text.removeprefix("\ufeff")
    _check_text(text)
    delimiter = _delimiter(text)
    records: list[tuple[int, list[str]]] = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    line = 0
    try:
        for record in reader:
            records.append((line + 1, record))
            line = reader.line_num
    except csv.Error as exc:
        raise BulkInputError(
            "not_csv",
            f"The input could not be read as CSV near line {reader.line_num}: {exc}.",
            "Check that quotes are balanced and that the file is plain CSV text "
            f"with the header {EXPECTED_HEADER}.",
        ) from exc
    return records, delimiter


def _column_map(header: Sequence[str]) -> dict[str, int]:
    columns: dict[str, int] = {}
    for index, cell in enumerate(header):
        key = _clean(cell.removeprefix("\ufeff")).lower()
        columns.setdefault(key, index)
    missing = [name for name in _REQUIRED if name not in columns]
    if missing:
        found = ",".join(_clean(cell) for cell in header) or "(nothing)"
        if len(found) > 120:
            found = found[:117] + "..."
        raise BulkInputError(
            "missing_columns",
            f"The CSV header is missing the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}.",
            f"Make the first line the header {EXPECTED_HEADER} (budget is optional, other columns are "
            f"ignored). The first line found was: {found}",
        )
    return columns


def _parse_interests(cell: str, delimiter: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for part in _INTEREST_SEPARATORS[delimiter].split(cell):
        interest = _clean(part).lower()
        if interest:
            seen.setdefault(interest, None)
    return tuple(seen)


def _parse_budget(cell: str) -> tuple[float | None, str | None]:
    """(budget or None when blank, problem text or None)."""
    raw = cell.strip()
    if not raw:
        return None, None
    number = _decimal_point(raw.removeprefix("$").strip())
    try:
        value = float(number)
    except ValueError:
        return None, f"budget {raw!r} is not a number (use a plain amount such as 40)"
    if not math.isfinite(value) or value <= 0:
        return None, f"budget {raw!r} must be a positive amount such as 40"
    return value, None


def _decimal_point(number: str) -> str:
    """``number`` with a point as its decimal mark and no thousands separators.

    Spreadsheets write amounts as the locale shows them: "1,000.50" in the US, "1.000,50" or "40,50"
    across most of Europe, whose CSVs are the semicolon-delimited ones. When both marks appear the last
    is the decimal one; a lone comma groups thousands only before groups of three digits ("1,000").
    """
    comma, point = number.rfind(","), number.rfind(".")
    if comma > point and (point >= 0 or not _THOUSANDS.fullmatch(number)):
        return number.replace(".", "").replace(",", ".")
    return number.replace(",", "")


def _parse_row(
    line: int, record: Sequence[str], columns: dict[str, int], width: int, delimiter: str
) -> Employee | RowProblem:
    if len(record) != width:
        return RowProblem(
            line,
            f"has {len(record)} field{'' if len(record) == 1 else 's'} but the header has {width}; "
            f"quote any value that contains a {_DELIMITERS[delimiter]}",
        )
    reasons: list[str] = []
    name = _clean(record[columns["name"]])
    if not name:
        reasons.append("missing name")
    department = _clean(record[columns["department"]])
    interests = _parse_interests(record[columns["interests"]], delimiter)
    if not interests:
        reasons.append("no interests listed (separate them with semicolons, e.g. 'hiking; coffee')")
    budget: float | None = None
    if "budget" in columns:
        budget, problem = _parse_budget(record[columns["budget"]])
        if problem is not None:
            reasons.append(problem)
    if reasons:
        return RowProblem(line, "; ".join(reasons))
    return Employee(row=line, name=name, department=department, interests=interests, budget=budget)


def _no_valid_rows(problems: Sequence[RowProblem]) -> BulkInputError:
    if not problems:
        return BulkInputError(
            "no_valid_rows",
            "The CSV has a header but no employee rows.",
            "Add one line per employee below the header, e.g. Ada Lovelace,Engineering,math; poetry,40",
        )
    shown = "; ".join(f"row {problem.row}: {problem.reason}" for problem in problems[:_PROBLEMS_IN_HINT])
    more = len(problems) - _PROBLEMS_IN_HINT
    if more > 0:
        shown += f"; and {more} more"
    count = len(problems)
    return BulkInputError(
        "no_valid_rows",
        f"None of the {count} row{'' if count == 1 else 's'} in the CSV could be used.",
        f"Fix these rows and try again: {shown}.",
    )


class _Tally:
    """Counts under a case-insensitive key, remembering the first spelling seen."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._labels: dict[str, str] = {}

    def add(self, label: str) -> None:
        key = label.casefold()
        self._labels.setdefault(key, label)
        self._counts[key] = self._counts.get(key, 0) + 1

    def ranked(self, limit: int | None = None) -> dict[str, int]:
        order = sorted(self._counts.items(), key=lambda item: (-item[1], self._labels[item[0]]))
        return {self._labels[key]: count for key, count in order[:limit]}


_Outcome = tuple[tuple[dict[str, Any], ...], str | None]
_Key = tuple[tuple[str, ...], float]


#: How many people are matched between two saved checkpoints of a resumable run.
SAVE_EVERY = 2_000
#: Distinct matches past which no more are saved: each checkpoint holds all of them, so
#: a CSV where nobody shares a match would write its result over and over. A run resumed
#: past this point matches the rest again.
SAVE_AT_MOST = 5_000


def _saved(cache: dict[_Key, _Outcome]) -> list[list[Any]]:
    """The matches so far as JSON: one entry per distinct (interests, budget)."""
    return [[list(topics), budget, list(gifts), note] for (topics, budget), (gifts, note) in cache.items()]


def _restored(resume: Any) -> dict[_Key, _Outcome]:
    """The matches a checkpoint holds; nothing when it holds none (or is not one of ours)."""
    entries = resume.get("matches") if isinstance(resume, dict) else None
    if not isinstance(entries, list):
        return {}
    cache: dict[_Key, _Outcome] = {}
    for entry in entries:
        try:
            topics, budget, gifts, note = entry
            cache[(tuple(str(topic) for topic in topics), float(budget))] = (
                tuple(dict(gift) for gift in gifts),
                None if note is None else str(note),
            )
        except (TypeError, ValueError):
            return {}
    return cache


def _recipient(interests: Iterable[str]) -> str:
    return "colleague who likes " + ", ".join(interests)


async def analyze(
    csv_text: str,
    *,
    occasion: str = "holiday",
    budget_per_person: float = 50.0,
    progress: ProgressCallback,
    catalog: Catalog | None = None,
    count: int = 3,
    checkpoint: Callable[[], Awaitable[None]] | None = None,
    save: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    resume: Any = None,
    report_every: float = 0.0,
) -> BulkResult:
    """Pick up to ``count`` gifts for every usable employee row in ``csv_text``.

    Each person's ``budget`` column applies when present, else ``budget_per_person``. Rows that cannot
    be used become :class:`RowProblem` entries; input unusable as a whole raises
    :class:`BulkInputError`. ``progress`` receives strictly increasing percentages with the stage
    name; ``checkpoint`` (when given) is awaited every 50 items so the caller can cancel.
    ``report_every`` spaces progress reports within a stage by at least that many seconds.

    The work runs on a worker thread (``herald.runtime.threads``), so a big file does not hold the
    event loop; the callbacks are awaited on the loop, one at a time, in order. Cancelling the
    call stops the work at its next report or checkpoint.

    Resuming: ``save`` (when given) is handed the matches made so far every
    ``SAVE_EVERY`` people while matching; a run given one of those as ``resume`` reuses
    them instead of matching those people again. Matching is the costly stage, and what
    it produces is the same for the same CSV, so a run taken over after its worker
    stopped ends with the result an uninterrupted run would have had. A ``resume`` that
    is not one of those is ignored: everything is matched afresh.
    """
    _check_options(occasion, budget_per_person, count)
    gifts_catalog = catalog if catalog is not None else load_catalog()

    def work(call: LoopCall) -> BulkResult:
        tracker = _Progress(call, progress, checkpoint, report_every)
        return _analyze(
            csv_text, occasion, float(budget_per_person), gifts_catalog, count, tracker, save, resume
        )

    return await in_thread(work)


def _analyze(
    csv_text: str,
    occasion: str,
    default_budget: float,
    gifts_catalog: Catalog,
    count: int,
    tracker: _Progress,
    save: Callable[[dict[str, Any]], Awaitable[None]] | None,
    resume: Any,
) -> BulkResult:
    """The analysis itself, on the worker thread; see :func:`analyze`."""
    normalized = normalize_occasion(occasion)

    # Stage 1: parse and validate.
    records, delimiter = _read_records(csv_text)
    first = next(
        (index for index, (_line, record) in enumerate(records) if any(c.strip() for c in record)), None
    )
    if first is None:
        raise BulkInputError(
            "empty_input",
            "The CSV has no content, only blank lines or empty fields.",
            f"Paste or upload a CSV whose first line is the header {EXPECTED_HEADER}, "
            "followed by one line per employee.",
        )
    columns = _column_map(records[first][1])
    width = len(records[first][1])
    rows = records[first + 1 :]
    tracker.report(0.0, "parse")
    employees: list[Employee] = []
    problems: list[RowProblem] = []
    for done, (line, record) in enumerate(rows, start=1):
        if any(cell.strip() for cell in record):
            parsed = _parse_row(line, record, columns, width, delimiter)
            if isinstance(parsed, Employee):
                employees.append(parsed)
            else:
                problems.append(parsed)
        tracker.item_done("parse", done, len(rows))
    del records, rows  # a list per row: no longer needed, and every collection would walk them
    if not employees:
        raise _no_valid_rows(problems)

    # Stage 2: extract interests and departments.
    departments = _Tally()
    interests = _Tally()
    keys: list[_Key] = []
    total = len(employees)
    for done, employee in enumerate(employees, start=1):
        departments.add(employee.department or _NO_DEPARTMENT)
        for interest in employee.interests:
            interests.add(interest)
        budget = employee.budget if employee.budget is not None else default_budget
        keys.append((tuple(sorted(employee.interests)), budget))
        tracker.item_done("extract", done, total)

    # Stage 3: match. People with the same interests and budget share one ranking.
    cache: dict[_Key, _Outcome] = _restored(resume)
    saved = len(cache)
    outcomes: list[_Outcome] = []
    for done, key in enumerate(keys, start=1):
        outcome = cache.get(key)
        if outcome is None:
            topics, budget = key
            found = suggest_gifts(
                gifts_catalog, occasion=normalized, budget=budget, recipient=_recipient(topics), count=count
            )
            if isinstance(found, Suggestions):
                gifts = tuple(found.to_structured()["gifts"])
                note = None if gifts else f"No gift fits ${budget:.2f} for {occasion_phrase(normalized)}."
                outcome = (gifts, note)
            else:
                outcome = ((), found.message())
            cache[key] = outcome
        outcomes.append(outcome)
        tracker.item_done("match", done, total)
        if save is not None and done % SAVE_EVERY == 0 and saved < len(cache) <= SAVE_AT_MOST:
            saved = len(cache)
            tracker.save(save, {"matches": _saved(cache)})

    # Stage 4: write the result.
    people: list[PersonResult] = []
    for done, (employee, key, (gifts, note)) in enumerate(
        zip(employees, keys, outcomes, strict=True), start=1
    ):
        people.append(
            PersonResult(
                name=employee.name,
                department=employee.department,
                interests=employee.interests,
                budget=key[1],
                gifts=gifts,
                note=note,
            )
        )
        tracker.item_done("write", done, total)
    tracker.finish()
    return BulkResult(
        people=people,
        problems=problems,
        occasion=normalized,
        budget_per_person=default_budget,
        departments=departments.ranked(),
        interests=interests.ranked(_TOP_INTERESTS),
    )
