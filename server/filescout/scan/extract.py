"""The text and facts of documents and images, read within limits whatever the file holds.

`extract` never raises: a file that cannot be read, or not all of it, says why in
`facts.problem` ("encrypted", "damaged: not a PDF", "too large: expands to more than 640 MB",
"timed out after 10 s; text read from the first 37 of 120 pages"), with whatever text and facts
were read before. The limits below bound the time, the text kept, the parts read, what a zip
archive may expand to (checked in its directory before a byte is inflated), and the pixels an
image may claim; XML may not declare entities that expand (scan/bounds.py).

Runs in worker processes (a scan's reads, structural annotation) and sometimes a server thread:
it holds no state between calls, and the heavy library (pypdf) is imported on the first PDF.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from filescout.core.records import DocumentFacts, Extracted
from filescout.scan import documents, images
from filescout.scan.bounds import Budget, Stop

log = logging.getLogger(__name__)

EXTRACT_SECONDS = 10.0
"""How long one file may take: checked between pages, parts and chunks of XML."""
TEXT_CHARS = 2_000_000
"""Characters of text kept at most (about 300,000 words: more than the index needs)."""
PARTS = 1_000
"""Pages, slides or sheets read at most."""
ZIP_MEMBERS = 10_000
"""Parts an OOXML package may have (Office writes dozens; a directory of millions is an attack)."""
ZIP_MEMBER_BYTES = 256 << 20
"""What one part that is read may expand to."""
ZIP_RATIO = 100
ZIP_FLOOR_BYTES = 64 << 20
"""What a whole package may expand to: 100 times its size, or 64 MB if that is more. Documents
expand 3 to 20 times (their media not at all); a zip bomb expands a thousandfold."""
IMAGE_PIXELS = 1 << 28
"""Pixels an image may claim and still be thought decodable (a gigabyte as RGBA); past it the
facts are kept and the problem says so."""

Reader = Callable[[bytes, Budget], Extracted]
READERS: dict[str, Reader] = {
    "pdf": documents.pdf,
    "docx": documents.docx,
    "pptx": documents.pptx,
    "xlsx": documents.xlsx,
    "svg": images.svg,
    **{fmt: partial(images.raster, fmt) for fmt in images.RASTER},
}
FORMATS = frozenset(READERS)
"""Every format `extract` reads: scan/classify.py's extracted formats."""


def budget(seconds: float = EXTRACT_SECONDS) -> Budget:
    """The limits of one extraction, its clock started now."""
    return Budget(
        seconds=seconds,
        text_chars=TEXT_CHARS,
        parts=PARTS,
        zip_members=ZIP_MEMBERS,
        zip_member_bytes=ZIP_MEMBER_BYTES,
        zip_ratio=ZIP_RATIO,
        zip_floor_bytes=ZIP_FLOOR_BYTES,
        pixels=IMAGE_PIXELS,
    )


def extract(fmt: str, data: bytes, *, seconds: float = EXTRACT_SECONDS) -> Extracted:
    """The text and facts of a file of format `fmt` (classify.extracted_format's name for it)."""
    reader = READERS.get(fmt)
    if reader is None:
        return Extracted("", DocumentFacts(fmt, problem=f"unknown format: {fmt}"))
    try:
        return reader(data, budget(seconds))
    except Stop as stop:
        return Extracted("", DocumentFacts(fmt, problem=stop.problem))
    except MemoryError:
        return Extracted("", DocumentFacts(fmt, problem="too large: out of memory"))
    except RecursionError:
        return Extracted("", DocumentFacts(fmt, problem="damaged: nested too deeply"))
    except Exception as exc:  # a reader's own failure on a file nobody foresaw: the file's, not ours
        log.debug("extracting a %s failed", fmt, exc_info=True)
        return Extracted("", DocumentFacts(fmt, problem=f"damaged: {type(exc).__name__}: {str(exc)[:160]}"))
