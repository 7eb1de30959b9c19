"""Documents and images in their real formats, written with the standard library alone: the
fixtures of tests/unit/test_extract.py and the corpus of bench/extract_bench.py.

    pdf, docx, pptx, xlsx         documents with text, headings, tables, notes and metadata
    png, jpeg, gif, webp, bmp,    images with EXIF (date, camera AND a GPS position, which the
    tiff, ico, svg                extraction must never show)
    flate_bomb_pdf, ...           adversarial files: bombs, damage, encryption, huge claims
    secret_pdf, secret_docx       planted secrets in the text, for the redaction tests
    corpus                        a mixed corpus of realistic sizes, deterministic for a seed

Every writer returns the file's bytes. The planted secrets are made by a seeded generator, so
this source holds no literal token that a secret scanner would flag.
"""

from __future__ import annotations

import hashlib
import random
import string
import struct
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from harness.workspaces import WORDS

# --- text ------------------------------------------------------------------------------------

_secrets = random.Random(20260214)
PLANTED_AWS_KEY_ID = "AKIA" + "".join(
    _secrets.choice(string.ascii_uppercase + string.digits) for _ in range(16)
)
PLANTED_GITHUB_TOKEN = "ghp_" + "".join(
    _secrets.choice(string.ascii_letters + string.digits) for _ in range(36)
)
PLANTED_SECRETS = (PLANTED_AWS_KEY_ID, PLANTED_GITHUB_TOKEN)
"""What secret_pdf and secret_docx hold in their text."""

GPS_LATITUDE = (48, 51, 29)
GPS_LONGITUDE = (2, 17, 40)
"""The position every EXIF block written here carries (degrees, minutes, seconds)."""


def sentences(rng: random.Random, words: int) -> str:
    """Plain prose of about `words` words from the workspaces' vocabulary."""
    out: list[str] = []
    while len(out) < words:
        sentence = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
        out += [sentence[0].capitalize(), *sentence[1:-1], sentence[-1] + "."]
    return " ".join(out)


def _xml_text(text: str) -> str:
    """Text made safe for XML 1.0: control characters other than tab and newline dropped."""
    return escape("".join(ch for ch in text if ch >= " " or ch in "\t\n"))


# --- PDF ---------------------------------------------------------------------------------------

USER_PASSWORD = b"open sesame"
"""An encrypted PDF's password to open it (the extraction is never given it)."""
_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")


def _rc4(key: bytes, data: bytes) -> bytes:
    box = list(range(256))
    j = 0
    for i in range(256):
        j = (j + box[i] + key[i % len(key)]) % 256
        box[i], box[j] = box[j], box[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + box[i]) % 256
        box[i], box[j] = box[j], box[i]
        out.append(byte ^ box[(box[i] + box[j]) % 256])
    return bytes(out)


@dataclass
class _Rc4Security:
    """The standard security handler, revision 2 (40-bit RC4): old, but every reader opens it,
    and without the password nothing of the text can be read."""

    file_id: bytes
    password: bytes
    permissions: int = -4

    def __post_init__(self) -> None:
        user = (self.password + _PAD)[:32]
        owner_key = hashlib.md5((b"owner" + _PAD)[:32]).digest()[:5]
        self.owner = _rc4(owner_key, user)
        digest = hashlib.md5(user + self.owner + struct.pack("<i", self.permissions) + self.file_id)
        self.key = digest.digest()[:5]
        self.user = _rc4(self.key, _PAD)

    def encrypt(self, number: int, data: bytes) -> bytes:
        key = hashlib.md5(self.key + struct.pack("<i", number)[:3] + b"\x00\x00").digest()[:10]
        return _rc4(key, data)

    def dictionary(self) -> bytes:
        return b"<< /Filter /Standard /V 1 /R 2 /Length 40 /O <%s> /U <%s> /P %d >>" % (
            self.owner.hex().encode(),
            self.user.hex().encode(),
            self.permissions,
        )


class _PdfWriter:
    """Objects numbered as added, a cross-reference table, a trailer: PDF 1.7 as written by hand."""

    def __init__(self, *, encrypted: bool = False, password: bytes = USER_PASSWORD, seed: int = 0) -> None:
        self.objects: list[bytes | None] = []
        self.file_id = hashlib.md5(b"filescout fixture %d" % seed).digest()
        self.security = _Rc4Security(self.file_id, password) if encrypted else None

    def reserve(self) -> int:
        self.objects.append(None)
        return len(self.objects)

    def put(self, number: int, body: bytes) -> int:
        self.objects[number - 1] = body
        return number

    def add(self, body: bytes) -> int:
        return self.put(self.reserve(), body)

    def text(self, number: int, value: str) -> bytes:
        """A text string of object `number`, as a hex string: ASCII as it is, anything else in
        UTF-16 with its byte order mark."""
        data = value.encode("ascii") if value.isascii() else b"\xfe\xff" + value.encode("utf-16-be")
        if self.security is not None:
            data = self.security.encrypt(number, data)
        return b"<" + data.hex().encode() + b">"

    def stream(self, number: int, data: bytes, extra: bytes = b"", *, compress: bool = True) -> int:
        if compress:
            data, extra = zlib.compress(data, 6), extra + b" /Filter /FlateDecode"
        return self.raw_stream(number, data, extra)

    def raw_stream(self, number: int, data: bytes, extra: bytes = b"") -> int:
        if self.security is not None:
            data = self.security.encrypt(number, data)
        return self.put(number, b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(data), extra, data))

    def bytes(self, root: int, info: int | None) -> bytes:
        out = BytesIO()
        out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
        offsets = []
        for number, body in enumerate(self.objects, 1):
            assert body is not None, f"object {number} reserved but never written"
            offsets.append(out.tell())
            out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
        encrypt = None
        if self.security is not None:
            offsets.append(out.tell())
            encrypt = len(offsets)
            out.write(b"%d 0 obj\n%s\nendobj\n" % (encrypt, self.security.dictionary()))
        start = out.tell()
        out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(offsets) + 1))
        out.writelines(b"%010d 00000 n \n" % offset for offset in offsets)
        trailer = b"/Size %d /Root %d 0 R" % (len(offsets) + 1, root)
        if info is not None:
            trailer += b" /Info %d 0 R" % info
        if encrypt is not None:
            trailer += b" /Encrypt %d 0 R" % encrypt
        trailer += b" /ID [<%s> <%s>]" % (self.file_id.hex().encode(), self.file_id.hex().encode())
        out.write(b"trailer\n<< %s >>\nstartxref\n%d\n%%%%EOF\n" % (trailer, start))
        return out.getvalue()


