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

The package's modules each do one part: `reading` turns the text into employees and row
problems, `result` is what comes out (and its JSON and CSV), `pipeline` runs the stages.
"""

from giftgenius.bulk.pipeline import SAVE_AT_MOST, SAVE_EVERY, ProgressCallback, analyze
from giftgenius.bulk.reading import EXPECTED_HEADER, BulkInputError, Employee, RowProblem, binary_reason
from giftgenius.bulk.result import BulkResult, PersonResult

__all__ = [
    "EXPECTED_HEADER",
    "SAVE_AT_MOST",
    "SAVE_EVERY",
    "BulkInputError",
    "BulkResult",
    "Employee",
    "PersonResult",
    "ProgressCallback",
    "RowProblem",
    "analyze",
    "binary_reason",
]
