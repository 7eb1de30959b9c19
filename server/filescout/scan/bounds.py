"""What keeps reading a document or an image bounded, whatever the file holds: a deadline
checked between pages, parts and chunks of XML; a cap on the text kept; a zip archive's
directory checked before a byte is inflated; XML that may not declare expanding entities.

A limit reached raises `Stop` with the problem to report (the text read so far is kept by the
reader that catches it). scan/extract.py sets the limits; scan/documents.py and
scan/images.py read the formats.
"""

from __future__ import annotations

import struct
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from io import BytesIO
from typing import IO, Literal, Protocol
from xml.parsers import expat

XML_CHUNK = 256 * 1024
"""Bytes of XML parsed between two looks at the clock."""
ARCHIVE_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError)
"""What reading a member of a damaged archive raises: a bad CRC (a size that lied), a truncated
or corrupt deflate stream."""
METADATA_BYTES = 1 << 20
"""The most of a small part (core properties, relationships, styles) ever read."""


class Stop(Exception):
    """Reading ends here; `problem` says why (see DocumentFacts.problem)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class TimedOut(Stop):
    """The deadline passed."""


class TextFull(Stop):
    """The text reached its cap."""


@dataclass
class Budget:
    """The limits of one extraction, and the clock it started on."""

    seconds: float
    text_chars: int
    parts: int
    """Pages, slides or sheets read at most."""
    zip_members: int
    zip_member_bytes: int
    zip_ratio: int
    zip_floor_bytes: int
    """An archive may expand to `zip_ratio` times its size, or this much, whichever is more."""
    pixels: int
    started: float = field(default_factory=time.monotonic)

    def check(self) -> None:
        """Raise TimedOut once the deadline has passed: called between units of work."""
        if time.monotonic() - self.started > self.seconds:
            raise TimedOut(f"timed out after {self.seconds:g} s")


class Text:
    """Text gathered piece by piece (lines, paragraphs, pages), up to a number of characters."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pieces: list[str] = []
        self.size = 0

    def add(self, piece: str) -> None:
        """Keep `piece` as a line of its own; raise TextFull when the cap is reached (the part
        that fits is kept)."""
        if not piece:
            return
        room = self.limit - self.size
        if len(piece) + 1 > room:
            self.pieces.append(piece[: max(room - 1, 0)])
            self.size = self.limit
            raise TextFull(f"text clipped at {self.limit} characters")
        self.pieces.append(piece)
        self.size += len(piece) + 1

    def __str__(self) -> str:
        return "\n".join(self.pieces)


def partial(stop: Stop | None, read: int, total: int, part: str) -> str:
    """The problem of a text read from some of its parts (empty when read whole): where a
    limit stopped it, in the part's own words."""
    if isinstance(stop, TimedOut):
        if read == 0:
            return f"{stop.problem}, before the first {part} was read"
        return f"{stop.problem}; text read from the first {read:,} of {total:,} {part}s"
    if isinstance(stop, TextFull):
        return f"{stop.problem}, in {part} {read} of {total}"
    if stop is not None:
        return stop.problem
    return f"text read from the first {read:,} of {total:,} {part}s" if read < total else ""


def clip(text: str, limit: int = 300) -> str:
    """A fact's value on one line, clipped: metadata is the file's say, not ours to trust."""
    return " ".join(text.split())[:limit]


# --- zip archives (OOXML) ------------------------------------------------------------------------


