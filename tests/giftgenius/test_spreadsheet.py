"""Decoding CSV files as spreadsheets save them: encodings, byte order marks, and what is not CSV."""

from __future__ import annotations

import codecs

import pytest

from giftgenius.bulk import EXPECTED_HEADER, BulkInputError, analyze
from giftgenius.catalog import load_catalog
from giftgenius.spreadsheet import DecodedCsv, decode_csv

CATALOG = load_catalog()

COMMAS = "name,department,interests,budget\r\nJosé Müller,Ventes €,café; wine,40\r\n"
TABS = "name\tdepartment\tinterests\tbudget\r\nJosé Müller\tR&D, Labs\ttea, chess\t40\r\n"


async def ignore(_percentage: float, _stage: str) -> None:
    """A progress callback for tests that do not look at progress."""


@pytest.mark.parametrize(
    ("data", "text", "encoding"),
    [
        (COMMAS.encode(), COMMAS, "utf-8"),
        (codecs.BOM_UTF8 + COMMAS.encode(), COMMAS, "utf-8-sig"),
        (codecs.BOM_UTF16_LE + TABS.encode("utf-16-le"), TABS, "utf-16-le"),
        (codecs.BOM_UTF16_BE + TABS.encode("utf-16-be"), TABS, "utf-16-be"),
    ],
    ids=["utf-8", "utf-8-bom", "utf-16-le-bom", "utf-16-be-bom"],
)
def test_unicode_files_decode_without_a_notice(data: bytes, text: str, encoding: str) -> None:
    assert decode_csv(data, "employees.csv") == DecodedCsv(text, encoding, None)


def test_windows_1252_is_the_fallback_with_a_notice() -> None:
    decoded = decode_csv(COMMAS.encode("cp1252"), "employees.csv")
    assert (decoded.text, decoded.encoding) == (COMMAS, "cp1252")
    assert decoded.notice == (
        "employees.csv is not UTF-8; read it as Windows-1252 (cp1252). Save as CSV UTF-8 to be sure."
    )


async def test_an_excel_unicode_text_export_reads_through() -> None:
    decoded = decode_csv(codecs.BOM_UTF16_LE + TABS.encode("utf-16-le"))
    result = await analyze(decoded.text, progress=ignore, catalog=CATALOG)
    assert [(p.name, p.department, p.interests) for p in result.people] == [
        ("José Müller", "R&D, Labs", ("tea", "chess"))
    ]


async def test_a_european_excel_csv_reads_through() -> None:
    """Semicolons, quoted cells, a decimal comma, in Windows-1252: what Excel writes in much of Europe."""
    written = 'name;department;interests;budget\r\n"José Müller";"Ventes; €";"café;wine";"40,50"\r\n'
    decoded = decode_csv(written.encode("cp1252"))
    assert decoded.notice is not None
    result = await analyze(decoded.text, progress=ignore, catalog=CATALOG)
    assert [(p.name, p.department, p.interests, p.budget) for p in result.people] == [
        ("José Müller", "Ventes; €", ("café", "wine"), 40.5)
    ]


def refusal(data: bytes, code: str) -> BulkInputError:
    with pytest.raises(BulkInputError) as caught:
        decode_csv(data, "employees.csv")
    assert caught.value.code == code
    assert EXPECTED_HEADER in caught.value.hint
    return caught.value


@pytest.mark.parametrize(
    "data",
    [b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x00"],
    ids=["xlsx", "xls"],
)
def test_a_workbook_is_refused_with_how_to_export_it(data: bytes) -> None:
    error = refusal(data, "not_csv")
    assert error.message == "employees.csv is a spreadsheet workbook (such as .xlsx), not a CSV text file."
    assert error.hint.startswith("Export it as CSV: choose File > Save As (or Download) > CSV UTF-8")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00", "it contains NUL characters"),
        (TABS.encode("utf-16-le"), "it contains NUL characters"),
        (b"name\x01\x02\x03\x04,x\n", "4 of its first 11 characters are control characters"),
    ],
    ids=["png", "utf-16-without-bom", "control-characters"],
)
def test_binary_data_is_refused(data: bytes, reason: str) -> None:
    error = refusal(data, "not_csv")
    assert error.message == f"employees.csv is not a CSV text file: {reason}."


@pytest.mark.parametrize("data", [b"", codecs.BOM_UTF8, b" \r\n\t\r\n"], ids=["empty", "bom-only", "blank"])
def test_an_empty_file_is_refused(data: bytes) -> None:
    assert refusal(data, "empty_input").message == "employees.csv is empty."
