"""A CSV file's bytes as spreadsheets save them, turned into the text :mod:`giftgenius.bulk` reads.

Excel alone writes three encodings for "CSV": UTF-8 with a byte order mark ("CSV UTF-8"), UTF-16
with one ("Unicode text", tab-delimited) and, for plain "CSV", the Windows code page, which in the
Americas and Western Europe is Windows-1252. Other tools write UTF-8 without a mark. A byte order
mark settles the encoding; without one, bytes that are valid UTF-8 are UTF-8 (text in Windows-1252
with any accented letter almost never is), and anything else is read as Windows-1252 with a notice,
since that is a guess. A file that is not text at all (a workbook, an image) is refused with what
to do instead: sending its bytes to the server would only fail there, less clearly.

Like :mod:`giftgenius.bulk`, this module does no I/O: the caller reads the file.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from giftgenius.bulk import EXPECTED_HEADER, BulkInputError, binary_reason

__all__ = ["DecodedCsv", "decode_csv"]

# Byte order mark -> the codec of what follows it. UTF-8's is checked with the others: any BOM is certain.
_BOMS = {
    codecs.BOM_UTF8: "utf-8-sig",
    codecs.BOM_UTF16_LE: "utf-16-le",
    codecs.BOM_UTF16_BE: "utf-16-be",
}
# How spreadsheet workbooks start: .xlsx and .ods are zip archives, .xls an OLE2 compound file.
_WORKBOOKS = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
_FALLBACK = "cp1252"
_EXPORT = (
    "choose File > Save As (or Download) > CSV UTF-8 there and use that file; "
    f"its first line must be the header {EXPECTED_HEADER}."
)


@dataclass(frozen=True)
class DecodedCsv:
    """The text of a CSV file, without a byte order mark.

    ``encoding`` is the codec it was read with (``utf-8``, ``utf-8-sig``, ``utf-16-le``,
    ``utf-16-be`` or ``cp1252``). ``notice`` is a sentence to show the person when the encoding was a
    guess, else None.
    """

    text: str
    encoding: str
    notice: str | None


def decode_csv(data: bytes, name: str = "The file") -> DecodedCsv:
    """The text of a CSV file's bytes; ``name`` names the file in the notice and in errors.

    Raises :class:`~giftgenius.bulk.BulkInputError` with code ``not_csv`` for a workbook or other
    binary data and ``empty_input`` for a file with nothing in it but blanks.
    """
    if data.startswith(_WORKBOOKS):
        raise BulkInputError(
            "not_csv",
            f"{name} is a spreadsheet workbook (such as .xlsx), not a CSV text file.",
            f"Export it as CSV: {_EXPORT}",
        )
    decoded = _decode(data, name)
    reason = binary_reason(decoded.text)
    if reason is not None:
        raise BulkInputError(
            "not_csv",
            f"{name} is not a CSV text file: {reason}.",
            f"If it came from a spreadsheet, {_EXPORT}",
        )
    if not decoded.text.strip():
        raise BulkInputError(
            "empty_input",
            f"{name} is empty.",
            f"Write the header {EXPECTED_HEADER} on its first line, then one line per employee.",
        )
    return decoded


def _decode(data: bytes, name: str) -> DecodedCsv:
    """``data`` decoded by its byte order mark, else as UTF-8, else as Windows-1252 with a notice.

    Only the UTF-8 attempt is strict, because its failing is what says the file is something else.
    The others replace what they cannot decode, leaving :func:`~giftgenius.bulk.binary_reason` to
    judge whether too much of it is not text.
    """
    for bom, encoding in _BOMS.items():
        if data.startswith(bom):
            return DecodedCsv(data[len(bom) :].decode(encoding, errors="replace"), encoding, None)
    try:
        return DecodedCsv(data.decode("utf-8"), "utf-8", None)
    except UnicodeDecodeError:
        notice = f"{name} is not UTF-8; read it as Windows-1252 (cp1252). Save as CSV UTF-8 to be sure."
        return DecodedCsv(data.decode(_FALLBACK, errors="replace"), _FALLBACK, notice)