def _pdf_literal(text: str) -> bytes:
    data = text.encode("cp1252", errors="replace")
    return b"(" + data.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _wrap(text: str, width: int = 95) -> list[str]:
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return lines


def _page_content(text: str, *, figure: bool) -> bytes:
    parts = [b"BT /F1 10 Tf 13 TL 56 760 Td"]
    parts += [_pdf_literal(line) + b" Tj T*" for line in _wrap(text)]
    parts.append(b"ET")
    if figure:
        parts.append(b"q 300 0 0 200 156 40 cm /Im1 Do Q")
    return b"\n".join(parts)


def _pdf_date(value: str) -> str:
    """ "2024-03-05T10:20:30" → "D:20240305102030Z" (the PDF's own date form)."""
    digits = "".join(ch for ch in value if ch.isdigit())
    return f"D:{digits}Z" if digits else ""


def pdf(
    pages: Sequence[str],
    *,
    title: str = "",
    author: str = "",
    created: str = "2024-03-05T10:20:30",
    modified: str = "",
    outline: Sequence[tuple[str, int]] = (),
    encrypted: bool = False,
    password: bytes = USER_PASSWORD,
    figure: bytes = b"",
    seed: int = 0,
) -> bytes:
    """A PDF with one page per item of `pages` (Helvetica text, lines wrapped), an information
    dictionary, bookmarks (`outline`: title and page index), and on every page an image drawn
    from `figure` (bytes standing for a scanned figure: what makes real PDFs large). `encrypted`
    locks it with `password` (an empty one: anyone may open it, only the owner may change it)."""
    writer = _PdfWriter(encrypted=encrypted, password=password, seed=seed)
    catalog, tree, font = writer.reserve(), writer.reserve(), writer.reserve()
    writer.put(font, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    image = None
    if figure:
        image = writer.reserve()
        writer.stream(
            image,
            figure,
            b" /Type /XObject /Subtype /Image /Width %d /Height 1 /ColorSpace /DeviceGray"
            b" /BitsPerComponent 8" % len(figure),
        )
    kids = []
    for text in pages:
        page, content = writer.reserve(), writer.reserve()
        writer.stream(content, _page_content(text, figure=image is not None))
        objects = b" /XObject << /Im1 %d 0 R >>" % image if image is not None else b""
        writer.put(
            page,
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
            b" /Resources << /Font << /F1 %d 0 R >>%s >> >>" % (tree, content, font, objects),
        )
        kids.append(page)
    writer.put(
        tree,
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % kid for kid in kids), len(kids)),
    )
    outlines = b""
    if outline:
        top = writer.reserve()
        items = [writer.reserve() for _ in outline]
        for position, ((label, index), number) in enumerate(zip(outline, items, strict=True)):
            links = b""
            if position > 0:
                links += b" /Prev %d 0 R" % items[position - 1]
            if position + 1 < len(items):
                links += b" /Next %d 0 R" % items[position + 1]
            writer.put(
                number,
                b"<< /Title %s /Parent %d 0 R /Dest [%d 0 R /Fit]%s >>"
                % (writer.text(number, label), top, kids[index], links),
            )
        writer.put(
            top,
            b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (items[0], items[-1], len(items)),
        )
        outlines = b" /Outlines %d 0 R /PageMode /UseOutlines" % top
    writer.put(catalog, b"<< /Type /Catalog /Pages %d 0 R%s >>" % (tree, outlines))
    info = writer.reserve()
    fields = {"Title": title, "Author": author, "Producer": "filescout fixtures"}
    entries = [
        b"/%s %s" % (name.encode(), writer.text(info, value)) for name, value in fields.items() if value
    ]
    for name, value in (("CreationDate", created), ("ModDate", modified)):
        if value:
            entries.append(b"/%s %s" % (name.encode(), writer.text(info, _pdf_date(value))))
    writer.put(info, b"<< " + b" ".join(entries) + b" >>")
    return writer.bytes(catalog, info)


def _repeated_deflate(head: bytes, chunk: bytes, repeats: int, *, zip_check: bool) -> tuple[bytes, int, int]:
    """Raw deflate data of `head` and then `chunk` `repeats` times, made in no time: each piece
    is compressed once into self-contained blocks (a full flush), and the chunk's repeated.
    Returns (the data, its check: CRC-32 for a zip member, else zlib's Adler-32, its size)."""

    def piece(data: bytes) -> bytes:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)

    check = zlib.crc32 if zip_check else zlib.adler32
    value = check(head)
    for _ in range(repeats):
        value = check(chunk, value)
    data = (piece(head) if head else b"") + piece(chunk) * repeats + b"\x03\x00"
    return data, value, len(head) + len(chunk) * repeats


