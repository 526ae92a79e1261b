"""The analysis: four stages on a worker thread, reporting progress, saving matches to resume from.

``parse`` (0-10%), ``extract`` (10-40%), ``match`` (40-70%) and ``write`` (70-100%), each
with real per-row progress. Employees who share interests, budget and occasion share one
ranking, which keeps a 10,000-row file fast.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from giftgenius.bulk.reading import (
    EXPECTED_HEADER,
    BulkInputError,
    Employee,
    RowProblem,
    column_map,
    no_valid_rows,
    parse_row,
    read_records,
)
from giftgenius.bulk.result import BulkResult, PersonResult
from giftgenius.catalog import Catalog, load_catalog, normalize_occasion, occasion_phrase
from giftgenius.suggest import MAX_COUNT, Suggester, Suggestions
from herald.runtime.threads import LoopCall, in_thread

ProgressCallback = Callable[[float, str], Awaitable[None]]
"""Receives (percentage from 0 to 100, stage name); awaited by :func:`analyze`."""

# Stage name -> (start %, end %).
_STAGES: dict[str, tuple[float, float]] = {
    "parse": (0.0, 10.0),
    "extract": (10.0, 40.0),
    "match": (40.0, 70.0),
    "write": (70.0, 100.0),
}
_PROGRESS_STEP = 0.5
_CHECKPOINT_EVERY = 50
_TOP_INTERESTS = 10
_NO_DEPARTMENT = "(none)"


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
    records, delimiter = read_records(csv_text)
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
    columns = column_map(records[first][1])
    width = len(records[first][1])
    rows = records[first + 1 :]
    tracker.report(0.0, "parse")
    employees: list[Employee] = []
    problems: list[RowProblem] = []
    for done, (line, record) in enumerate(rows, start=1):
        if any(cell.strip() for cell in record):
            parsed = parse_row(line, record, columns, width, delimiter)
            if isinstance(parsed, Employee):
                employees.append(parsed)
            else:
                problems.append(parsed)
        tracker.item_done("parse", done, len(rows))
    del records, rows  # a list per row: no longer needed, and every collection would walk them
    if not employees:
        raise no_valid_rows(problems)

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

    # Stage 3: match. People with the same interests and budget share one ranking, and
    # people with the same interests one reading of them.
    suggester = Suggester(gifts_catalog, normalized)
    cache: dict[_Key, _Outcome] = _restored(resume)
    saved = len(cache)
    outcomes: list[_Outcome] = []
    for done, key in enumerate(keys, start=1):
        outcome = cache.get(key)
        if outcome is None:
            topics, budget = key
            found = suggester.suggest(budget=budget, recipient=_recipient(topics), count=count)
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
