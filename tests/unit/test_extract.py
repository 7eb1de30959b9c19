"""Documents' and images' text and facts (scan/extract.py), from files in their real formats
(bench/harness/documents.py): each format's text in reading order and its facts; every hostile
or broken file answered with a clear problem, in bounded time and memory; an image's location
never read; planted secrets kept in the text (redaction happens later, elsewhere)."""

from __future__ import annotations

import json
import logging
import random
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from filescout.core.records import DocumentFacts, Extracted
from filescout.scan import documents as readers
from filescout.scan.classify import extracted_format
from filescout.scan.extract import FORMATS, budget, extract
from filescout.scan.images import exif_date, svg_length
from harness import documents

# --- documents -----------------------------------------------------------------------------------


def test_a_pdf_gives_its_pages_text_in_order_and_its_information() -> None:
    data = documents.pdf(
        ["Quarterly report (draft)\nRevenue grew.", "Costs fell: naïve café prices."],
        title="Quarterly report",
        author="Ada Lovelace",
        created="2024-03-05T10:20:30",
        modified="2024-04-01T08:00:00",
        outline=[("Revenue", 0), ("Costs", 1)],
    )
    found = extract("pdf", data)
    assert found.text.index("Quarterly report (draft)") < found.text.index("Revenue grew.")
    assert found.text.index("Revenue grew.") < found.text.index("naïve café prices")
    assert found.facts == DocumentFacts(
        "pdf",
        title="Quarterly report",
        author="Ada Lovelace",
        created="2024-03-05T10:20:30Z",
        modified="2024-04-01T08:00:00Z",
        parts=2,
        part_name="page",
        headings=("Revenue", "Costs"),
        width=612,
        height=792,
    )


def test_a_pdf_locked_only_against_changes_is_read() -> None:
    """An empty password to open (an owner's password to change it) is how most "protected"
    PDFs come: every viewer opens them, and so do we."""
    found = extract("pdf", documents.pdf(["Open to all readers."], encrypted=True, password=b""))
    assert "Open to all readers." in found.text
    assert found.facts.problem == ""


def test_a_word_document_gives_paragraphs_headings_and_tables_in_order() -> None:
    data = documents.docx(
        [
            "# Installation",
            "Download the package.\nThen run it.",
            "## Requirements",
            [["Name", "Version"], ["python", "3.10"]],
            "Done.",
        ],
        title="Setup guide",
        author="Grace Hopper",
        pages=4,
    )
    found = extract("docx", data)
    assert found.text.split("\n") == [
        "Installation",
        "Download the package.",
        "Then run it.",
        "Requirements",
        "Name\tVersion",
        "python\t3.10",
        "Done.",
    ]
    assert found.facts == DocumentFacts(
        "docx",
        title="Setup guide",
        author="Grace Hopper",
        created="2024-03-05T10:20:30Z",
        modified="2024-03-06T08:00:00Z",
        parts=4,
        part_name="page",
        headings=("Installation", "Requirements"),
    )


def test_a_presentation_gives_each_slides_title_text_and_notes() -> None:
    data = documents.pptx(
        [
            documents.Slide("Roadmap", ["Ship the index", "Then the editor"], notes="Mention the dates."),
            documents.Slide("Questions"),
        ],
        title="Planning",
        author="Alan Turing",
    )
    found = extract("pptx", data)
    assert found.text.split("\n") == [
        "Roadmap",
        "Ship the index",
        "Then the editor",
        "Mention the dates.",
        "Questions",
    ]
    assert found.facts.title == "Planning" and found.facts.author == "Alan Turing"
    assert (found.facts.parts, found.facts.part_name) == (2, "slide")
    assert found.facts.headings == ("Roadmap", "Questions")
    assert found.facts.problem == ""