def flate_bomb_pdf(expands_to: int = 1 << 30) -> bytes:
    """A one-page PDF whose content stream is about 1 MB of Flate data that inflates to
    `expands_to` bytes: a line of text, then spaces."""
    head = b"BT /F1 10 Tf 56 760 Td (Nothing to see here.) Tj ET\n"
    raw, adler, _ = _repeated_deflate(head, b" " * (1 << 20), expands_to >> 20, zip_check=False)
    writer = _PdfWriter()
    catalog, tree, page, content, font = (writer.reserve() for _ in range(5))
    writer.put(catalog, b"<< /Type /Catalog /Pages %d 0 R >>" % tree)
    writer.put(tree, b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % page)
    writer.put(font, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    writer.put(
        page,
        b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
        b" /Resources << /Font << /F1 %d 0 R >> >> >>" % (tree, content, font),
    )
    writer.raw_stream(content, b"\x78\xda" + raw + struct.pack(">I", adler), b" /Filter /FlateDecode")
    return writer.bytes(catalog, None)


def many_pages_pdf(pages: int = 10_000) -> bytes:
    """A PDF of `pages` short pages: more than any extraction should read."""
    return pdf([f"Page {number} of the long register." for number in range(1, pages + 1)], title="Register")


def encrypted_pdf() -> bytes:
    """A PDF that needs a password to open (USER_PASSWORD), with text behind it."""
    return pdf(["The quarterly figures, for the board only."], title="Board figures", encrypted=True)


def truncated_pdf() -> bytes:
    """A real PDF cut off at 40% of its bytes: no cross-reference table, most pages gone."""
    whole = pdf([sentences(random.Random(number), 300) for number in range(12)], title="Cut short")
    return whole[: len(whole) * 2 // 5]


def random_pdf(size: int = 64 * 1024) -> bytes:
    """Random bytes under a .pdf name."""
    return random.Random(7).randbytes(size)


def secret_pdf() -> bytes:
    """A PDF whose text holds the planted secrets (PLANTED_SECRETS)."""
    return pdf(
        [
            "Deployment runbook.\nThe backup job signs in to the storage account.",
            f"aws_access_key_id = {PLANTED_AWS_KEY_ID}\nThe release bot uses GITHUB_TOKEN={PLANTED_GITHUB_TOKEN}",
        ],
        title="Deployment runbook",
        author="Operations",
    )


# --- OOXML (docx, pptx, xlsx) ------------------------------------------------------------------

_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOC_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


@dataclass(frozen=True)
class Metadata:
    """docProps/core.xml: what Office writes of a document's title, author and dates."""

    title: str = ""
    author: str = ""
    created: str = "2024-03-05T10:20:30Z"
    modified: str = "2024-03-06T08:00:00Z"


def _core(meta: Metadata) -> str:
    return (
        _XML
        + '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties"'
        ' xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/"'
        ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        f"<dc:title>{_xml_text(meta.title)}</dc:title><dc:creator>{_xml_text(meta.author)}</dc:creator>"
        f'<dcterms:created xsi:type="dcterms:W3CDTF">{meta.created}</dcterms:created>'
        f'<dcterms:modified xsi:type="dcterms:W3CDTF">{meta.modified}</dcterms:modified>'
        "</cp:coreProperties>"
    )


def _rels(*targets: tuple[str, str, str]) -> str:
    """A relationships part: (id, type's last word, target)."""
    items = "".join(
        f'<Relationship Id="{rid}" Type="{_DOC_RELS}/{kind}" Target="{target}"/>'
        if kind != "core-properties"
        else f'<Relationship Id="{rid}" Type="http://schemas.openxmlformats.org/package/2006/relationships/'
        f'metadata/core-properties" Target="{target}"/>'
        for rid, kind, target in targets
    )
    return f'{_XML}<Relationships xmlns="{_RELS}">{items}</Relationships>'


def _content_types(overrides: dict[str, str], *, media: bool = False) -> str:
    defaults = (
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
    )
    if media:
        defaults += '<Default Extension="png" ContentType="image/png"/>'
    items = "".join(
        f'<Override PartName="/{part}" ContentType="{kind}"/>' for part, kind in overrides.items()
    )
    return f'{_XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">{defaults}{items}</Types>'


_CORE_TYPE = "application/vnd.openxmlformats-package.core-properties+xml"
_APP_TYPE = "application/vnd.openxmlformats-officedocument.extended-properties+xml"


def _app(counts: str = "") -> str:
    return (
        f'{_XML}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">'
        f"<Application>filescout fixtures</Application>{counts}</Properties>"
    )


def _package(parts: dict[str, str | bytes]) -> bytes:
    out = BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return out.getvalue()


Block = str | Sequence[Sequence[str]]
"""A docx body's block: a paragraph ("# " and "## " make headings) or a table (rows of cells)."""


def _docx_paragraph(text: str) -> str:
    style = ""
    for marks, name in (("## ", "Heading2"), ("# ", "Heading1")):
        if text.startswith(marks):
            text, style = text[len(marks) :], f'<w:pPr><w:pStyle w:val="{name}"/></w:pPr>'
            break
    runs = "<w:r><w:br/></w:r>".join(
        f'<w:r><w:t xml:space="preserve">{_xml_text(line)}</w:t></w:r>' for line in text.split("\n")
    )
    return f"<w:p>{style}{runs}</w:p>"


def _docx_table(rows: Sequence[Sequence[str]]) -> str:
    columns = max((len(row) for row in rows), default=1)
    grid = "".join('<w:gridCol w:w="2000"/>' for _ in range(columns))
    body = "".join(
        "<w:tr>"
        + "".join(
            f'<w:tc><w:tcPr><w:tcW w:w="2000" w:type="dxa"/></w:tcPr>{_docx_paragraph(cell)}</w:tc>'
            for cell in row
        )
        + "</w:tr>"
        for row in rows
    )
    return f'<w:tbl><w:tblPr><w:tblW w:w="0" w:type="auto"/></w:tblPr><w:tblGrid>{grid}</w:tblGrid>{body}</w:tbl>'


_DOCX_STYLES = (
    f'{_XML}<w:styles xmlns:w="{_W}">'
    '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
    + "".join(
        f'<w:style w:type="paragraph" w:styleId="Heading{level}"><w:name w:val="heading {level}"/>'
        f'<w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:qFormat/>'
        f'<w:pPr><w:keepNext/><w:outlineLvl w:val="{level - 1}"/></w:pPr>'
        f'<w:rPr><w:b/><w:sz w:val="{36 - 4 * level}"/></w:rPr></w:style>'
        for level in (1, 2)
    )
    + "</w:styles>"
)


def docx(
    body: Sequence[Block], *, title: str = "", author: str = "", media: bytes = b"", pages: int = 0
) -> bytes:
    """A Word document: paragraphs, headings (Heading 1 and 2 styles) and tables in order, its
    core properties, `media` stored as an image part (what makes real documents large) and the
    page count Word records (docProps/app.xml), when given."""
    blocks = "".join(
        _docx_paragraph(block) if isinstance(block, str) else _docx_table(block) for block in body
    )
    document = (
        f'{_XML}<w:document xmlns:w="{_W}" xmlns:r="{_DOC_RELS}"><w:body>{blocks}'
        '<w:sectPr><w:pgSz w:w="12240" w:h="15840"/>'
        '<w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="720" w:footer="720" w:gutter="0"/>'
        "</w:sectPr></w:body></w:document>"
    )
    main = "application/vnd.openxmlformats-officedocument.wordprocessingml"
    word_rels = [("rId1", "styles", "styles.xml")]
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": _content_types(
            {
                "word/document.xml": f"{main}.document.main+xml",
                "word/styles.xml": f"{main}.styles+xml",
                "docProps/core.xml": _CORE_TYPE,
                "docProps/app.xml": _APP_TYPE,
            },
            media=bool(media),
        ),
        "_rels/.rels": _rels(
            ("rId1", "officeDocument", "word/document.xml"),
            ("rId2", "core-properties", "docProps/core.xml"),
            ("rId3", "extended-properties", "docProps/app.xml"),
        ),
        "word/document.xml": document,
        "word/styles.xml": _DOCX_STYLES,
        "docProps/core.xml": _core(Metadata(title, author)),
        "docProps/app.xml": _app(f"<Pages>{pages}</Pages>" if pages else ""),
    }
    if media:
        parts["word/media/image1.png"] = media
        word_rels.append(("rId2", "image", "media/image1.png"))
    parts["word/_rels/document.xml.rels"] = _rels(*word_rels)
    return _package(parts)


