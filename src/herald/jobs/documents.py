"""Result documents as a store keeps them: compressed where that pays.

A job's result is often many times its input, and most of it repeats (a gift list per
person, the same names and reasons over and over): stored as it is, a 0.8 MB CSV left
about 18 MB of results, written twice more by SQLite's WAL and kept for days. zlib
shrinks such a document about twentyfold. Clients never see the packing: a document is
unpacked when it is read, and it keeps its MIME type on the wire.

A packed document is told apart by a parameter on its stored MIME type, so a store needs
no column for it and documents stored before packing existed read as they always did.
"""

from __future__ import annotations

import zlib
from typing import Final

__all__ = ["PACKED", "Packing", "pack", "unpack"]

#: The MIME type parameter that marks a packed document.
PACKED: Final = "; herald-packing=zlib"
#: Smaller documents are stored as they are: packing would save little and cost a header.
SMALLEST_PACKED: Final = 4096
#: Fast, and within a few percent of the best ratio on repetitive JSON and CSV.
_LEVEL: Final = 6


def pack(mime_type: str, data: bytes) -> tuple[str, bytes]:
    """What to store for a document: packed if that saves at least a quarter, else as it is.

    Costs tens of milliseconds per ten megabytes: run it off the event loop for big ones.
    """
    if len(data) < SMALLEST_PACKED:
        return mime_type, data
    packed = zlib.compress(data, _LEVEL)
    if len(packed) > len(data) * 3 // 4:
        return mime_type, data
    return mime_type + PACKED, packed


class Packing:
    """A document packed as it is written, so its whole text is never held at once.

    A big result written in slices (`write`) is compressed slice by slice: 100,000 people's
    gift lists are 80 MB as text and 6 MB packed, and only the packed bytes are kept.
    `finish` gives what to store, as `pack` does (`JobContext.save_packed_result`).
    """

    def __init__(self, mime_type: str) -> None:
        self.mime_type = mime_type
        self._packer = zlib.compressobj(_LEVEL)
        self._packed: list[bytes] = []

    def write(self, data: bytes) -> None:
        self._packed.append(self._packer.compress(data))

    def finish(self) -> tuple[str, bytes]:
        """The stored MIME type and bytes; write nothing after."""
        self._packed.append(self._packer.flush())
        return self.mime_type + PACKED, b"".join(self._packed)


def unpack(stored_mime_type: str, stored: bytes) -> tuple[str, bytes]:
    """The document as it was saved, from what `pack` stored (or what was stored unpacked)."""
    if stored_mime_type.endswith(PACKED):
        return stored_mime_type.removesuffix(PACKED), zlib.decompress(stored)
    return stored_mime_type, stored