def _directory_entries(data: bytes) -> int | None:
    """The number of members the end of a zip archive states, before zipfile reads a directory
    that big; None when there is no end record (zipfile will say it is no zip)."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if end < 0 or end + 22 > len(data):
        return None
    (entries,) = struct.unpack_from("<H", data, end + 10)
    locator = data.rfind(b"PK\x06\x07", max(0, end - 20), end)
    if entries == 0xFFFF and locator >= 0:
        (offset,) = struct.unpack_from("<Q", data, locator + 8)
        if offset + 56 <= len(data) and data[offset : offset + 4] == b"PK\x06\x06":
            (entries,) = struct.unpack_from("<Q", data, offset + 32)
    return entries


class Package:
    """A zip archive (an OOXML package) whose directory passed the budget's checks: as many
    members as a document has, and no more expansion than documents show."""

    def __init__(self, data: bytes, budget: Budget) -> None:
        entries = _directory_entries(data)
        if entries is not None and entries > budget.zip_members:
            raise Stop(f"too large: more than {budget.zip_members} parts")
        try:
            self.archive = zipfile.ZipFile(BytesIO(data))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, EOFError) as exc:
            raise Stop(f"damaged: not a zip archive ({exc})") from None
        members = self.archive.infolist()
        if len(members) > budget.zip_members:
            raise Stop(f"too large: more than {budget.zip_members} parts")
        allowed = max(budget.zip_floor_bytes, budget.zip_ratio * len(data))
        if sum(member.file_size for member in members) > allowed:
            raise Stop(f"too large: expands to more than {allowed >> 20} MB")
        self.members = {member.filename: member for member in members}
        self.budget = budget

    def __contains__(self, name: str) -> bool:
        return name in self.members

    def open(self, name: str, limit: int | None = None) -> IO[bytes]:
        """A member to read as a stream, once its stated size is known to be within the limit
        (zipfile never inflates more than the size stated: a lie ends in a CRC error)."""
        member = self.members.get(name)
        if member is None:
            raise Stop(f"damaged: no {name}")
        limit = self.budget.zip_member_bytes if limit is None else limit
        if member.file_size > limit:
            raise Stop(f"too large: {name} expands to more than {limit >> 20} MB")
        if member.flag_bits & 0x1:
            raise Stop("encrypted")
        try:
            return self.archive.open(member)
        except NotImplementedError as exc:  # a compression method zipfile lacks
            raise Stop(f"damaged: {name}: {exc}") from None


# --- XML -----------------------------------------------------------------------------------------


class XmlReader(Protocol):
    """Callbacks of a streamed XML part. Names come as "namespace local", or "local" alone."""

    def start(self, name: str, attributes: dict[str, str]) -> None: ...

    def end(self, name: str) -> None: ...

    def text(self, data: str) -> None: ...


@lru_cache(maxsize=1024)
def local(name: str) -> str:
    """An element's or attribute's name without its namespace (remembered: a big part calls
    this a few million times with a few dozen names)."""
    return name[name.rfind(" ") + 1 :]


def attribute(attributes: dict[str, str], name: str, namespace_end: str = "") -> str:
    """An attribute by its local name (and the end of its namespace, e.g. "relationships" for
    r:id, which shares its local name with plain id)."""
    for key, value in attributes.items():
        space, _, own = key.rpartition(" ")
        if own == name and space.endswith(namespace_end) and (namespace_end or not space):
            return value
    return ""


Entities = Literal["none", "flat"]
"""none: no DTD at all (OOXML has none); flat: a few short entities that name no other entity
(what drawing programs declare in SVG), never one that expands into more."""
FLAT_ENTITIES = 64
FLAT_ENTITY_CHARS = 256


def _refuse_doctype(*_: object) -> None:
    raise Stop("refused: XML entity declarations")


def _flat_entities() -> Callable[..., None]:
    declared = 0

    def declare(name: str, is_parameter: int, value: str | None, *_: object) -> None:
        nonlocal declared
        declared += 1
        if (
            is_parameter
            or value is None
            or "&" in value
            or "%" in value
            or len(value) > FLAT_ENTITY_CHARS
            or declared > FLAT_ENTITIES
        ):
            raise Stop("refused: XML entities that expand")

    return declare


def parse_xml(
    source: IO[bytes] | bytes, reader: XmlReader, budget: Budget, *, entities: Entities = "none"
) -> None:
    """Stream `source` through `reader` with expat, a chunk at a time, the clock checked
    between chunks. No external entity or DTD is ever fetched; entity declarations follow
    `entities`. Raises Stop (from the budget or the reader) or expat.ExpatError."""
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.buffer_text = True
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.text
    if entities == "none":
        parser.StartDoctypeDeclHandler = _refuse_doctype
        parser.EntityDeclHandler = _refuse_doctype
    else:
        parser.EntityDeclHandler = _flat_entities()
    try:
        if isinstance(source, bytes):
            for start in range(0, len(source), XML_CHUNK):
                budget.check()
                parser.Parse(source[start : start + XML_CHUNK], False)
        else:
            while chunk := source.read(XML_CHUNK):
                budget.check()
                parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except LookupError as exc:  # an encoding Python does not know, declared in the XML
        raise Stop(f"damaged: {exc}") from None