@dataclass(frozen=True)
class Slide:
    title: str
    lines: Sequence[str] = ()
    notes: str = ""


_THEME = (
    f'{_XML}<a:theme xmlns:a="{_A}" name="Plain"><a:themeElements>'
    '<a:clrScheme name="Plain"><a:dk1><a:srgbClr val="000000"/></a:dk1><a:lt1><a:srgbClr val="FFFFFF"/></a:lt1>'
    '<a:dk2><a:srgbClr val="1F1F1F"/></a:dk2><a:lt2><a:srgbClr val="EEEEEE"/></a:lt2>'
    + "".join(f'<a:accent{n}><a:srgbClr val="4472C4"/></a:accent{n}>' for n in range(1, 7))
    + '<a:hlink><a:srgbClr val="0563C1"/></a:hlink><a:folHlink><a:srgbClr val="954F72"/></a:folHlink></a:clrScheme>'
    '<a:fontScheme name="Plain"><a:majorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/>'
    '</a:majorFont><a:minorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/></a:minorFont>'
    '</a:fontScheme><a:fmtScheme name="Plain"><a:fillStyleLst>'
    + '<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>' * 3
    + "</a:fillStyleLst><a:lnStyleLst>"
    + '<a:ln w="6350"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln>' * 3
    + "</a:lnStyleLst><a:effectStyleLst>"
    + "<a:effectStyle><a:effectLst/></a:effectStyle>" * 3
    + "</a:effectStyleLst><a:bgFillStyleLst>"
    + '<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>' * 3
    + "</a:bgFillStyleLst></a:fmtScheme></a:themeElements></a:theme>"
)
_EMPTY_TREE = (
    '<p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
    "<p:grpSpPr/></p:spTree></p:cSld>"
)


def _shape(number: int, placeholder: str, lines: Sequence[str]) -> str:
    paragraphs = "".join(f"<a:p><a:r><a:t>{_xml_text(line)}</a:t></a:r></a:p>" for line in lines) or "<a:p/>"
    return (
        f'<p:sp><p:nvSpPr><p:cNvPr id="{number}" name="Shape {number}"/><p:cNvSpPr/>'
        f'<p:nvPr><p:ph type="{placeholder}"/></p:nvPr></p:nvSpPr><p:spPr/>'
        f"<p:txBody><a:bodyPr/><a:lstStyle/>{paragraphs}</p:txBody></p:sp>"
    )


def _slide_xml(root: str, shapes: str) -> str:
    return (
        f'{_XML}<p:{root} xmlns:p="{_P}" xmlns:a="{_A}" xmlns:r="{_DOC_RELS}"><p:cSld><p:spTree>'
        '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
        f"{shapes}</p:spTree></p:cSld></p:{root}>"
    )


def pptx(slides: Sequence[Slide], *, title: str = "", author: str = "", media: bytes = b"") -> bytes:
    """A PowerPoint presentation: each slide's title and body placeholders, speaker notes, one
    master, layout and theme (what PowerPoint needs to open it), and `media` as an image part."""
    main = "application/vnd.openxmlformats-officedocument.presentationml"
    types = {
        "ppt/presentation.xml": f"{main}.presentation.main+xml",
        "ppt/slideMasters/slideMaster1.xml": f"{main}.slideMaster+xml",
        "ppt/slideLayouts/slideLayout1.xml": f"{main}.slideLayout+xml",
        "ppt/theme/theme1.xml": "application/vnd.openxmlformats-officedocument.theme+xml",
        "docProps/core.xml": _CORE_TYPE,
        "docProps/app.xml": _APP_TYPE,
    }
    parts: dict[str, str | bytes] = {
        "_rels/.rels": _rels(
            ("rId1", "officeDocument", "ppt/presentation.xml"),
            ("rId2", "core-properties", "docProps/core.xml"),
            ("rId3", "extended-properties", "docProps/app.xml"),
        ),
        "docProps/core.xml": _core(Metadata(title, author)),
        "docProps/app.xml": _app(f"<Slides>{len(slides)}</Slides>"),
        "ppt/theme/theme1.xml": _THEME,
        "ppt/slideMasters/slideMaster1.xml": (
            f'{_XML}<p:sldMaster xmlns:p="{_P}" xmlns:a="{_A}" xmlns:r="{_DOC_RELS}">{_EMPTY_TREE}'
            '<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3"'
            ' accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/>'
            '<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>'
        ),
        "ppt/slideMasters/_rels/slideMaster1.xml.rels": _rels(
            ("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml"),
            ("rId2", "theme", "../theme/theme1.xml"),
        ),
        "ppt/slideLayouts/slideLayout1.xml": (
            f'{_XML}<p:sldLayout xmlns:p="{_P}" xmlns:a="{_A}" xmlns:r="{_DOC_RELS}" type="obj">{_EMPTY_TREE}'
            "<p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>"
        ),
        "ppt/slideLayouts/_rels/slideLayout1.xml.rels": _rels(
            ("rId1", "slideMaster", "../slideMasters/slideMaster1.xml")
        ),
    }
    presentation_rels = [("rId1", "slideMaster", "slideMasters/slideMaster1.xml")]
    ids = []
    for number, slide in enumerate(slides, 1):
        shapes = _shape(2, "title", [slide.title]) + _shape(3, "body", slide.lines)
        parts[f"ppt/slides/slide{number}.xml"] = _slide_xml("sld", shapes)
        types[f"ppt/slides/slide{number}.xml"] = f"{main}.slide+xml"
        slide_rels = [("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml")]
        if slide.notes:
            notes = (
                _shape(2, "sldImg", [])
                + _shape(3, "body", slide.notes.split("\n"))
                + _shape(4, "sldNum", ["1"])
            )
            parts[f"ppt/notesSlides/notesSlide{number}.xml"] = _slide_xml("notes", notes)
            types[f"ppt/notesSlides/notesSlide{number}.xml"] = f"{main}.notesSlide+xml"
            parts[f"ppt/notesSlides/_rels/notesSlide{number}.xml.rels"] = _rels(
                ("rId1", "slide", f"../slides/slide{number}.xml")
            )
            slide_rels.append(("rId2", "notesSlide", f"../notesSlides/notesSlide{number}.xml"))
        if media and number == 1:
            parts["ppt/media/image1.png"] = media
            slide_rels.append(("rId3", "image", "../media/image1.png"))
        parts[f"ppt/slides/_rels/slide{number}.xml.rels"] = _rels(*slide_rels)
        presentation_rels.append((f"rId{number + 1}", "slide", f"slides/slide{number}.xml"))
        ids.append(f'<p:sldId id="{255 + number}" r:id="rId{number + 1}"/>')
    parts["ppt/presentation.xml"] = (
        f'{_XML}<p:presentation xmlns:p="{_P}" xmlns:a="{_A}" xmlns:r="{_DOC_RELS}">'
        '<p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst>'
        f'<p:sldIdLst>{"".join(ids)}</p:sldIdLst><p:sldSz cx="12192000" cy="6858000"/>'
        '<p:notesSz cx="6858000" cy="9144000"/></p:presentation>'
    )
    parts["ppt/_rels/presentation.xml.rels"] = _rels(*presentation_rels)
    parts["[Content_Types].xml"] = _content_types(types, media=bool(media))
    return _package({"[Content_Types].xml": parts.pop("[Content_Types].xml"), **parts})


