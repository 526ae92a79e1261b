"""The analysis: four stages on a worker thread, reporting progress, saving matches to resume from.

``parse`` (0-3%), ``extract`` (3-6%), ``match`` (6-96%) and ``write`` (96-100%). Each
stage's share of the percentage is its share of the time, so a bar that moves at one speed
means a time left that can be told from it (`giftgenius.eta`): matching is nine tenths of
the work. Parse, extract and write count rows; match counts the rankings it has made, its
costly part. Employees who share interests, budget and occasion share one ranking, which
keeps a 100,000-row file fast, and counting rows there would race through the people whose
ranking is made and crawl through the others.

Each row is read as structured hints (its interests, an adult colleague), so the same rules hold
as for one suggestion: no children's gifts unless the interests mention kids, nothing unrelated
to the row. Sharing a ranking must not mean sharing the gifts: across the run no gift goes to more
than 5% of the people (`VARIETY_SHARE`), so each person gets the best of their ranking that is
not yet given that often. Only when fewer than `VARIETY_MIN_FITTING` gifts fit a person's budget
is there too little to vary: they get their best picks however often those are given, and the
result says whose budgets those were.
"""

from __future__ import annotations

import math
import time
import zlib
from collections import Counter
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
from giftgenius.suggest import MAX_COUNT, Hints, NoFit, Suggester, Suggestions
from herald.runtime.threads import LoopCall, in_thread

ProgressCallback = Callable[[float, str], Awaitable[None]]
"""Receives (percentage from 0 to 100, stage name); awaited by :func:`analyze`."""

