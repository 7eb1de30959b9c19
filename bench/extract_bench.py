"""How fast one worker extracts documents' and images' text and facts (scan/extract.py), and
what memory it takes: a generated corpus of real-format files (bench/harness/documents.py: PDF,
DOCX, PPTX, XLSX of a few KB to a few MB, and images) is extracted file after file in ONE child
process, as one worker of the pool would; then the hostile set (bombs, damage, encryption) in
the same process. Prints files/s and MB/s (input bytes) per format, and the child's peak RSS
after the corpus and after the hostile set too.

    python bench/extract_bench.py [--count 200] [--out extract.json]
    python bench/extract_bench.py --compare [--compare-python OTHER_VENV/bin/python]

--compare also runs the libraries the extraction was chosen against, each in a child of its own
(import time, throughput, peak RSS, installed size): pypdfium2 and pypdf for PDF, python-docx,
python-pptx and openpyxl for OOXML, Pillow for images. Those not installed in the interpreter
given (this one by default) are skipped.
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import documents

FORMAT_OF_SUFFIX = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".png": "png",
    ".jpg": "jpeg",
    ".gif": "gif",
    ".webp": "webp",
    ".tiff": "tiff",
    ".svg": "svg",
    ".bmp": "bmp",
    ".ico": "ico",
}


# --- the child: one worker ------------------------------------------------------------------------


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run_files(
    folder: Path, extract: Callable[[str, bytes], int], formats: set[str] | None
) -> dict[str, Any]:
    """Extract every file of `folder` (of `formats`), timing each: figures per format."""
    per_format: dict[str, dict[str, float]] = {}
    for path in sorted(folder.iterdir()):
        fmt = FORMAT_OF_SUFFIX.get(path.suffix)
        if fmt is None or (formats is not None and fmt not in formats):
            continue
        data = path.read_bytes()
        started = time.perf_counter()
        chars = extract(fmt, data)
        seconds = time.perf_counter() - started
        row = per_format.setdefault(fmt, {"files": 0, "bytes": 0, "seconds": 0.0, "chars": 0, "slowest": 0.0})
        row["files"] += 1
        row["bytes"] += len(data)
        row["seconds"] += seconds
        row["chars"] += chars
        row["slowest"] = max(row["slowest"], seconds)
    return per_format


def child_ours(corpus: Path, hostile: Path) -> dict[str, Any]:
    """scan/extract.py over the corpus, then over the hostile set, in this one process."""
    started = time.perf_counter()
    from filescout.scan import documents as readers
    from filescout.scan.extract import extract

    imported = time.perf_counter()
    readers._pypdf()
    imported_pdf = time.perf_counter()
    problems: dict[str, int] = {}

    def ours(fmt: str, data: bytes) -> int:
        found = extract(fmt, data)
        if found.facts.problem:
            kind = found.facts.problem.split(":")[0].split(" after")[0]
            problems[kind] = problems.get(kind, 0) + 1
        return len(found.text)

    corpus_figures = _run_files(corpus, ours, None)
    peak_corpus = _peak_mb()
    hostile_rows = {}
    for path in sorted(hostile.iterdir()):
        fmt = FORMAT_OF_SUFFIX[path.suffix]
        data = path.read_bytes()
        began = time.perf_counter()
        found = extract(fmt, data)
        hostile_rows[path.name] = {
            "seconds": time.perf_counter() - began,
            "bytes": len(data),
            "problem": found.facts.problem,
        }
    return {
        "import_ms": 1000 * (imported - started),
        "import_pypdf_ms": 1000 * (imported_pdf - imported),
        "formats": corpus_figures,
        "problems": problems,
        "peak_rss_mb": peak_corpus,
        "hostile": hostile_rows,
        "peak_rss_mb_with_hostile": _peak_mb(),
    }


# --- the candidates compared -------------------------------------------------------------------------


def _pypdfium2() -> Callable[[str, bytes], int]:
    import pypdfium2

    def run(fmt: str, data: bytes) -> int:
        document = pypdfium2.PdfDocument(data)
        chars = 0
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            chars += len(textpage.get_text_bounded())
            textpage.close()
            page.close()
        document.get_metadata_dict()
        document.close()
        return chars

    return run


def _pypdf() -> Callable[[str, bytes], int]:
    import pypdf

    def run(fmt: str, data: bytes) -> int:
        reader = pypdf.PdfReader(io.BytesIO(data))
        _ = reader.metadata
        return sum(len(page.extract_text()) for page in reader.pages)

    return run


def _python_docx() -> Callable[[str, bytes], int]:
    import docx

    def run(fmt: str, data: bytes) -> int:
        document = docx.Document(io.BytesIO(data))
        _ = document.core_properties.title
        chars = sum(len(paragraph.text) for paragraph in document.paragraphs)
        for table in document.tables:
            chars += sum(len(cell.text) for row in table.rows for cell in row.cells)
        return chars

    return run


def _python_pptx() -> Callable[[str, bytes], int]:
    import pptx

    def run(fmt: str, data: bytes) -> int:
        presentation = pptx.Presentation(io.BytesIO(data))
        _ = presentation.core_properties.title
        chars = 0
        for slide in presentation.slides:
            chars += sum(len(shape.text_frame.text) for shape in slide.shapes if shape.has_text_frame)
            if slide.has_notes_slide:
                chars += len(slide.notes_slide.notes_text_frame.text)
        return chars

    return run


def _openpyxl() -> Callable[[str, bytes], int]:
    import openpyxl

    def run(fmt: str, data: bytes) -> int:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        _ = workbook.properties.title
        chars = 0
        for sheet in workbook.worksheets:
            for row in sheet.iter_rows(values_only=True):
                chars += sum(len(str(value)) for value in row if value is not None)
        workbook.close()
        return chars

    return run


def _pillow() -> Callable[[str, bytes], int]:
    from PIL import Image

    def run(fmt: str, data: bytes) -> int:
        if fmt == "svg":
            return 0
        with Image.open(io.BytesIO(data)) as image:
            _ = image.size
            exif = image.getexif()
            _ = (exif.get(0x010F), exif.get(0x0110), exif.get_ifd(0x8769).get(0x9003))
        return 0

    return run


def _ours(formats: set[str]) -> Callable[[], Callable[[str, bytes], int]]:
    def load() -> Callable[[str, bytes], int]:
        from filescout.scan.extract import extract

        if "pdf" in formats:
            from filescout.scan import documents as readers

            readers._pypdf()
        return lambda fmt, data: len(extract(fmt, data).text)

    return load


DOCUMENTS = {"docx", "pptx", "xlsx"}
IMAGES = {"png", "jpeg", "gif", "webp", "tiff", "bmp", "ico"}
CANDIDATES: dict[str, tuple[str, set[str], Callable[[], Callable[[str, bytes], int]]]] = {
    "filescout pdf (pypdf, limits)": ("pypdf", {"pdf"}, _ours({"pdf"})),
    "pypdf": ("pypdf", {"pdf"}, _pypdf),
    "pypdfium2": ("pypdfium2", {"pdf"}, _pypdfium2),
    "filescout docx (stdlib)": ("", {"docx"}, _ours({"docx"})),
    "python-docx": ("python-docx", {"docx"}, _python_docx),
    "filescout pptx (stdlib)": ("", {"pptx"}, _ours({"pptx"})),
    "python-pptx": ("python-pptx", {"pptx"}, _python_pptx),
    "filescout xlsx (stdlib)": ("", {"xlsx"}, _ours({"xlsx"})),
    "openpyxl": ("openpyxl", {"xlsx"}, _openpyxl),
    "filescout images (headers)": ("", IMAGES, _ours(IMAGES)),
    "pillow": ("pillow", IMAGES, _pillow),
}


def child_candidate(name: str, corpus: Path, hostile: Path) -> dict[str, Any]:
    """One candidate over the corpus's files of its formats, then over the hostile ones: what
    each of those did (an exception's kind, or "read") and the peak RSS after them."""
    _, formats, load = CANDIDATES[name]
    started = time.perf_counter()
    try:
        run = load()
    except ImportError as exc:
        return {"skipped": f"not installed ({exc.name})"}
    imported = time.perf_counter()
    figures = _run_files(corpus, run, formats)
    peak = _peak_mb()
    outcomes = {}
    for path in sorted(hostile.iterdir()):
        fmt = FORMAT_OF_SUFFIX[path.suffix]
        if fmt not in formats:
            continue
        began = time.perf_counter()
        try:
            run(fmt, path.read_bytes())
            outcome = "read"
        except Exception as exc:
            outcome = type(exc).__name__
        outcomes[path.name] = {
            "seconds": time.perf_counter() - began,
            "outcome": outcome,
            "peak_rss_mb": _peak_mb(),
        }
    return {
        "import_ms": 1000 * (imported - started),
        "formats": figures,
        "peak_rss_mb": peak,
        "hostile": outcomes,
        "peak_rss_mb_with_hostile": _peak_mb(),
    }


def installed_mb(distribution: str, python: str) -> float | None:
    """A distribution's installed size with what it requires (its closure), in the given
    interpreter's environment, compiled bytecode included; None when it is not installed."""
    code = (
        "import importlib.metadata as m, json, re, sys\n"
        "seen, sizes = set(), 0\n"
        "todo = [sys.argv[1]]\n"
        "while todo:\n"
        "    name = re.sub(r'[-_.]+', '-', todo.pop()).lower()\n"
        "    if name in seen: continue\n"
        "    seen.add(name)\n"
        "    try: dist = m.distribution(name)\n"
        "    except m.PackageNotFoundError: continue\n"
        "    for f in dist.files or []:\n"
        "        try: sizes += f.size or dist.locate_file(f).stat().st_size\n"
        "        except OSError: pass\n"
        "    todo += [re.split(r'[ ;<>=!\\[~(]', r, maxsplit=1)[0] for r in (dist.requires or []) if 'extra ==' not in r]\n"
        "print(json.dumps(sizes if len(seen) and sizes else None))\n"
    )
    done = subprocess.run([python, "-c", code, distribution], capture_output=True, text=True, check=False)
    value = json.loads(done.stdout or "null")
    return None if value is None else value / 1e6


# --- the parent ----------------------------------------------------------------------------------------


def _in_child(python: str, *arguments: str) -> dict[str, Any]:
    done = subprocess.run(
        [python, str(Path(__file__).resolve()), "--child", *arguments],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def _rate_line(label: str, row: dict[str, float]) -> str:
    seconds = max(row["seconds"], 1e-9)
    return (
        f"  {label:<8} {int(row['files']):>4} files {row['bytes'] / 1e6:>7.1f} MB: "
        f"{row['files'] / seconds:>7.1f} files/s {row['bytes'] / 1e6 / seconds:>7.1f} MB/s, "
        f"slowest {1000 * row['slowest']:.0f} ms"
    )


def _total(formats: dict[str, dict[str, float]]) -> dict[str, float]:
    total = {"files": 0.0, "bytes": 0.0, "seconds": 0.0, "chars": 0.0, "slowest": 0.0}
    for row in formats.values():
        for key in ("files", "bytes", "seconds", "chars"):
            total[key] += row[key]
        total["slowest"] = max(total["slowest"], row["slowest"])
    return total


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="filescout-extract-") as folder:
        corpus, hostile = Path(folder, "corpus"), Path(folder, "hostile")
        started = time.perf_counter()
        documents.corpus(corpus, args.count, seed=args.seed)
        hostile.mkdir()
        for name, data in documents.adversarial().items():
            (hostile / name).write_bytes(data)
        print(
            f"corpus of {len(list(corpus.iterdir()))} files written in {time.perf_counter() - started:.1f} s"
        )
        ours = _in_child(sys.executable, "ours", str(corpus), str(hostile))
        print(
            f"one worker (import {ours['import_ms']:.0f} ms, pypdf on the first PDF {ours['import_pypdf_ms']:.0f} ms):"
        )
        for fmt, row in sorted(ours["formats"].items()):
            print(_rate_line(fmt, row))
        print(_rate_line("all", _total(ours["formats"])))
        print(f"  problems: {ours['problems'] or 'none'}")
        print(
            f"peak RSS {ours['peak_rss_mb']:.0f} MB after the corpus, {ours['peak_rss_mb_with_hostile']:.0f} MB after the hostile set:"
        )
        for name, row in ours["hostile"].items():
            print(f"  {name:<24} {1000 * row['seconds']:>6.0f} ms  {row['problem']}")
        result: dict[str, Any] = {"count": args.count, "seed": args.seed, "ours": ours}
        if args.compare:
            result["compare"] = compare(args.compare_python or sys.executable, corpus, hostile)
    return result


def compare(python: str, corpus: Path, hostile: Path) -> dict[str, Any]:
    print(f"candidates, each in a child of its own ({python}):")
    found: dict[str, Any] = {}
    for name, (distribution, _, _) in CANDIDATES.items():
        interpreter = sys.executable if name.startswith("filescout") else python
        row = _in_child(interpreter, "candidate", name, str(corpus), str(hostile))
        if distribution:
            row["installed_mb"] = installed_mb(distribution, interpreter)
        found[name] = row
        if "skipped" in row:
            print(f"  {name:<28} skipped: {row['skipped']}")
            continue
        total = _total(row["formats"])
        seconds = max(total["seconds"], 1e-9)
        size = f", installed {row['installed_mb']:.1f} MB" if row.get("installed_mb") else ""
        print(
            f"  {name:<28} {total['files'] / seconds:>7.1f} files/s {total['bytes'] / 1e6 / seconds:>6.1f} MB/s, "
            f"import {row['import_ms']:.0f} ms, peak RSS {row['peak_rss_mb']:.0f} MB{size}"
        )
        worst = max(row["hostile"].items(), key=lambda item: item[1]["peak_rss_mb"], default=None)
        if worst is not None:
            slowest = max(row["hostile"].items(), key=lambda item: item[1]["seconds"])
            print(
                f"  {'':<28} hostile files: peak RSS {row['peak_rss_mb_with_hostile']:.0f} MB (after {worst[0]}), "
                f"slowest {slowest[0]} {slowest[1]['seconds']:.1f} s"
            )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--count", type=int, default=200, help="documents in the corpus (and a fifth as many images)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    parser.add_argument("--compare", action="store_true", help="also run the candidate libraries")
    parser.add_argument(
        "--compare-python", default=None, help="the interpreter that has the candidates installed"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "ours":
            found = child_ours(Path(rest[0]), Path(rest[1]))
        else:
            found = child_candidate(rest[0], Path(rest[1]), Path(rest[2]))
        print(json.dumps(found))
        return
    result = run(args)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