Cell = str | int | float


def _column(index: int) -> str:
    name = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        name = chr(65 + remainder) + name
    return name


def xlsx(sheets: dict[str, Sequence[Sequence[Cell]]], *, title: str = "", author: str = "") -> bytes:
    """An Excel workbook: one worksheet per item (its name, rows of cells); text in the shared
    strings table as Excel writes it, numbers in the cells."""
    main = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    shared: dict[str, int] = {}
    types = {
        "xl/workbook.xml": f"{main}.sheet.main+xml",
        "xl/sharedStrings.xml": f"{main}.sharedStrings+xml",
        "docProps/core.xml": _CORE_TYPE,
        "docProps/app.xml": _APP_TYPE,
    }
    parts: dict[str, str | bytes] = {}
    workbook_rels = []
    entries = []
    for number, (name, rows) in enumerate(sheets.items(), 1):
        body = []
        for row_number, row in enumerate(rows, 1):
            cells = []
            for column, value in enumerate(row):
                where = f"{_column(column)}{row_number}"
                if isinstance(value, str):
                    index = shared.setdefault(value, len(shared))
                    cells.append(f'<c r="{where}" t="s"><v>{index}</v></c>')
                else:
                    cells.append(f'<c r="{where}"><v>{value}</v></c>')
            body.append(f'<row r="{row_number}">{"".join(cells)}</row>')
        parts[f"xl/worksheets/sheet{number}.xml"] = (
            f'{_XML}<worksheet xmlns="{_S}" xmlns:r="{_DOC_RELS}"><sheetData>{"".join(body)}</sheetData></worksheet>'
        )
        types[f"xl/worksheets/sheet{number}.xml"] = f"{main}.worksheet+xml"
        workbook_rels.append((f"rId{number}", "worksheet", f"worksheets/sheet{number}.xml"))
        entries.append(f'<sheet name={quoteattr(name)} sheetId="{number}" r:id="rId{number}"/>')
    workbook_rels.append((f"rId{len(sheets) + 1}", "sharedStrings", "sharedStrings.xml"))
    strings = "".join(f'<si><t xml:space="preserve">{_xml_text(text)}</t></si>' for text in shared)
    parts["xl/sharedStrings.xml"] = (
        f'{_XML}<sst xmlns="{_S}" count="{len(shared)}" uniqueCount="{len(shared)}">{strings}</sst>'
    )
    parts["xl/workbook.xml"] = (
        f'{_XML}<workbook xmlns="{_S}" xmlns:r="{_DOC_RELS}"><sheets>{"".join(entries)}</sheets></workbook>'
    )
    parts["xl/_rels/workbook.xml.rels"] = _rels(*workbook_rels)
    return _package(
        {
            "[Content_Types].xml": _content_types(types),
            "_rels/.rels": _rels(
                ("rId1", "officeDocument", "xl/workbook.xml"),
                ("rId2", "core-properties", "docProps/core.xml"),
                ("rId3", "extended-properties", "docProps/app.xml"),
            ),
            "docProps/core.xml": _core(Metadata(title, author)),
            "docProps/app.xml": _app(),
            **parts,
        }
    )


def _raw_zip(members: Sequence[tuple[str, bytes, int, int]]) -> bytes:
    """A zip archive of already deflated members: (name, deflate data, CRC-32, the size it
    states it inflates to). What the zipfile module cannot write: sizes that are huge, or false."""
    out, directory = BytesIO(), BytesIO()
    for name, data, crc, size in members:
        offset, encoded = out.tell(), name.encode()
        fields = struct.pack("<HHHHHIII", 20, 0, 8, 0, 0x5821, crc, len(data), size)
        out.write(b"PK\x03\x04" + fields + struct.pack("<HH", len(encoded), 0) + encoded + data)
        directory.write(
            b"PK\x01\x02"
            + struct.pack("<H", 20)
            + fields
            + struct.pack("<HHHHHII", len(encoded), 0, 0, 0, 0, 0, offset)
            + encoded
        )
    start, listing = out.tell(), directory.getvalue()
    out.write(
        listing
        + b"PK\x05\x06"
        + struct.pack("<HHHHIIH", 0, 0, len(members), len(members), len(listing), start, 0)
    )
    return out.getvalue()


def _deflated(parts: dict[str, bytes]) -> list[tuple[str, bytes, int, int]]:
    members = []
    for name, data in parts.items():
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        members.append((name, compressor.compress(data) + compressor.flush(), zlib.crc32(data), len(data)))
    return members


def zip_bomb_docx(expands_to: int = 2 << 30) -> bytes:
    """A real DOCX with one more member, about 2 MB of deflate data that inflates to
    `expands_to` bytes of zeros (a zip bomb), as its archive's directory says."""
    raw, crc, size = _repeated_deflate(b"", bytes(1 << 20), expands_to >> 20, zip_check=True)
    members = _deflated(_unzip(docx(["# Notes", "Nothing here but a bomb."], title="Bomb")))
    return _raw_zip([*members, ("word/media/filler.bin", raw, crc, size)])