# Stage name -> (start %, end %).
_STAGES: dict[str, tuple[float, float]] = {
    "parse": (0.0, 3.0),
    "extract": (3.0, 6.0),
    "match": (6.0, 96.0),
    "write": (96.0, 100.0),
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


_Outcome = tuple[tuple[dict[str, Any], ...], str | None, int]
"""A group's ranking: its candidate gifts best first, a note when there are none, and how many
suitable gifts fit its budget at all."""
_Key = tuple[tuple[str, ...], float]
_Picks = tuple[tuple[dict[str, Any], ...], str | None]

#: The largest share of the people one gift may go to in a run.
VARIETY_SHARE = 0.05
#: Below this many suitable gifts within a person's budget, there is too little to vary.
VARIETY_MIN_FITTING = 20
#: How deep a group's ranking goes at most. A group gets `count` candidates for every full share
#: of the people it holds, and `_SPARE_ROUNDS` more rounds for gifts other groups used up first:
#: enough for each to get different gifts once the best reach their share, and no reasons written
#: for gifts nobody would get.
_CANDIDATES = 60
_SPARE_ROUNDS = 3
#: Every row is an employee: an adult, and a colleague of whoever runs the analysis.
_RELATIONSHIP = "colleague"


#: How many people are matched between two saved checkpoints of a resumable run.
SAVE_EVERY = 2_000
#: Distinct matches past which no more are saved: each checkpoint holds all of them, so
#: a CSV where nobody shares a match would write its result over and over. A run resumed
#: past this point matches the rest again.
SAVE_AT_MOST = 5_000


def _saved(cache: dict[_Key, _Outcome]) -> list[list[Any]]:
    """The rankings so far as JSON: one entry per distinct (interests, budget)."""
    return [
        [list(topics), budget, list(gifts), note, fitting]
        for (topics, budget), (gifts, note, fitting) in cache.items()
    ]


def _listed(listing: dict[str, dict[str, Any]], gift: dict[str, Any]) -> dict[str, Any]:
    """A gift as a bulk result lists it: name, price, category, one dict per catalog item.

    Not the reason `suggest_gifts` gives: in a bulk run it is the same few sentences for
    thousands of people, and with it the result of 100,000 people was 80 MB and every
    ranking kept its own copies. One dict per item, shared by every ranking and person
    that has it, keeps a big file's matches to a pointer each.
    """
    entry = listing.get(gift["name"])
    if entry is None:
        entry = listing[gift["name"]] = {
            "name": gift["name"],
            "price": gift["price"],
            "category": gift["category"],
        }
    return entry


def _restored(resume: Any, listing: dict[str, dict[str, Any]]) -> dict[_Key, _Outcome]:
    """The matches a checkpoint holds; nothing when it holds none (or is not one of ours)."""
    entries = resume.get("matches") if isinstance(resume, dict) else None
    if not isinstance(entries, list):
        return {}
    cache: dict[_Key, _Outcome] = {}
    for entry in entries:
        try:
            topics, budget, gifts, note, fitting = entry
            cache[(tuple(str(topic) for topic in topics), float(budget))] = (
                tuple(_listed(listing, dict(gift)) for gift in gifts),
                None if note is None else str(note),
                int(fitting),
            )
        except (TypeError, ValueError):
            return {}
    return cache


class _LatestReading:
    """Suggestions that keep the reading of the latest description only.

    A reading (a description read against the whole catalog) holds tens of kilobytes, and a
    `Suggester` keeps every one for the people who share it at another budget. A big file of
    varied people has ten thousand descriptions: kept all, they were most of the server's
    memory (400 MB of a 100,000-row job). The match stage takes people grouped by their
    interests (`_by_interests`), so everyone who shares a description comes one after
    another, and the reading is not needed once the next description comes.
    """

    def __init__(self, catalog: Catalog, occasion: str) -> None:
        self._catalog, self._occasion = catalog, occasion
        self._recipient: str | None = None
        self._suggester = Suggester(catalog, occasion)

    def ranking(
        self, *, budget: float, recipient: str, depth: int, hints: Hints
    ) -> tuple[Suggestions | NoFit, int]:
        if recipient != self._recipient:
            self._recipient, self._suggester = recipient, Suggester(self._catalog, self._occasion)
        return self._suggester.ranking(budget=budget, recipient=recipient, depth=depth, hints=hints)


def _by_interests(keys: list[_Key]) -> list[int]:
    """The indexes of `keys`, everyone with the same interests together (`_LatestReading`).

    The groups go in an order that is the same on every run but unrelated to the
    interests (a checksum of them): in alphabetical order, the people whose interests
    start with rare words came first and the big groups that share common ones later, so
    the stage ran at one pace for a while and at another after, and its time left could
    not be told from its progress. Shuffled, each stretch of it holds a similar mix.
    """
    shuffled = {topics: zlib.crc32("\x1f".join(topics).encode()) for topics, _budget in keys}
    return sorted(range(len(keys)), key=lambda index: (shuffled[keys[index][0]], keys[index]))


def _recipient(interests: Iterable[str]) -> str:
    return f"{_RELATIONSHIP} who likes " + ", ".join(interests)


def _ranking(
    suggester: _LatestReading, key: _Key, normalized: str, depth: int, listing: dict[str, dict[str, Any]]
) -> _Outcome:
    """The candidates of everyone with these interests and this budget, best first."""
    topics, budget = key
    hints = Hints(interests=topics, age_group="adult", relationship=_RELATIONSHIP)
    found, fitting = suggester.ranking(budget=budget, recipient=_recipient(topics), depth=depth, hints=hints)
    if not isinstance(found, Suggestions):
        return (), found.message(), fitting
    gifts = tuple(_listed(listing, gift) for gift in found.to_structured()["gifts"])
    if gifts:
        return gifts, None, fitting
    return (), found.notice or f"No gift fits ${budget:.2f} for {occasion_phrase(normalized)}.", fitting


class _Variety:
    """Hands out each group's candidates so no gift goes to more than its share of the people.

    A person gets the first ``count`` of their candidates still under the cap, in the order the
    match stage takes people. People whose budget fits fewer than `VARIETY_MIN_FITTING` gifts get
    their best ones regardless (and are counted in ``unvaried``, per budget). The tuples handed
    out are shared by everyone who got the same gifts from the same group, as the gifts' dicts are.
    """

    def __init__(self, people: int, count: int) -> None:
        self._cap = max(1, math.floor(people * VARIETY_SHARE))
        self._count = count
        self._given: dict[str, int] = {}
        self._picks: dict[tuple[_Key, tuple[int, ...]], tuple[dict[str, Any], ...]] = {}
        self.unvaried: dict[float, int] = {}

    def depth(self, group: int) -> int:
        """How many candidates a group of ``group`` people needs (see `_CANDIDATES`)."""
        return min(_CANDIDATES, self._count * (math.ceil(group / self._cap) + _SPARE_ROUNDS))

    def pick(self, key: _Key, outcome: _Outcome) -> _Picks:
        """One person's gifts from their group's ranking, and a note when they get fewer than asked."""
        gifts, note, fitting = outcome
        given, cap = self._given, self._cap
        if fitting < VARIETY_MIN_FITTING:
            chosen = tuple(range(min(self._count, len(gifts))))
            if gifts:
                self.unvaried[key[1]] = self.unvaried.get(key[1], 0) + 1
        else:
            chosen = tuple(index for index, gift in enumerate(gifts) if given.get(gift["name"], 0) < cap)[
                : self._count
            ]
        picks = self._picks.get((key, chosen))
        if picks is None:
            picks = self._picks[(key, chosen)] = tuple(gifts[index] for index in chosen)
        for gift in picks:
            given[gift["name"]] = given.get(gift["name"], 0) + 1
        if note is None and len(picks) < self._count:
            note = self._short(len(picks), len(gifts), key[1])
        return picks, note

    def _short(self, picked: int, ranked: int, budget: float) -> str:
        """Why a person got fewer gifts than asked for."""
        if picked == ranked:
            return f"Only {picked} gifts within ${budget:.2f} relate to their interests or work."
        return (
            f"Only {picked} gifts: the others that fit their interests within ${budget:.2f} already went to "
            f"{VARIETY_SHARE:.0%} of the people each."
        )


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
    records, delimiter, lines = read_records(csv_text)
    header = next((record for _line, record in records if any(cell.strip() for cell in record)), None)
    if header is None:
        raise BulkInputError(
            "empty_input",
            "The CSV has no content, only blank lines or empty fields.",
            f"Paste or upload a CSV whose first line is the header {EXPECTED_HEADER}, "
            "followed by one line per employee.",
        )
    columns = column_map(header)
    width = len(header)
    tracker.report(0.0, "parse")
    employees: list[Employee] = []
    problems: list[RowProblem] = []
    # Each record becomes an employee (or a problem) as it is read: the records are never
    # all held. Progress is the line reached, of the lines the text has.
    for line, record in records:
        if any(cell.strip() for cell in record):
            parsed = parse_row(line, record, columns, width, delimiter)
            if isinstance(parsed, Employee):
                employees.append(parsed)
            else:
                problems.append(parsed)
        tracker.item_done("parse", min(line, lines), lines)
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
    # people with the same interests one reading of them; each gets the best of it that is
    # not yet given to too many others.
    suggester = _LatestReading(gifts_catalog, normalized)
    listing: dict[str, dict[str, Any]] = {}
    cache: dict[_Key, _Outcome] = _restored(resume, listing)
    saved = len(cache)
    variety = _Variety(total, count)
    groups = Counter(keys)
    outcomes: list[_Picks] = [((), None)] * total
    for done, index in enumerate(_by_interests(keys), start=1):
        key = keys[index]
        outcome = cache.get(key)
        if outcome is None:
            outcome = cache[key] = _ranking(suggester, key, normalized, variety.depth(groups[key]), listing)
        outcomes[index] = variety.pick(key, outcome)
        tracker.item_done("match", len(cache), len(groups))
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
        unvaried=dict(sorted(variety.unvaried.items())),
    )
