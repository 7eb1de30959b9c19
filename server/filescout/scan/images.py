"""The facts of images, read from their headers: the size in pixels, and from EXIF the date of
capture and the camera. A pixel is never decoded, so an image claiming billions of them costs
what its header does; EXIF's GPS block is never read, so a location cannot leak from here.

An SVG is XML: its title, description and text elements are its text, its width, height (or
viewBox) its size. Other images have no text.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from xml.parsers import expat

from filescout.core.records import DocumentFacts, Extracted
from filescout.scan.bounds import Budget, Stop, Text, attribute, clip, local, parse_xml

EXIF_ENTRIES = 512
"""Entries read of one EXIF directory at most (cameras write a few dozen)."""
SEGMENTS = 4096
"""JPEG segments or PNG/WebP chunks looked at before the size must have been found."""

# --- EXIF --------------------------------------------------------------------------------------

MAKE, MODEL, EXIF_POINTER = 0x010F, 0x0110, 0x8769
TAKEN, DIGITIZED = 0x9003, 0x9004
WIDTH, LENGTH = 0x0100, 0x0101
EXIF_DATE = re.compile(r"(\d{4})[:-](\d{2})[:-](\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2}))?")


class _Tiff:
    """A TIFF structure (a .tiff file, or the EXIF block of a JPEG, PNG or WebP): directories of
    tagged values. Only the directories asked for are read; the GPS directory never is."""

    def __init__(self, data: bytes) -> None:
        order = data[:2]
        if order not in (b"II", b"MM"):
            raise ValueError("no TIFF byte order")
        self.data = data
        self.endian = "<" if order == b"II" else ">"
        (self.first,) = struct.unpack_from(self.endian + "I", data, 4)

    def directory(self, offset: int) -> dict[int, tuple[int, int, bytes]]:
        """tag → (type, count, the value's bytes, or its offset's when longer than four)."""
        data, endian = self.data, self.endian
        if offset <= 0 or offset + 2 > len(data):
            return {}
        (count,) = struct.unpack_from(endian + "H", data, offset)
        entries = {}
        for index in range(min(count, EXIF_ENTRIES)):
            at = offset + 2 + 12 * index
            if at + 12 > len(data):
                break
            tag, kind, items = struct.unpack_from(endian + "HHI", data, at)
            entries[tag] = (kind, items, data[at + 8 : at + 12])
        return entries

    def text(self, entry: tuple[int, int, bytes] | None) -> str:
        """An ASCII value (type 2), clipped."""
        if entry is None or entry[0] != 2:
            return ""
        _, count, field = entry
        if count <= 4:
            raw = field[:count]
        else:
            (offset,) = struct.unpack(self.endian + "I", field)
            raw = self.data[offset : offset + min(count, 256)]
        return clip(raw.split(b"\x00", 1)[0].decode("latin-1"), 120)

    def number(self, entry: tuple[int, int, bytes] | None) -> int | None:
        """A SHORT (3) or LONG (4) value held in the entry itself."""
        if entry is None:
            return None
        kind, _, field = entry
        if kind == 3:
            return int(struct.unpack(self.endian + "H", field[:2])[0])
        if kind == 4:
            return int(struct.unpack(self.endian + "I", field)[0])
        return None

    def pointer(self, entry: tuple[int, int, bytes] | None) -> int:
        value = self.number(entry)
        return value if value is not None else 0


def exif_date(value: str) -> str:
    """ "2023:06:01 10:20:30" (EXIF's own form) in ISO 8601; empty when it is none."""
    found = EXIF_DATE.match(value.strip())
    if found is None or found.group(1) == "0000":
        return ""
    year, month, day, hour, minute, second = found.groups()
    date = f"{year}-{month}-{day}"
    return f"{date}T{hour}:{minute}:{second}" if hour else date


def camera(make: str, model: str) -> str:
    """ "Canon" and "Canon EOS 80D" make "Canon EOS 80D"; "NIKON CORPORATION" and "NIKON D750"
    make "NIKON CORPORATION NIKON D750" (the model says what the make says, or adds to it)."""
    if model.lower().startswith(make.lower()):
        return model
    return f"{make} {model}".strip()


def exif_facts(block: bytes, facts: DocumentFacts) -> DocumentFacts:
    """The camera and date of capture from an EXIF block (a TIFF structure); the facts unchanged
    when it cannot be read."""
    try:
        tiff = _Tiff(block)
        zeroth = tiff.directory(tiff.first)
        exif = tiff.directory(tiff.pointer(zeroth.get(EXIF_POINTER)))
    except (ValueError, struct.error):
        return facts
    taken = exif_date(tiff.text(exif.get(TAKEN)) or tiff.text(exif.get(DIGITIZED)))
    return _with(facts, camera=camera(tiff.text(zeroth.get(MAKE)), tiff.text(zeroth.get(MODEL))), taken=taken)


def _with(facts: DocumentFacts, **values: Any) -> DocumentFacts:
    """`facts` with the non-empty `values` set."""
    return replace(facts, **{name: value for name, value in values.items() if value})


# --- the formats -------------------------------------------------------------------------------


def _png(data: bytes, facts: DocumentFacts) -> DocumentFacts:
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        raise Stop("damaged: not a PNG")
    width, height = struct.unpack_from(">II", data, 16)
    facts = _with(facts, width=width, height=height)
    at = 8
    for _ in range(SEGMENTS):
        if at + 8 > len(data):
            break
        size, kind = struct.unpack_from(">I4s", data, at)
        body = data[at + 8 : at + 8 + size]
        if kind == b"eXIf":
            facts = exif_facts(body, facts)
        elif kind == b"tEXt":
            keyword, _, value = body.partition(b"\x00")
            field = {b"Title": "title", b"Author": "author"}.get(keyword)
            if field:
                facts = _with(facts, **{field: clip(value.decode("latin-1"))})
        elif kind in (b"IDAT", b"IEND"):
            break
        at += 12 + size
    return facts


JPEG_FRAMES = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg(data: bytes, facts: DocumentFacts) -> DocumentFacts:
    if not data.startswith(b"\xff\xd8"):
        raise Stop("damaged: not a JPEG")
    at, sized = 2, False
    for _ in range(SEGMENTS):
        while at < len(data) and data[at] == 0xFF and at + 1 < len(data) and data[at + 1] == 0xFF:
            at += 1  # fill bytes
        if at + 4 > len(data) or data[at] != 0xFF:
            break
        marker = data[at + 1]
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:
            at += 2
            continue
        if marker in (0xD9, 0xDA):  # the end, or the start of the image data: no header follows
            break
        (size,) = struct.unpack_from(">H", data, at + 2)
        body = data[at + 4 : at + 2 + size]
        if marker == 0xE1 and body.startswith(b"Exif\x00\x00") and not facts.taken and not facts.camera:
            facts = exif_facts(body[6:], facts)
        elif marker in JPEG_FRAMES and len(body) >= 5 and not sized:
            height, width = struct.unpack_from(">HH", body, 1)
            facts, sized = _with(facts, width=width, height=height), True
        at += 2 + size
    if not sized:
        raise Stop("damaged: a JPEG without its frame header")
    return facts


def _gif(data: bytes, facts: DocumentFacts) -> DocumentFacts:
    if data[:6] not in (b"GIF87a", b"GIF89a") or len(data) < 10:
        raise Stop("damaged: not a GIF")
    width, height = struct.unpack_from("<HH", data, 6)
    return _with(facts, width=width, height=height)


def _webp(data: bytes, facts: DocumentFacts) -> DocumentFacts:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise Stop("damaged: not a WebP")
    at, sized = 12, False
    for _ in range(SEGMENTS):
        if at + 8 > len(data):
            break
        kind, size = struct.unpack_from("<4sI", data, at)
        body = data[at + 8 : at + 8 + size]
        if kind == b"VP8X" and len(body) >= 10:
            width = int.from_bytes(body[4:7], "little") + 1
            height = int.from_bytes(body[7:10], "little") + 1
            facts, sized = _with(facts, width=width, height=height), True
        elif kind == b"VP8 " and len(body) >= 10 and not sized:
            width, height = struct.unpack_from("<HH", body, 6)
            facts, sized = _with(facts, width=width & 0x3FFF, height=height & 0x3FFF), True
        elif kind == b"VP8L" and len(body) >= 5 and not sized:
            (bits,) = struct.unpack_from("<I", body, 1)
            width, height = (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            facts, sized = _with(facts, width=width, height=height), True
        elif kind == b"EXIF":
            facts = exif_facts(body[6:] if body.startswith(b"Exif\x00\x00") else body, facts)
        at += 8 + size + (size & 1)
    if not sized:
        raise Stop("damaged: a WebP without its image header")
    return facts


def _bmp(data: bytes, facts: DocumentFacts) -> DocumentFacts:
    if data[:2] != b"BM" or len(data) < 26:
        raise Stop("damaged: not a BMP")
    (header,) = struct.unpack_from("<I", data, 14)
    width, height = struct.unpack_from("<HH" if header == 12 else "<ii", data, 18)
    return _with(facts, width=abs(width), height=abs(height))


def _tiff(data: bytes, facts: DocumentFacts) -> DocumentFacts:
    try:
        tiff = _Tiff(data)
        zeroth = tiff.directory(tiff.first)
    except (ValueError, struct.error):
        raise Stop("damaged: not a TIFF") from None
    if data[2:4] not in (b"*\x00", b"\x00*"):
        raise Stop("damaged: not a TIFF")
    facts = _with(facts, width=tiff.number(zeroth.get(WIDTH)), height=tiff.number(zeroth.get(LENGTH)))
    return exif_facts(data, facts)


def _ico(data: bytes, facts: DocumentFacts) -> DocumentFacts:
    if len(data) < 6 or data[:2] != b"\x00\x00" or data[2:4] not in (b"\x01\x00", b"\x02\x00"):
        raise Stop("damaged: not an icon")
    (count,) = struct.unpack_from("<H", data, 4)
    sizes = []
    for index in range(min(count, 256)):
        at = 6 + 16 * index
        if at + 16 > len(data):
            break
        sizes.append((data[at] or 256, data[at + 1] or 256))
    if not sizes:
        raise Stop("damaged: an icon without images")
    width, height = max(sizes, key=lambda size: size[0] * size[1])
    return _with(facts, width=width, height=height, parts=len(sizes), part_name="image")


RASTER: dict[str, Callable[[bytes, DocumentFacts], DocumentFacts]] = {
    "png": _png,
    "jpeg": _jpeg,
    "gif": _gif,
    "webp": _webp,
    "bmp": _bmp,
    "tiff": _tiff,
    "ico": _ico,
}


def raster(fmt: str, data: bytes, budget: Budget) -> Extracted:
    """An image's size, camera and date of capture, from its header alone. A header claiming
    more pixels than anything should decode keeps its facts and says so."""
    try:
        facts = RASTER[fmt](data, DocumentFacts(fmt))
    except struct.error:
        raise Stop(f"damaged: a truncated {fmt.upper()} header") from None
    if facts.width is not None and facts.height is not None and facts.width * facts.height > budget.pixels:
        facts = _with(facts, problem=f"too large: {facts.width}x{facts.height} pixels")
    return Extracted("", facts)


# --- SVG -----------------------------------------------------------------------------------------

UNITS = {"": 1.0, "px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4}
LENGTH_VALUE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z]*)\s*$")
TEXT_ELEMENTS = frozenset({"title", "desc", "text"})


def svg_length(value: str) -> int | None:
    """A width or height in CSS pixels ("210mm" is 794); None for a percentage or nonsense."""
    found = LENGTH_VALUE.match(value)
    if found is None or found.group(2) not in UNITS:
        return None
    pixels = round(float(found.group(1)) * UNITS[found.group(2)])
    return pixels if 0 < pixels < 1 << 31 else None


class _SvgText:
    """The root's size, the first title, and each title, desc and text element's text as a
    line of its own (a text element's tspans joined into it); style and script left out."""

    def __init__(self, text: Text) -> None:
        self.out = text
        self.root: dict[str, str] | None = None
        self.title = ""
        self.depth = 0
        self.inside: list[str] = []
        """The text being gathered: from the outermost title, desc or text element open."""
        self.gathering = 0

    def start(self, name: str, attributes: dict[str, str]) -> None:
        element = local(name)
        if self.root is None:
            if element != "svg":
                raise Stop("damaged: not an SVG")
            self.root = attributes
        if element in TEXT_ELEMENTS or self.gathering:
            self.gathering += 1

    def end(self, name: str) -> None:
        if not self.gathering:
            return
        self.gathering -= 1
        if self.gathering == 0:
            line = " ".join("".join(self.inside).split())
            self.inside = []
            if line and local(name) == "title" and not self.title:
                self.title = clip(line)
            self.out.add(line)

    def text(self, data: str) -> None:
        if self.gathering:
            self.inside.append(data)


def svg(data: bytes, budget: Budget) -> Extracted:
    """An SVG's text (title, desc, text elements) and its size: width and height, or its
    viewBox's when they are missing or relative."""
    text = Text(budget.text_chars)
    reader = _SvgText(text)
    problem = ""
    try:
        parse_xml(data, reader, budget, entities="flat")
    except expat.ExpatError as exc:
        if reader.root is None:
            raise Stop(f"damaged: {exc}") from None
        problem = f"damaged: {exc}"
    except Stop as stop:
        if reader.root is None:
            raise
        problem = stop.problem
    root = reader.root or {}
    width = svg_length(attribute(root, "width"))
    height = svg_length(attribute(root, "height"))
    box = attribute(root, "viewBox").replace(",", " ").split()
    if (width is None or height is None) and len(box) == 4:
        try:
            width = width or svg_length(box[2])
            height = height or svg_length(box[3])
        except ValueError:
            pass
    facts = _with(DocumentFacts("svg"), title=reader.title, width=width, height=height, problem=problem)
    return Extracted(str(text), facts)