def document_zip_bomb_docx(expands_to: int = 1 << 30, *, stated: int | None = None) -> bytes:
    """A DOCX whose word/document.xml itself inflates to `expands_to` bytes (spaces after the
    start of a paragraph): the part that must be read is the bomb. `stated` makes the archive's
    directory lie about that size (10 KB, say)."""
    head = f'{_XML}<w:document xmlns:w="{_W}"><w:body><w:p><w:r><w:t>'.encode()
    raw, crc, size = _repeated_deflate(head, b" " * (1 << 20), expands_to >> 20, zip_check=True)
    parts = _unzip(docx(["placeholder"]))
    members = [member for member in _deflated(parts) if member[0] != "word/document.xml"]
    return _raw_zip([*members, ("word/document.xml", raw, crc, size if stated is None else stated)])


def _unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _billion_laughs(root: str, namespace: str, inner: str) -> str:
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10)
    )
    return f'<?xml version="1.0"?>\n<!DOCTYPE {root} [{entities}]>\n<{root} xmlns{namespace}>{inner}</{root}>'


def entity_bomb_docx() -> bytes:
    """A DOCX whose document part declares the billion laughs: nine entities, each ten of the one
    before, 3 bytes become 3 GB when expanded."""
    parts = _unzip(docx(["placeholder"]))
    parts["word/document.xml"] = _billion_laughs(
        "w:document", f':w="{_W}"', "<w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body>"
    ).encode()
    return _package(dict(parts))


def secret_docx() -> bytes:
    """A DOCX whose text holds the planted secrets (PLANTED_SECRETS)."""
    return docx(
        [
            "# Service accounts",
            "The nightly export reads the bucket with these keys:",
            [["Name", "Value"], ["aws_access_key_id", PLANTED_AWS_KEY_ID], ["github", PLANTED_GITHUB_TOKEN]],
        ],
        title="Service accounts",
        author="Platform team",
    )


# --- images --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exif:
    """An EXIF block's fields: the date of capture, the camera, and a GPS position."""

    taken: str = "2023:06:01 10:20:30"
    make: str = "Canon"
    model: str = "Canon EOS 80D"
    gps: bool = True


def _ifd(entries: list[tuple[int, int, int, bytes]], start: int) -> tuple[bytes, bytes]:
    """A little-endian IFD at offset `start`: (tag, type, count, value bytes) sorted by tag,
    values over 4 bytes placed after it. Returns (the IFD, the values area)."""
    entries = sorted(entries)
    values_at = start + 2 + 12 * len(entries) + 4
    table, values = struct.pack("<H", len(entries)), b""
    for tag, kind, count, value in entries:
        if len(value) <= 4:
            table += struct.pack("<HHI", tag, kind, count) + value.ljust(4, b"\x00")
        else:
            table += struct.pack("<HHII", tag, kind, count, values_at + len(values))
            values += value + b"\x00" * (len(value) % 2)
    return table + b"\x00\x00\x00\x00", values


def _ascii(tag: int, text: str) -> tuple[int, int, int, bytes]:
    data = text.encode("ascii") + b"\x00"
    return tag, 2, len(data), data


def _rationals(tag: int, numbers: Sequence[int]) -> tuple[int, int, int, bytes]:
    return tag, 5, len(numbers), b"".join(struct.pack("<II", number, 1) for number in numbers)


def _long(tag: int, value: int) -> tuple[int, int, int, bytes]:
    return tag, 4, 1, struct.pack("<I", value)


