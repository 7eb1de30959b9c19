"""The structural annotation of documents and images: what a person sees at a glance in a file
browser's preview — the format, the title, who wrote it and when, how many pages, its headings,
an image's size and camera — and the first sentences of a document's text.

No model and no pixels: everything comes from the text and facts scan/extract.py read. A file
whose text could not be read says why, so a listing shows "encrypted" instead of nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from filescout.annotate.base import SUMMARY_LIMIT, TAG_LIMIT, clip
from filescout.core.records import Annotation, DocumentFacts, FileToAnnotate
from filescout.core.words import CAMEL_PART, STOPWORDS, body_words

FORMAT_NOUNS = {
    "pdf": "PDF document",
    "docx": "Word document",
    "pptx": "Slide deck",
    "xlsx": "Spreadsheet",
    "png": "PNG image",
    "jpeg": "JPEG image",
    "gif": "GIF image",
    "webp": "WebP image",
    "bmp": "BMP image",
    "tiff": "TIFF image",
    "ico": "Icon",
    "svg": "SVG image",
}
FORMAT_TAGS = {
    "pdf": ("pdf", "document"),
    "docx": ("docx", "document"),
    "pptx": ("pptx", "slides"),
    "xlsx": ("xlsx", "spreadsheet"),
    "svg": ("svg", "image"),
}
HEADINGS_SHOWN = 6
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
TAG_WORD_MIN = 4


def annotate_document(item: FileToAnnotate, facts: DocumentFacts, *, with_words: bool = True) -> Annotation:
    """`with_words`: find the content words too (see `annotate_structure`)."""
    headings = list(dict.fromkeys(heading for heading in facts.headings if heading.strip()))
    body = body_words("\n".join([facts.title, *headings, item.text])) if with_words else None
    return Annotation(
        summary=describe(facts, headings, item.text),
        tags=document_tags(item.path, facts, headings),
        symbols=headings,
        imports=[],
        body=body or None,  # a picture without a title has no words: no empty row in the content index
    )


def describe(facts: DocumentFacts, headings: Sequence[str], text: str) -> str:
    """One line of facts, then the headings, then the text's first sentences: cut to the limit
    in that order, so the facts always show."""
    parts = [facts_line(facts)]
    if headings:
        noun = {"slide": "Slides", "sheet": "Sheets"}.get(facts.part_name, "Sections")
        shown = "; ".join(clip(heading, 60) for heading in headings[:HEADINGS_SHOWN])
        parts.append(f"{noun}: {shown}{'; …' if len(headings) > HEADINGS_SHOWN else ''}.")
    opening = first_sentences(text, skip=(facts.title, *headings))
    if opening:
        parts.append(opening)
    return clip(" ".join(parts), SUMMARY_LIMIT)


def facts_line(facts: DocumentFacts) -> str:
    noun = FORMAT_NOUNS.get(facts.format, f"{facts.format.upper()} file")
    line = noun + (f" “{clip(facts.title, 80)}”" if facts.title else "")
    details = []
    if facts.author:
        details.append(f"by {clip(facts.author, 40)}")
    if facts.parts is not None and facts.part_name:
        details.append(f"{facts.parts:,} {facts.part_name}{'' if facts.parts == 1 else 's'}")
    if facts.width and facts.height and facts.part_name != "page":
        details.append(f"{facts.width}×{facts.height}")
    if facts.taken or facts.created:
        details.append(f"{'taken' if facts.taken else 'created'} {(facts.taken or facts.created)[:10]}")
    if facts.camera:
        details.append(f"with {clip(facts.camera, 40)}")
    line += ", " + ", ".join(details) if details else ""
    if facts.problem:
        line += f" ({facts.problem})"
    return line.rstrip(".") + "."


def first_sentences(text: str, *, skip: Sequence[str] = (), limit: int = 160) -> str:
    """The text's opening, past lines that repeat the title or a heading."""
    known = {_plain(line) for line in skip if line}
    kept = []
    for line in text.splitlines():
        flat = " ".join(line.split())
        if flat and _plain(flat) not in known:
            kept.append(flat)
        if sum(len(part) for part in kept) > limit * 2:
            break
    opening = " ".join(kept)
    if not opening:
        return ""
    sentences = SENTENCE_END.split(opening)
    shown = ""
    for sentence in sentences:
        if shown and len(shown) + len(sentence) > limit:
            break
        shown = f"{shown} {sentence}".strip()
    return clip(shown, limit)


def _plain(line: str) -> str:
    return " ".join(line.split()).rstrip(".:;!?").lower()


def document_tags(path: str, facts: DocumentFacts, headings: Sequence[str]) -> list[str]:
    """The format and what the file is, then the words its name, title and headings repeat."""
    tags = list(FORMAT_TAGS.get(facts.format, (facts.format, "image")))
    if facts.problem.startswith(("encrypted", "damaged")):
        tags.append(facts.problem.split(":")[0])
    counter: Counter[str] = Counter()
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    for weight, names in ((3, [stem]), (2, [facts.title]), (1, headings)):
        for word in CAMEL_PART.findall(" ".join(names)):
            word = word.lower()
            if len(word) >= TAG_WORD_MIN and word not in STOPWORDS and not word.isdigit():
                counter[word] += weight
    tags += [word for word, _ in counter.most_common(TAG_LIMIT)]
    return list(dict.fromkeys(tags))[:TAG_LIMIT]
