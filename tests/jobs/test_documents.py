"""Result documents are stored packed where that pays, and read back as they were saved."""

from __future__ import annotations

import os

import orjson

from herald.jobs.documents import PACKED, Packing, pack, unpack


def test_a_repetitive_document_is_packed_and_reads_back_the_same() -> None:
    document = b'{"gift": "Merino Hiking Socks", "price": 36.0},' * 2_000
    stored_type, stored = pack("application/json", document)
    assert stored_type == "application/json" + PACKED
    assert len(stored) * 10 < len(document)
    assert unpack(stored_type, stored) == ("application/json", document)


def test_small_or_incompressible_documents_are_stored_as_they_are() -> None:
    small = b'{"ok": true}'
    noise = os.urandom(64 * 1024)
    assert pack("application/json", small) == ("application/json", small)
    assert pack("application/octet-stream", noise) == ("application/octet-stream", noise)
    assert unpack("text/csv", b"a,b\n") == ("text/csv", b"a,b\n"), "what was stored unpacked reads as it is"


def test_a_document_packed_as_it_is_written_reads_back_whole() -> None:
    slices = [orjson.dumps({"person": index, "gifts": ["Camp Mug", "Trail Guide"]}) for index in range(5_000)]
    packing = Packing("application/json")
    for piece in slices:
        packing.write(piece)
    stored_type, stored = packing.finish()
    whole = b"".join(slices)
    assert stored_type == "application/json" + PACKED
    assert len(stored) < len(whole) / 10
    assert unpack(stored_type, stored) == ("application/json", whole)