def _tiff_ifds(exif: Exif, image_entries: list[tuple[int, int, int, bytes]] | None = None) -> bytes:
    """A TIFF structure (header and IFDs) holding `exif`: IFD0 with the camera and pointers, the
    Exif IFD with the date of capture, the GPS IFD with a position. `image_entries` adds a
    baseline image's own tags to IFD0 (for a .tiff file), their pixel data following."""
    zeroth = [_ascii(0x010F, exif.make), _ascii(0x0110, exif.model), _ascii(0x0132, exif.taken)]
    zeroth += image_entries or []
    pointers = 2 if exif.gps else 1
    size0 = 2 + 12 * (len(zeroth) + pointers) + 4
    values0 = sum(len(v) + len(v) % 2 for *_, v in zeroth if len(v) > 4)
    exif_at = 8 + size0 + values0
    exif_ifd, exif_values = _ifd([_ascii(0x9003, exif.taken), _ascii(0x9004, exif.taken)], exif_at)
    gps_at = exif_at + len(exif_ifd) + len(exif_values)
    entries = [*zeroth, _long(0x8769, exif_at)]
    gps_block = b""
    if exif.gps:
        entries.append(_long(0x8825, gps_at))
        gps_ifd, gps_values = _ifd(
            [
                (0x0000, 1, 4, bytes([2, 3, 0, 0])),
                _ascii(0x0001, "N"),
                _rationals(0x0002, GPS_LATITUDE),
                _ascii(0x0003, "E"),
                _rationals(0x0004, GPS_LONGITUDE),
            ],
            gps_at,
        )
        gps_block = gps_ifd + gps_values
    ifd0, values = _ifd(entries, 8)
    return b"II*\x00" + struct.pack("<I", 8) + ifd0 + values + exif_ifd + exif_values + gps_block


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _pixels(width: int, height: int, seed: int, noise: float) -> bytes:
    """RGB rows with PNG's filter byte: a gradient with `noise` of the pixels random (what makes
    photographs compress badly)."""
    rng = random.Random(seed)
    rows = []
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            if noise and rng.random() < noise:
                row += rng.randbytes(3)
            else:
                row += bytes(((x * 255) // max(width, 1), (y * 255) // max(height, 1), 128))
        rows.append(bytes(row))
    return b"".join(rows)


def png(
    width: int,
    height: int,
    *,
    exif: Exif | None = None,
    title: str = "",
    author: str = "",
    noise: float = 0.0,
    seed: int = 0,
) -> bytes:
    """An RGB PNG with its EXIF in an eXIf chunk and Title and Author tEXt chunks, if given."""
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    for keyword, value in (("Title", title), ("Author", author)):
        if value:
            out += _chunk(b"tEXt", keyword.encode() + b"\x00" + value.encode("latin-1", errors="replace"))
    if exif is not None:
        out += _chunk(b"eXIf", _tiff_ifds(exif))
    out += _chunk(b"IDAT", zlib.compress(_pixels(width, height, seed, noise), 6))
    return out + _chunk(b"IEND", b"")


def huge_png(width: int = 100_000, height: int = 100_000) -> bytes:
    """A PNG whose header claims `width` x `height` pixels (ten billion by default) over a few
    bytes of image data: decoding it would need 30 GB."""
    header = _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + header + _chunk(b"IDAT", zlib.compress(bytes(1024))) + _chunk(b"IEND", b"")


def jpeg(width: int, height: int, *, exif: Exif | None = None, comment: bytes = b"") -> bytes:
    """A baseline grey JPEG (every 8x8 block flat, so the entropy-coded data is two bits a block),
    with its EXIF in an APP1 segment, and `comment` as COM segments (to give it a photograph's
    size)."""

    def segment(marker: int, data: bytes) -> bytes:
        return struct.pack(">BBH", 0xFF, marker, len(data) + 2) + data

    out = b"\xff\xd8" + segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    if exif is not None:
        out += segment(0xE1, b"Exif\x00\x00" + _tiff_ifds(exif))
    for start in range(0, len(comment), 65000):
        out += segment(0xFE, comment[start : start + 65000])
    out += segment(0xDB, b"\x00" + b"\x01" * 64)
    out += segment(0xC0, struct.pack(">BHHBBBB", 8, height, width, 1, 1, 0x11, 0))
    # One symbol per table, a one-bit code each: DC difference 0 and end-of-block.
    out += segment(0xC4, b"\x00" + bytes([1] + [0] * 15) + b"\x00")
    out += segment(0xC4, b"\x10" + bytes([1] + [0] * 15) + b"\x00")
    out += segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
    blocks = ((width + 7) // 8) * ((height + 7) // 8)
    bits = 2 * blocks
    data = bytes(bits // 8) + (bytes([0xFF >> (bits % 8)]) if bits % 8 else b"")
    return out + data + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    """A GIF89a of one colour: LZW codes of three bits, a clear code before every second pixel
    so the code size never grows."""
    codes: list[int] = []
    for start in range(0, width * height, 2):
        codes += [4] + [0] * min(2, width * height - start)
    codes.append(5)
    bits = value = 0
    packed = bytearray()
    for code in codes:
        value |= code << bits
        bits += 3
        while bits >= 8:
            packed.append(value & 0xFF)
            value >>= 8
            bits -= 8
    if bits:
        packed.append(value & 0xFF)
    blocks = b"".join(
        bytes([len(packed[i : i + 255])]) + packed[i : i + 255] for i in range(0, len(packed), 255)
    )
    return (
        b"GIF89a"
        + struct.pack("<HHBBB", width, height, 0x81, 0, 0)
        + bytes([0, 0, 0, 255, 255, 255, 90, 90, 90, 200, 40, 40])
        + b"\x2c"
        + struct.pack("<HHHHB", 0, 0, width, height, 0)
        + b"\x02"
        + blocks
        + b"\x00\x3b"
    )


def webp(width: int, height: int, *, exif: Exif | None = None) -> bytes:
    """A lossless WebP of one colour (every prefix code a single symbol, so the pixels take no
    bits), in the extended format with an EXIF chunk when `exif` is given."""
    fields = [(0x2F, 8), (width - 1, 14), (height - 1, 14), (0, 1), (0, 3), (0, 1), (0, 1), (0, 1)]
    for symbol in (0x80, 0x40, 0xC0, 0xFF, 0):  # green, red, blue, alpha, distance
        fields += [(1, 1), (0, 1), (1, 1), (symbol, 8)]
    value = bits = 0
    for field, size in fields:
        value |= field << bits
        bits += size
    bitstream = value.to_bytes((bits + 7) // 8, "little")
    lossless = b"VP8L" + struct.pack("<I", len(bitstream)) + bitstream + b"\x00" * (len(bitstream) % 2)
    body = b"WEBP"
    if exif is not None:
        canvas = struct.pack("<I", width - 1)[:3] + struct.pack("<I", height - 1)[:3]
        body += b"VP8X" + struct.pack("<I", 10) + bytes([0x08, 0, 0, 0]) + canvas + lossless
        data = _tiff_ifds(exif)
        body += b"EXIF" + struct.pack("<I", len(data)) + data + b"\x00" * (len(data) % 2)
    else:
        body += lossless
    return b"RIFF" + struct.pack("<I", len(body)) + body


def bmp(width: int, height: int) -> bytes:
    """A 24-bit BMP of one colour, rows bottom-up and padded to four bytes."""
    row = bytes((40, 90, 200) * width).ljust((3 * width + 3) // 4 * 4, b"\x00")
    pixels = row * height
    header = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
    return (
        b"BM" + struct.pack("<IHHI", 14 + len(header) + len(pixels), 0, 0, 14 + len(header)) + header + pixels
    )


def tiff(width: int, height: int, *, exif: Exif | None = None) -> bytes:
    """An uncompressed 8-bit grey TIFF with its EXIF in the main IFD (as cameras write it)."""
    exif = exif or Exif(make="", model="", gps=False)
    pixels = bytes(width * height)
    placeholder = [
        _long(256, width),
        _long(257, height),
        (258, 3, 1, struct.pack("<H", 8)),
        (259, 3, 1, struct.pack("<H", 1)),
        (262, 3, 1, struct.pack("<H", 1)),
        _long(273, 0),
        _long(278, height),
        _long(279, len(pixels)),
    ]
    head = _tiff_ifds(exif, placeholder)
    image = [*placeholder[:5], _long(273, len(head)), *placeholder[6:]]
    return _tiff_ifds(exif, image) + pixels


def ico(sizes: Sequence[int] = (16, 32, 48)) -> bytes:
    """A Windows icon holding one PNG per size (as icons are written today)."""
    images = [png(size, size) for size in sizes]
    out = struct.pack("<HHH", 0, 1, len(images))
    offset = 6 + 16 * len(images)
    for size, data in zip(sizes, images, strict=True):
        out += struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(data), offset)
        offset += len(data)
    return out + b"".join(images)


def svg(
    *,
    title: str = "",
    description: str = "",
    texts: Sequence[str] = (),
    width: str = "640",
    height: str = "480",
    view_box: str = "0 0 640 480",
    shapes: int = 0,
) -> bytes:
    """An SVG drawing: title, desc, text elements (one with a tspan), `shapes` rectangles."""
    size = "".join(
        f" {name}={quoteattr(value)}" for name, value in (("width", width), ("height", height)) if value
    )
    box = f" viewBox={quoteattr(view_box)}" if view_box else ""
    body = f"<title>{_xml_text(title)}</title>" if title else ""
    body += f"<desc>{_xml_text(description)}</desc>" if description else ""
    for number, text in enumerate(texts):
        head, _, tail = text.partition(" ")
        inner = (
            f'{_xml_text(head)} <tspan font-weight="bold">{_xml_text(tail)}</tspan>'
            if tail
            else _xml_text(head)
        )
        body += f'<text x="10" y="{20 + 20 * number}">{inner}</text>'
    body += "".join(
        f'<rect x="{n % 600}" y="{n % 440}" width="20" height="20" fill="#{n * 2654435761 % 0xFFFFFF:06x}"/>'
        for n in range(shapes)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg"{size}{box}>{body}</svg>\n'
    ).encode()


def billion_laughs_svg() -> bytes:
    """An SVG that declares the billion laughs and uses the last entity in a text element."""
    return _billion_laughs("svg", '="http://www.w3.org/2000/svg"', "<text>&lol9;</text>").encode()


# --- the adversarial set and the corpus ----------------------------------------------------------


def adversarial() -> dict[str, bytes]:
    """Every hostile or broken file, by a file name that gives its format."""
    return {
        "flate-bomb.pdf": flate_bomb_pdf(),
        "ten-thousand-pages.pdf": many_pages_pdf(),
        "encrypted.pdf": encrypted_pdf(),
        "truncated.pdf": truncated_pdf(),
        "random-bytes.pdf": random_pdf(),
        "zip-bomb.docx": zip_bomb_docx(),
        "document-zip-bomb.docx": document_zip_bomb_docx(),
        "lying-sizes.docx": document_zip_bomb_docx(stated=10_000),
        "entity-bomb.docx": entity_bomb_docx(),
        "billion-laughs.svg": billion_laughs_svg(),
        "huge.png": huge_png(),
    }


_FORMAT_SHARES = [("pdf", 40), ("docx", 25), ("pptx", 15), ("xlsx", 20)]
_IMAGE_SHARES = [("png", 30), ("jpg", 35), ("svg", 20), ("gif", 5), ("webp", 5), ("tiff", 5)]


def _pick(rng: random.Random, shares: list[tuple[str, int]]) -> str:
    return rng.choices([name for name, _ in shares], weights=[weight for _, weight in shares])[0]


def _length(rng: random.Random, low: int, high: int) -> int:
    """A size between `low` and `high`, most near the low end (log-uniform)."""
    return round(low * (high / low) ** rng.random())


def _document(kind: str, rng: random.Random, seed: int) -> bytes:
    title = " ".join(rng.choice(WORDS) for _ in range(3)).title()
    author = rng.choice(["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra"])
    media = rng.randbytes(_length(rng, 20_000, 3_000_000)) if rng.random() < 0.35 else b""
    if kind == "pdf":
        count = _length(rng, 1, 150)
        pages = [sentences(rng, rng.randint(150, 600)) for _ in range(count)]
        outline = [(f"Section {n + 1}", n) for n in range(0, count, max(1, count // 6))]
        return pdf(pages, title=title, author=author, outline=outline, figure=media, seed=seed)
    if kind == "docx":
        body: list[Block] = []
        for section in range(_length(rng, 1, 40)):
            body.append(f"# {title} {section + 1}")
            body += [sentences(rng, rng.randint(40, 200)) for _ in range(rng.randint(2, 8))]
            if rng.random() < 0.3:
                body.append([[rng.choice(WORDS) for _ in range(4)] for _ in range(rng.randint(2, 12))])
        return docx(body, title=title, author=author, media=media)
    if kind == "pptx":
        slides = [
            Slide(
                f"{rng.choice(WORDS).title()} {rng.choice(WORDS)}",
                [sentences(rng, rng.randint(5, 15)) for _ in range(rng.randint(2, 6))],
                sentences(rng, rng.randint(0, 80)) if rng.random() < 0.6 else "",
            )
            for _ in range(_length(rng, 3, 60))
        ]
        return pptx(slides, title=title, author=author, media=media)
    sheets: dict[str, Sequence[Sequence[Cell]]] = {}
    for number in range(rng.randint(1, 5)):
        columns = rng.randint(3, 12)
        header: list[Cell] = [rng.choice(WORDS) for _ in range(columns)]
        rows = [
            [
                rng.choice(WORDS) if column % 3 == 0 else round(rng.uniform(0, 10_000), 2)
                for column in range(columns)
            ]
            for _ in range(_length(rng, 5, 5_000))
        ]
        sheets[f"{rng.choice(WORDS).title()} {number + 1}"] = [header, *rows]
    return xlsx(sheets, title=title, author=author)


def _image(kind: str, rng: random.Random, seed: int) -> bytes:
    width, height = rng.choice([(640, 480), (1024, 768), (1920, 1080), (4032, 3024), (128, 128)])
    exif = Exif(taken=f"20{rng.randint(10, 24)}:0{rng.randint(1, 9)}:1{rng.randint(0, 9)} 12:00:00")
    if kind == "png":
        small = (width // 8, height // 8)
        return png(*small, exif=exif if rng.random() < 0.5 else None, noise=rng.random() * 0.5, seed=seed)
    if kind == "jpg":
        return jpeg(width, height, exif=exif, comment=rng.randbytes(_length(rng, 30_000, 4_000_000)))
    if kind == "svg":
        texts = [sentences(rng, rng.randint(2, 8)) for _ in range(rng.randint(0, 20))]
        return svg(title=rng.choice(WORDS).title(), texts=texts, shapes=_length(rng, 10, 20_000))
    if kind == "gif":
        return gif(width // 8, height // 8)
    if kind == "webp":
        return webp(width, height, exif=exif)
    return tiff(width // 4, height // 4, exif=exif)


def corpus(directory: Path, count: int, *, images: int | None = None, seed: int = 1) -> list[Path]:
    """`count` documents (pdf, docx, pptx, xlsx: a few KB to a few MB, many pages, sheets or
    slides) and `images` images (count // 5 by default) written into `directory`."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for number in range(count):
        kind = _pick(rng, _FORMAT_SHARES)
        path = directory / f"document-{number:04d}.{kind}"
        path.write_bytes(_document(kind, rng, seed * 100_000 + number))
        written.append(path)
    for number in range(count // 5 if images is None else images):
        kind = _pick(rng, _IMAGE_SHARES)
        path = directory / f"image-{number:04d}.{kind}"
        path.write_bytes(_image(kind, rng, seed * 100_000 + number))
        written.append(path)
    return written
