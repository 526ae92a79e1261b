"""Reading the CSV: its text as spreadsheets write it, into employees and row problems.

The delimiter is a comma, a semicolon (what Excel writes where the comma is the decimal
mark) or a tab, whichever the header line holds most of; a budget may use either decimal
mark; text that looks binary is refused. A row that cannot be used becomes a
`RowProblem`; input unusable as a whole raises `BulkInputError`.
"""

from __future__ import annotations

import csv
import math
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

EXPECTED_HEADER = "name,department,interests,budget"
_REQUIRED = ("name", "department", "interests")
_PROBLEMS_IN_HINT = 3
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


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


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
    if not text or text.isspace():  # not strip(): that would copy megabytes to look
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
    header = next((line for line in lines_of(text) if not line.isspace()), "")
    return max(_DELIMITERS, key=header.count)


def read_records(csv_text: str) -> tuple[Iterator[tuple[int, list[str]]], str, int]:
    """The CSV records with the line each starts on, as they are read; the delimiter; and
    how many lines the text has, which bounds how many records there are.

    The records come one at a time, so a caller that turns each into what it keeps never
    holds them all: a list per row of a 100,000-row file was 60 MB. Raises
    BulkInputError for empty, binary or non-CSV text, at once or when reading gets there.
    """
    text = csv_text.removeprefix("\ufeff")
    _check_text(text)
    delimiter = _delimiter(text)
    ending = "\n" if "\n" in text else "\r"
    return _records(text, delimiter), delimiter, text.count(ending) + (not text.endswith(ending))


#: A line and its ending: "\r\n", "\n" or a lone "\r", as files from any system end them.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lines_of(text: str) -> Iterator[str]:
    """The lines of ``text`` with their endings, made one at a time.

    What ``csv.reader`` needs, without the copy an ``io.StringIO`` makes: it keeps four
    bytes a character, 40 MB for a 10 MB file, for as long as the reading lasts.
    """
    for match in _LINE.finditer(text):
        yield match.group()


def _records(text: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    reader = csv.reader(lines_of(text), delimiter=delimiter)
    line = 0
    try:
        for record in reader:
            yield line + 1, record
            line = reader.line_num
    except csv.Error as exc:
        raise BulkInputError(
            "not_csv",
            f"The input could not be read as CSV near line {reader.line_num}: {exc}.",
            "Check that quotes are balanced and that the file is plain CSV text "
            f"with the header {EXPECTED_HEADER}.",
        ) from exc


def column_map(header: Sequence[str]) -> dict[str, int]:
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
            seen.setdefault(sys.intern(interest), None)
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


def parse_row(
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
    # Departments and interests repeat across thousands of rows: one string each, not one per row.
    department = sys.intern(_clean(record[columns["department"]]))
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


def no_valid_rows(problems: Sequence[RowProblem]) -> BulkInputError:
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