def test_a_workbook_gives_sheet_names_and_rows_of_values() -> None:
    data = documents.xlsx(
        {"Budget": [["item", "cost"], ["servers", 1200], ["licences", 99.5]], "Notes": [["reviewed"]]},
        title="Budget 2025",
    )
    found = extract("xlsx", data)
    assert found.text.split("\n") == [
        "Budget",
        "item\tcost",
        "servers\t1200",
        "licences\t99.5",
        "Notes",
        "reviewed",
    ]
    assert (found.facts.parts, found.facts.part_name, found.facts.headings) == (
        2,
        "sheet",
        ("Budget", "Notes"),
    )
    assert found.facts.title == "Budget 2025"


def test_the_planted_secrets_stay_in_the_text() -> None:
    """Extraction keeps what the file says; the redaction of what reaches a model is later."""
    for fmt, data in (("pdf", documents.secret_pdf()), ("docx", documents.secret_docx())):
        found = extract(fmt, data)
        for secret in documents.PLANTED_SECRETS:
            assert secret in found.text, (fmt, secret)


# --- images --------------------------------------------------------------------------------------

CAMERA = {"camera": "Canon EOS 80D", "taken": "2023-06-01T10:20:30"}


@pytest.mark.parametrize(
    ("fmt", "data", "expected"),
    [
        ("png", documents.png(40, 30, exif=documents.Exif(), title="Chart"), {"title": "Chart", **CAMERA}),
        ("jpeg", documents.jpeg(333, 217, exif=documents.Exif()), CAMERA),
        ("webp", documents.webp(50, 20, exif=documents.Exif()), CAMERA),
        ("tiff", documents.tiff(20, 10, exif=documents.Exif()), CAMERA),
        ("gif", documents.gif(31, 13), {}),
        ("bmp", documents.bmp(7, 5), {}),
        ("ico", documents.ico((16, 64)), {"parts": 2, "part_name": "image"}),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_an_image_gives_its_size_and_camera_and_never_its_location(
    fmt: str, data: bytes, expected: dict
) -> None:
    """Every field is compared, so a location could be nowhere; and the GPS block the fixture
    holds is never read at all."""
    found = extract(fmt, data)
    sizes = {"png": (40, 30), "jpeg": (333, 217), "webp": (50, 20), "tiff": (20, 10), "gif": (31, 13)}
    width, height = sizes.get(fmt) or {"bmp": (7, 5), "ico": (64, 64)}[fmt]
    assert found == Extracted("", DocumentFacts(fmt, width=width, height=height, **expected))
    shown = repr(found).lower()
    assert "gps" not in shown and "latitude" not in shown
    assert all(f"{degrees}" not in shown for degrees in ("48.8", "51/", "2.29"))


def test_an_svg_gives_its_title_description_and_text_elements() -> None:
    data = documents.svg(
        title="Architecture",
        description="How the rooms connect",
        texts=["scan index", "relevance"],
        width="210mm",
        height="",
        view_box="0 0 800 600",
    )
    found = extract("svg", data)
    assert found.text.split("\n") == ["Architecture", "How the rooms connect", "scan index", "relevance"]
    assert found.facts == DocumentFacts("svg", title="Architecture", width=794, height=600)


def test_the_dates_and_lengths_images_state_are_read_as_iso_and_pixels() -> None:
    assert exif_date("2023:06:01 10:20:30") == "2023-06-01T10:20:30"
    assert exif_date("0000:00:00 00:00:00") == ""
    assert readers.pdf_date("D:20240305102030+01'00'") == "2024-03-05T10:20:30+01:00"
    assert readers.pdf_date("D:2024") == "2024"
    assert readers.pdf_date("yesterday") == ""
    assert svg_length("2in") == 192 and svg_length("100%") is None and svg_length("12em") is None


# --- trouble ---------------------------------------------------------------------------------------

ADVERSARIAL_PROBLEMS = {
    "flate-bomb.pdf": "too large: a page's content expands to more than 32 MB",
    "ten-thousand-pages.pdf": "text read from the first 1,000 of 10,000 pages",
    "encrypted.pdf": "encrypted",
    "truncated.pdf": "damaged: ",
    "random-bytes.pdf": "damaged: not a PDF",
    "zip-bomb.docx": "too large: expands to more than ",
    "document-zip-bomb.docx": "too large: expands to more than ",
    "lying-sizes.docx": "damaged: word/document.xml: Bad CRC-32",
    "entity-bomb.docx": "refused: XML entity declarations",
    "billion-laughs.svg": "refused: XML entities that expand",
    "huge.png": "too large: 100000x100000 pixels",
}

CHILD = """
import json, resource, sys
from pathlib import Path
from filescout.scan.classify import extracted_format
from filescout.scan.extract import extract

def peak_mb():
    # This process's own high-water mark. Linux's ru_maxrss carries over what the process that
    # started it held (a test run's pytest grows to hundreds of MB), VmHWM is this process's.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

found = {}
for path in sorted(Path(sys.argv[1]).iterdir()):
    result = extract(extracted_format(path.name), path.read_bytes())
    found[path.name] = [result.facts.problem, len(result.text), result.facts.parts_read]
print(json.dumps({"found": found, "peak_mb": peak_mb()}))
"""


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    for name, data in documents.adversarial().items():
        (folder / name).write_bytes(data)
    return folder


def test_every_hostile_file_gives_a_clear_problem_in_one_worker_of_sane_memory(hostile_files: Path) -> None:
    """All of them, one after another, in one process as a worker would meet them: each
    returns, says what is wrong, and the process never holds what a bomb would expand to."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(hostile_files)], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    problems = {name: found[0] for name, found in report["found"].items()}
    assert set(problems) == set(ADVERSARIAL_PROBLEMS)
    for name, expected in ADVERSARIAL_PROBLEMS.items():
        assert problems[name].startswith(expected), (name, problems[name])
    assert report["found"]["ten-thousand-pages.pdf"][1:] == [pytest.approx(30_892, rel=0.2), 1000]
    assert report["peak_mb"] < 500, report["peak_mb"]


def test_a_file_that_takes_too_long_stops_at_the_deadline_with_what_it_read() -> None:
    found = extract("pdf", documents.many_pages_pdf(), seconds=0)
    assert found.facts.problem.startswith("timed out after 0 s"), found.facts.problem
    assert extract("docx", documents.docx(["text"]), seconds=0).facts.problem.startswith(
        "timed out after 0 s"
    )


def test_text_past_the_cap_is_clipped_where_it_reached_it() -> None:
    data = documents.docx([f"Paragraph {number} of a long story." for number in range(500)])
    found = readers.docx(data, replace(budget(), text_chars=1000))
    assert len(found.text) <= 1000
    assert found.text.startswith("Paragraph 0 of a long story.")
    assert found.facts.problem == "text clipped at 1000 characters"
    sheets = documents.xlsx({f"Sheet {n}": [[f"row {row}"] for row in range(300)] for n in range(3)})
    clipped = readers.xlsx(sheets, replace(budget(), text_chars=1000))
    assert clipped.facts.problem == "text clipped at 1000 characters, in sheet 1 of 3"
    assert clipped.facts.parts_read == 1


def test_a_part_bigger_than_a_part_may_be_is_refused_before_it_is_inflated() -> None:
    data = documents.docx(["x" * 300_000])
    limits = replace(budget(), zip_member_bytes=100_000)
    assert (
        readers.docx(data, limits).facts.problem == "too large: word/document.xml expands to more than 0 MB"
    )


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_garbage_under_any_format_is_damaged_never_an_exception(fmt: str) -> None:
    for data in (b"", b"\x00" * 64, bytes(range(256)) * 40):
        found = extract(fmt, data)
        assert found.text == ""
        assert found.facts.format == fmt
        assert found.facts.problem.startswith("damaged: "), (fmt, found.facts.problem)


MUTATED = {
    "pdf": documents.pdf(["Hello (world)", "Two"], title="T", outline=[("Intro", 0)]),
    "docx": documents.docx(["# Head", "para", [["a", "b"]]], title="D"),
    "pptx": documents.pptx([documents.Slide("S", ["l"], "notes")]),
    "xlsx": documents.xlsx({"First": [["a", 1]]}),
    "png": documents.png(4, 3, exif=documents.Exif()),
    "jpeg": documents.jpeg(33, 17, exif=documents.Exif()),
    "webp": documents.webp(5, 2, exif=documents.Exif()),
    "tiff": documents.tiff(4, 4, exif=documents.Exif()),
    "gif": documents.gif(3, 3),
    "bmp": documents.bmp(2, 2),
    "ico": documents.ico((16,)),
    "svg": documents.svg(title="x", texts=["a b"]),
}


@pytest.mark.parametrize("fmt", sorted(MUTATED))
def test_damaged_copies_of_a_good_file_are_answered_by_the_readers_own_checks(
    fmt: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Bytes changed, cut or inserted at random (seeded): every copy is answered, and outside
    PDF (pypdf's own trouble is the file's) none by the catch-all that logs an exception."""
    rng = random.Random(fmt)
    caplog.set_level(logging.DEBUG, logger="filescout.scan.extract")
    for _ in range(40):
        data = bytearray(MUTATED[fmt])
        where = rng.randrange(len(data))
        if rng.random() < 0.4:
            for _ in range(rng.randint(1, 20)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif rng.random() < 0.5:
            data = data[:where]
        else:
            data[where:where] = rng.randbytes(rng.randint(1, 200))
        assert isinstance(extract(fmt, bytes(data)), Extracted)
    if fmt != "pdf":
        assert [record.getMessage() for record in caplog.records] == []


def test_a_password_protected_office_file_is_encrypted_not_damaged() -> None:
    """Office keeps such a file in an OLE container whose directory names its EncryptedPackage
    stream (here its signature and that name stand for it)."""
    container = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504) + "EncryptedPackage".encode("utf-16-le")
    for fmt in ("docx", "pptx", "xlsx"):
        assert extract(fmt, container).facts.problem == "encrypted"
    assert extract("docx", container[:512]).facts.problem == "damaged: an old Office format (OLE), not OOXML"


def test_an_unknown_format_is_a_problem_too() -> None:
    assert extract("djvu", b"AT&TFORM").facts.problem == "unknown format: djvu"


def test_every_format_the_scan_gives_is_one_extract_reads() -> None:
    names = ["a.pdf", "a.docx", "a.pptx", "a.xlsx", "a.png", "a.jpg", "a.jpeg", "a.gif", "a.webp"]
    names += ["a.bmp", "a.tif", "a.tiff", "a.ico", "a.svg"]
    assert {extracted_format(name) for name in names} == set(FORMATS)


def test_threads_extracting_at_once_get_what_one_alone_gets() -> None:
    """A server thread may extract while another does: nothing is shared between calls."""
    files = [
        ("pdf", documents.secret_pdf()),
        ("docx", documents.secret_docx()),
        ("svg", documents.svg(texts=["a b"])),
    ]
    alone = [extract(fmt, data) for fmt, data in files]
    together: list[list[Extracted]] = [[] for _ in range(4)]

    def run(slot: int) -> None:
        together[slot] = [extract(fmt, data) for _ in range(5) for fmt, data in files]

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results == alone * 5 for results in together)


def test_pypdf_is_loaded_by_the_first_pdf_not_before() -> None:
    code = (
        "import sys\nfrom harness import documents\nfrom filescout.scan.extract import extract\n"
        "extract('docx', documents.docx(['x'])); extract('png', documents.png(2, 2))\n"
        "before = 'pypdf' in sys.modules\nextract('pdf', documents.pdf(['x']))\n"
        "print(before, 'pypdf' in sys.modules)\n"
    )
    bench = Path(__file__).resolve().parents[2] / "bench"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=bench, check=True
    )
    assert done.stdout.split() == ["False", "True"]
