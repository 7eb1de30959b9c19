"""The text and facts of documents: PDF (pypdf), and Word, PowerPoint and Excel files (OOXML,
read with the standard library: a zip archive of XML parts, streamed through expat).

Text comes in reading order: a Word document's paragraphs (headings among them) and its tables'
rows; a presentation's slides, each its title, its other text and its speaker notes; a
workbook's sheets, each its name and its rows of cell values. Facts come from the document's
own metadata (a PDF's information dictionary, an OOXML package's docProps/core.xml).

Every reader raises Stop for a file it cannot read at all; a limit reached part-way ends the
text where it was, with the problem saying so (scan/bounds.py).
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from io import BytesIO
from itertools import islice
from types import ModuleType
from typing import TypeVar
from xml.parsers import expat

from filescout.core.records import DocumentFacts, Extracted
from filescout.scan.bounds import (
    ARCHIVE_ERRORS,
    METADATA_BYTES,
    Budget,
    Package,
    Stop,
    Text,
    XmlReader,
    attribute,
    clip,
    local,
    parse_xml,
    partial,
)

HEADINGS = 200
"""Headings, slide titles or sheet names kept at most."""
PDF_STREAM_BYTES = 32 << 20
"""The most one PDF stream may inflate to (pypdf's own default is 75 MB): a page's text never
needs more, and a bomb stops here."""
PDF_WORK = 2_000_000
"""pypdf's budget of operators and operands parsed per content stream (its default): what
bounds the time one page can take, between two looks at the clock."""
PDF_HEADER = re.compile(rb"%PDF-\d")

# --- PDF -----------------------------------------------------------------------------------------


@cache
def _pypdf() -> ModuleType:
    """pypdf, imported when the first PDF is met (a worker that never meets one never loads it),
    its warnings about damaged files kept out of the log: the facts say it."""
    import pypdf

    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    return pypdf


def _pdf_limits() -> dict[str, object]:
    return {
        "zlib_maximum_output_length": PDF_STREAM_BYTES,
        "lzw_maximum_output_length": PDF_STREAM_BYTES,
        "run_length_maximum_output_length": PDF_STREAM_BYTES,
        "array_based_stream_maximum_output_length": PDF_STREAM_BYTES,
        "brotli_maximum_output_length": PDF_STREAM_BYTES,
        "image_maximum_buffer_size": PDF_STREAM_BYTES,
        "stream_parsing_work_maximum_count": PDF_WORK,
        "jbig2dec_binary": None,  # never run a program on a file's images
    }


PDF_DATE = re.compile(r"D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz]|[+-]\d{2}'?\d{2}'?)?")


def pdf_date(value: object) -> str:
    """A PDF date ("D:20240305102030+01'00'") in ISO 8601; empty when it is none."""
    found = PDF_DATE.match(str(value or "").strip())
    if found is None:
        return ""
    year, month, day, hour, minute, second, zone = found.groups()
    date = "-".join(part for part in (year, month, day) if part)
    if hour is None:
        return date
    time_of_day = ":".join(part or "00" for part in (hour, minute, second))
    offset = ""
    if zone:
        digits = zone.replace("'", "")
        offset = "Z" if digits in "Zz" else f"{digits[:3]}:{digits[3:5]}"
    return f"{date}T{time_of_day}{offset}"


def _outline_titles(outline: object, depth: int = 0) -> Iterator[str]:
    """Bookmark titles, depth first, two levels deep (pypdf nests a list after each parent)."""
    if not isinstance(outline, list) or depth > 1:
        return
    for item in outline:
        if isinstance(item, list):
            yield from _outline_titles(item, depth + 1)
        else:
            title = getattr(item, "title", None)
            if isinstance(title, str) and title.strip():
                yield clip(title, 200)


def pdf(data: bytes, budget: Budget) -> Extracted:
    """A PDF's text page by page (pypdf, its decompression limits lowered), its information
    dictionary, outline and first page's size."""
    if PDF_HEADER.search(data[:1024]) is None:
        raise Stop("damaged: not a PDF")
    pypdf = _pypdf()
    errors = pypdf.errors
    facts = DocumentFacts("pdf", part_name="page")
    text = Text(budget.text_chars)
    with pypdf.apply_configuration(**_pdf_limits()):
        try:
            reader = pypdf.PdfReader(BytesIO(data), strict=False)
            if reader.is_encrypted and not reader.decrypt(""):
                raise Stop("encrypted")
            facts = _pdf_facts(reader, facts)
            pages = reader.pages
            total = len(pages)
            facts = replace(facts, parts=total)
        except Stop:
            raise
        except errors.FileNotDecryptedError:
            raise Stop("encrypted") from None
        except errors.DependencyError:  # AES without the cryptography package
            raise Stop("encrypted") from None
        except errors.LimitReachedError as exc:
            raise Stop(f"too large: {exc}") from None
        except Exception as exc:  # pypdf meets many shapes of damage; each is the file's
            raise Stop(f"damaged: {_reason(exc)}") from None
        read, stop, trouble = 0, None, ""
        try:
            for page in pages:
                if read >= budget.parts:
                    break
                budget.check()
                read += 1
                try:
                    page_text = page.extract_text()
                except errors.LimitReachedError:
                    trouble = (
                        trouble
                        or f"too large: a page's content expands to more than {PDF_STREAM_BYTES >> 20} MB"
                    )
                    continue
                except Exception as exc:
                    trouble = trouble or f"damaged: page {read}: {_reason(exc)}"
                    continue
                text.add(page_text.strip())
        except Stop as reached:
            stop = reached
        problem = partial(stop, read, total, "page") or trouble
    if problem:
        facts = replace(facts, parts_read=read if read < total else None, problem=problem)
    return Extracted(str(text), facts)


def _pdf_facts(reader: object, facts: DocumentFacts) -> DocumentFacts:
    """Title, author, dates, bookmarks and the first page's size in points; whatever of them
    cannot be read is left out, never a reason to give up on the text."""
    try:
        info = getattr(reader, "metadata", None)
        if info is not None:
            facts = replace(
                facts,
                title=clip(str(info.title or "")),
                author=clip(str(info.author or "")),
                created=pdf_date(info.creation_date_raw),
                modified=pdf_date(info.modification_date_raw),
            )
    except Exception:
        pass
    try:
        headings = tuple(islice(_outline_titles(getattr(reader, "outline", [])), HEADINGS))
        facts = replace(facts, headings=headings)
    except Exception:
        pass
    try:
        box = reader.pages[0].mediabox  # type: ignore[attr-defined]
        facts = replace(facts, width=round(float(box.width)), height=round(float(box.height)))
    except Exception:
        pass
    return facts


def _count(value: str) -> int | None:
    """A small whole number a part states; None for anything else (int() would take "²", or
    raise on five thousand digits)."""
    value = value.strip()
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 9 else None


def _reason(exc: BaseException) -> str:
    """An exception as a short reason: its message, else its kind."""
    message = clip(str(exc), 160)
    return message or type(exc).__name__


# --- OOXML: the package ----------------------------------------------------------------------------

OFFICE_DOCUMENT = "officeDocument"
CORE_PROPERTIES = "core-properties"


class _Relationships:
    """A _rels part: each relationship's type (its last word) and target, resolved against the
    part it belongs to."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.targets: dict[str, tuple[str, str]] = {}
        """id → (type, part name)"""

    def start(self, name: str, attributes: dict[str, str]) -> None:
        if local(name) != "Relationship" or attribute(attributes, "TargetMode") == "External":
            return
        target = attribute(attributes, "Target")
        kind = attribute(attributes, "Type").rstrip("/").rpartition("/")[2]
        if target.startswith("/"):
            path = target.lstrip("/")
        else:
            path = posixpath.normpath(posixpath.join(self.base, target))
        self.targets[attribute(attributes, "Id")] = (kind, path)

    def end(self, name: str) -> None:
        pass

    def text(self, data: str) -> None:
        pass

    def of_type(self, kind: str) -> list[str]:
        return [path for found, path in self.targets.values() if found == kind]


def _relationships(package: Package, part: str) -> _Relationships:
    """The relationships of `part` ("" for the package's own): none when it has no _rels part."""
    folder, _, name = part.rpartition("/")
    rels_name = posixpath.join(folder, "_rels", f"{name}.rels")
    found = _Relationships(folder)
    if rels_name in package:
        _read_part(package, rels_name, found, METADATA_BYTES)
    return found


class _Properties:
    """docProps/core.xml: the title, creator and dates Office records."""

    def __init__(self) -> None:
        self.fields = {"title": "title", "creator": "author", "created": "created", "modified": "modified"}
        self.values: dict[str, str] = {}
        self.field: str | None = None
        self.depth = 0

    def start(self, name: str, attributes: dict[str, str]) -> None:
        self.depth += 1
        self.field = self.fields.get(local(name)) if self.depth == 2 else None

    def end(self, name: str) -> None:
        self.depth -= 1
        self.field = None

    def text(self, data: str) -> None:
        if self.field is not None:
            self.values[self.field] = self.values.get(self.field, "") + data


class _Counts:
    """docProps/app.xml: the page count Word records (the only count not in the package)."""

    def __init__(self) -> None:
        self.pages = ""
        self.inside = False

    def start(self, name: str, attributes: dict[str, str]) -> None:
        self.inside = local(name) == "Pages"

    def end(self, name: str) -> None:
        self.inside = False

    def text(self, data: str) -> None:
        if self.inside:
            self.pages += data


_Handler = TypeVar("_Handler", bound=XmlReader)


def _metadata(
    package: Package, package_rels: _Relationships, kind: str, usual: str, handler: _Handler
) -> _Handler | None:
    """A metadata part (core or extended properties) read into `handler`; None when it is
    missing or unreadable: the text still counts."""
    part = (package_rels.of_type(kind) or [usual])[0]
    if part not in package:
        return None
    try:
        _read_part(package, part, handler, METADATA_BYTES)
    except Stop:
        return None
    return handler


def _package_facts(package: Package, package_rels: _Relationships, facts: DocumentFacts) -> DocumentFacts:
    """The core properties; left out when missing or unreadable (the text still counts)."""
    properties = _metadata(package, package_rels, CORE_PROPERTIES, "docProps/core.xml", _Properties())
    if properties is None:
        return facts
    values = {name: clip(value) for name, value in properties.values.items()}
    return replace(
        facts,
        title=values.get("title", ""),
        author=values.get("author", ""),
        created=values.get("created", ""),
        modified=values.get("modified", ""),
    )


def _main_part(package: Package, package_rels: _Relationships, default: str) -> str:
    found = package_rels.of_type(OFFICE_DOCUMENT)
    return found[0] if found and found[0] in package else default


def _read_part(package: Package, part: str, reader: XmlReader, limit: int | None = None) -> None:
    """Stream one part through a reader; XML that does not parse is damage, named by its part."""
    try:
        with package.open(part, limit) as stream:
            parse_xml(stream, reader, package.budget)
    except expat.ExpatError as exc:
        raise Stop(f"damaged: {part}: {exc}") from None
    except ARCHIVE_ERRORS as exc:
        raise Stop(f"damaged: {part}: {_reason(exc)}") from None


OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
"""Office saves a password-protected document as an OLE container holding this stream, not as
a zip archive."""


def _open_package(data: bytes, budget: Budget) -> tuple[Package, _Relationships]:
    if data.startswith(OLE_SIGNATURE):
        if ENCRYPTED_PACKAGE in data:
            raise Stop("encrypted")
        raise Stop("damaged: an old Office format (OLE), not OOXML")
    package = Package(data, budget)
    return package, _relationships(package, "")


# --- Word ------------------------------------------------------------------------------------------

HEADING_STYLE = re.compile(r"(?i)^(heading\s*\d|title)$")


def _marks_heading(element: str, attributes: dict[str, str]) -> bool:
    """A style's name ("heading 2") or outline level (0-8) that makes its paragraphs headings."""
    value = attribute(attributes, "val", "main")
    return bool(HEADING_STYLE.match(value)) if element == "name" else value not in ("", "9")


class _Styles:
    """word/styles.xml: which paragraph styles are headings (built-in names are English
    whatever the language of Word, "heading 1"; or a style with an outline level)."""

    def __init__(self) -> None:
        self.headings: set[str] = set()
        self.style = ""

    def start(self, name: str, attributes: dict[str, str]) -> None:
        element = local(name)
        if element == "style":
            self.style = attribute(attributes, "styleId", "main")
        elif element in ("name", "outlineLvl") and self.style and _marks_heading(element, attributes):
            self.headings.add(self.style)

    def end(self, name: str) -> None:
        if local(name) == "style":
            self.style = ""

    def text(self, data: str) -> None:
        pass


class _WordBody:
    """word/document.xml in reading order: a paragraph a line, a table row a line of its cells'
    text (tab-separated; a nested table's rows inside its cell). Deleted text, field codes and
    the fallback copies of text boxes are left out."""

    def __init__(self, text: Text, heading_styles: set[str]) -> None:
        self.out = text
        self.heading_styles = heading_styles
        self.headings: list[str] = []
        self.paragraphs: list[list[str]] = []
        self.heading_flags: list[bool] = []
        self.cells: list[list[str]] = []
        self.rows: list[list[str]] = []
        self.in_text = False
        self.in_properties = 0
        self.skipping = 0

    def start(self, name: str, attributes: dict[str, str]) -> None:
        element = local(name)
        if self.skipping or element == "Fallback":
            self.skipping += 1
        elif element == "t":
            self.in_text = True
        elif element == "p":
            self.paragraphs.append([])
            self.heading_flags.append(False)
        elif element == "tr":
            self.rows.append([])
        elif element == "tc":
            self.cells.append([])
        elif not self.paragraphs:
            return
        elif element == "pPr":
            self.in_properties += 1
        elif element == "tab" and not self.in_properties:  # a tab stop's definition is no tab
            self.paragraphs[-1].append("\t")
        elif element in ("br", "cr"):
            self.paragraphs[-1].append("\n")
        elif element == "pStyle":
            if attribute(attributes, "val", "main") in self.heading_styles:
                self.heading_flags[-1] = True
        elif element == "outlineLvl" and attribute(attributes, "val", "main") not in ("", "9"):
            self.heading_flags[-1] = True

    def end(self, name: str) -> None:
        element = local(name)
        if self.skipping:
            self.skipping -= 1
            return
        if element == "t":
            self.in_text = False
        elif element == "pPr" and self.in_properties:
            self.in_properties -= 1
        elif element == "p" and self.paragraphs:
            line = "".join(self.paragraphs.pop()).strip()
            heading = self.heading_flags.pop()
            if heading and line and len(self.headings) < HEADINGS:
                self.headings.append(clip(line, 200))
            self._emit(line)
        elif element == "tc" and self.cells:
            cell = " ".join(piece for piece in self.cells.pop() if piece)
            if self.rows:
                self.rows[-1].append(cell)
        elif element == "tr" and self.rows:
            self._emit("\t".join(self.rows.pop()).rstrip())

    def _emit(self, line: str) -> None:
        if self.cells:
            self.cells[-1].append(line)
        else:
            self.out.add(line)

    def text(self, data: str) -> None:
        if self.in_text and self.paragraphs and not self.skipping:
            self.paragraphs[-1].append(data)


def docx(data: bytes, budget: Budget) -> Extracted:
    """A Word document's text, headings, core properties and recorded page count."""
    package, package_rels = _open_package(data, budget)
    facts = _package_facts(package, package_rels, DocumentFacts("docx", part_name="page"))
    main = _main_part(package, package_rels, "word/document.xml")
    styles = _Styles()
    style_parts = _relationships(package, main).of_type("styles") or ["word/styles.xml"]
    if style_parts[0] in package:
        try:
            with package.open(style_parts[0], 16 * METADATA_BYTES) as stream:
                parse_xml(stream, styles, budget)
        except (expat.ExpatError, *ARCHIVE_ERRORS):
            pass
    facts = replace(facts, parts=_recorded_pages(package, package_rels))
    text = Text(budget.text_chars)
    body = _WordBody(text, styles.headings or {"Title", *(f"Heading{n}" for n in range(1, 10))})
    problem = ""
    try:
        _read_part(package, main, body)
    except Stop as stop:
        problem = stop.problem
    facts = replace(facts, headings=tuple(body.headings), problem=problem)
    return Extracted(str(text), facts)


def _recorded_pages(package: Package, package_rels: _Relationships) -> int | None:
    counts = _metadata(package, package_rels, "extended-properties", "docProps/app.xml", _Counts())
    if counts is None:
        return None
    pages = counts.pages.strip()
    count = _count(pages)
    return count if count else None


# --- PowerPoint ------------------------------------------------------------------------------------


class _SlideOrder:
    """ppt/presentation.xml: the slides' relationship ids in the order they are shown."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def start(self, name: str, attributes: dict[str, str]) -> None:
        if local(name) == "sldId":
            self.ids.append(attribute(attributes, "id", "relationships"))

    def end(self, name: str) -> None:
        pass

    def text(self, data: str) -> None:
        pass


class _SlideText:
    """A slide's (or its notes') shapes: each paragraph a line; the title placeholder's text
    apart. `placeholders`: only shapes of these placeholder types (notes: the body)."""

    TITLES = ("title", "ctrTitle")

    def __init__(self, placeholders: tuple[str, ...] = ()) -> None:
        self.placeholders = placeholders
        self.title: list[str] = []
        self.lines: list[str] = []
        self.paragraph: list[str] | None = None
        self.shape_type: str | None = None
        self.in_text = False

    def start(self, name: str, attributes: dict[str, str]) -> None:
        element = local(name)
        if element == "sp":
            self.shape_type = ""
        elif element == "ph" and self.shape_type is not None:
            self.shape_type = attribute(attributes, "type") or "body"
        elif element == "p" and self.paragraph is None:
            self.paragraph = []
        elif element == "t":
            self.in_text = True
        elif element == "br" and self.paragraph is not None:
            self.paragraph.append(" ")

    def end(self, name: str) -> None:
        element = local(name)
        if element == "t":
            self.in_text = False
        elif element == "p" and self.paragraph is not None:
            line = "".join(self.paragraph).strip()
            self.paragraph = None
            if not line or (self.placeholders and self.shape_type not in self.placeholders):
                return
            (self.title if self.shape_type in self.TITLES else self.lines).append(line)
        elif element == "sp":
            self.shape_type = None

    def text(self, data: str) -> None:
        if self.in_text and self.paragraph is not None:
            self.paragraph.append(data)


def pptx(data: bytes, budget: Budget) -> Extracted:
    """A presentation's slides in order: each its title, its other text, its speaker notes."""
    package, package_rels = _open_package(data, budget)
    facts = _package_facts(package, package_rels, DocumentFacts("pptx", part_name="slide"))
    main = _main_part(package, package_rels, "ppt/presentation.xml")
    order = _SlideOrder()
    _read_part(package, main, order)
    main_rels = _relationships(package, main)
    slides = [main_rels.targets[rid][1] for rid in order.ids if rid in main_rels.targets]
    text = Text(budget.text_chars)
    titles: list[str] = []
    read, stop = 0, None
    try:
        for part in slides:
            if read >= budget.parts:
                break
            read += 1
            slide = _SlideText()
            _read_part(package, part, slide)
            title = " ".join(slide.title)
            if title and len(titles) < HEADINGS:
                titles.append(clip(title, 200))
            text.add(title)
            for line in slide.lines:
                text.add(line)
            for notes_part in _relationships(package, part).of_type("notesSlide")[:1]:
                notes = _SlideText(placeholders=("body",))
                _read_part(package, notes_part, notes)
                for line in notes.lines:
                    text.add(line)
    except Stop as reached:
        stop = reached
    facts = replace(
        facts,
        parts=len(slides),
        headings=tuple(titles),
        problem=partial(stop, read, len(slides), "slide"),
        parts_read=read if read < len(slides) else None,
    )
    return Extracted(str(text), facts)


# --- Excel -----------------------------------------------------------------------------------------

SHARED_STRINGS = 500_000
"""Shared strings kept at most (text cells past them read as empty)."""


class _Sheets:
    """xl/workbook.xml: each sheet's name and relationship id, in order."""

    def __init__(self) -> None:
        self.sheets: list[tuple[str, str]] = []

    def start(self, name: str, attributes: dict[str, str]) -> None:
        if local(name) == "sheet":
            self.sheets.append((attribute(attributes, "name"), attribute(attributes, "id", "relationships")))

    def end(self, name: str) -> None:
        pass

    def text(self, data: str) -> None:
        pass


class _Enough(Stop):
    """As many shared strings as the text can show are read."""


class _SharedStrings:
    """xl/sharedStrings.xml: the text cells refer to, by index; phonetic runs left out."""

    def __init__(self, limit_chars: int) -> None:
        self.strings: list[str] = []
        self.current: list[str] | None = None
        self.in_text = False
        self.skipping = 0
        self.room = limit_chars

    def start(self, name: str, attributes: dict[str, str]) -> None:
        element = local(name)
        if element == "si":
            self.current = []
        elif element == "rPh":
            self.skipping += 1
        elif element == "t" and not self.skipping:
            self.in_text = True

    def end(self, name: str) -> None:
        element = local(name)
        if element == "t":
            self.in_text = False
        elif element == "rPh":
            self.skipping -= 1
        elif element == "si" and self.current is not None:
            value = "".join(self.current)
            self.current = None
            self.room -= len(value)
            self.strings.append(value)
            if self.room <= 0 or len(self.strings) >= SHARED_STRINGS:
                raise _Enough("enough")

    def text(self, data: str) -> None:
        if self.in_text and self.current is not None:
            self.current.append(data)


class _SheetCells:
    """A worksheet's rows: each row a line of its cells' values, tab-separated."""

    def __init__(self, shared: list[str], text: Text) -> None:
        self.shared = shared
        self.out = text
        self.row: list[str] = []
        self.kind = ""
        self.value: list[str] = []
        self.collecting = False

    def start(self, name: str, attributes: dict[str, str]) -> None:
        element = local(name)
        if element == "row":
            self.row = []
        elif element == "c":
            self.kind = attributes.get("t", "")  # unqualified, as SpreadsheetML's attributes are
            self.value = []
        elif element in ("v", "t"):
            self.collecting = True

    def end(self, name: str) -> None:
        element = local(name)
        if element in ("v", "t"):
            self.collecting = False
        elif element == "c":
            self.row.append(self._cell())
        elif element == "row":
            line = "\t".join(self.row).rstrip("\t")
            if line.strip():
                self.out.add(line)

    def _cell(self) -> str:
        value = "".join(self.value).strip()
        if self.kind == "s":
            index = _count(value)
            index = -1 if index is None else index
            return self.shared[index] if 0 <= index < len(self.shared) else ""
        if self.kind == "b":
            return "TRUE" if value == "1" else "FALSE"
        return value

    def text(self, data: str) -> None:
        if self.collecting:
            self.value.append(data)


def xlsx(data: bytes, budget: Budget) -> Extracted:
    """A workbook's sheets in order: each its name, then its rows of cell values (formulas'
    cached results, not the formulas)."""
    package, package_rels = _open_package(data, budget)
    facts = _package_facts(package, package_rels, DocumentFacts("xlsx", part_name="sheet"))
    main = _main_part(package, package_rels, "xl/workbook.xml")
    listing = _Sheets()
    _read_part(package, main, listing)
    main_rels = _relationships(package, main)
    shared = _SharedStrings(budget.text_chars)
    problem = ""
    for part in main_rels.of_type("sharedStrings")[:1]:
        try:
            _read_part(package, part, shared)
        except _Enough:
            pass
        except Stop as trouble:  # the cells keep their numbers; the text cells read as empty
            problem = trouble.problem
    names = [name for name, _ in listing.sheets]
    text = Text(budget.text_chars)
    read, stop = 0, None
    try:
        for name, rid in listing.sheets:
            if read >= budget.parts:
                break
            read += 1
            text.add(name)
            kind, part = main_rels.targets.get(rid, ("", ""))
            if kind == "worksheet" and part in package:
                _read_part(package, part, _SheetCells(shared.strings, text))
    except Stop as reached:
        stop = reached
    facts = replace(
        facts,
        parts=len(names),
        headings=tuple(clip(name, 200) for name in names[:HEADINGS]),
        problem=partial(stop, read, len(names), "sheet") or problem,
        parts_read=read if read < len(names) else None,
    )
    return Extracted(str(text), facts)
