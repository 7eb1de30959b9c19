"""Top-k content search: SQLite FTS5 (what the prefilter searches today) against tantivy, on the
same words, for bench/latency_bench.py's questions with every term kept.

    python bench/topk_bench.py --cache DIR [--workspace DIR] [--queries 50] [--repeat 3]
    python bench/topk_bench.py --cold-index [--no-topk] [--workspace DIR] [--wait 300]

The index is the one `filescout index WORKSPACE` keeps under --cache (made first when missing).
Every content's words are read from `contents` and put in a tantivy index in a temporary
directory: one document per content id, the words as FTS5's tokenizer cuts them (identifiers
joined by `_` fall apart at it), whitespace-tokenized so tantivy keeps them as they are. Then,
each timing repeated --repeat times (medians printed):

- FTS5 bm25 top --pool with all the question's terms; with the terms the prefilter keeps today
  (`telling_terms`, counting not timed); tantivy top --pool with all the terms;
- how far the top lists agree, and how their scores relate (both BM25 with k1 1.2 and b 0.75;
  the IDFs differ: FTS5 ln((N-n+.5)/(n+.5)), at least 1e-6; tantivy ln(1+(N-n+.5)/(n+.5)));
- tantivy's build time, size on disk, resident memory a reader adds (each store measured in a
  process of its own), adding and deleting 1,000 documents with a commit, reopening, and
  listing every document's (content id, stamp) as a reconciliation on open would;
- FTS5's own cost for the same 1,000 additions and deletions, in a transaction rolled back;
- the store as filescout.index.topk keeps it (built by reconciling, reopened, searched with its
  hits checked against `contents`, reconciled after losing 1,000 documents), in --tmp.

Nothing is kept in the index, but it is opened for writing: run this while no server has it.
tantivy is a dependency of filescout on Python 3.11 and later (none on 3.10).

`--cold-index` measures the stores' memory in the server instead: one `filescout serve` cold on
the workspace, with a fresh cache, the number of annotation workers its own choice. Every
0.2 s the RSS and PSS of the server and the processes it started (its workers, multiprocessing's
resource tracker; git left out) are read from /proc, until the pass's progress ends and then
until the server has built its stores, of content words and of descriptions (it waits for the
index to be quiet, and builds one at a time), and 5 s more, or --wait seconds. Printed: when the
scan was stored, the pass ended and both stores were built, and the peaks of the server and of
every process at once, through the pass and in all. `--no-topk`
runs the server without the store (FILESCOUT_NO_TOPK), to the pass's end.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import multiprocessing
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filescout.core.words import unpack_words
from filescout.engine.settings import db_path_for, load_settings
from filescout.index import Index
from filescout.index.topk import BUILT, DISABLED, ContentTopK, stamp, tokens, weighed_query
from filescout.relevance.evidence import POOL, telling_terms
from filescout.relevance.query import analyse, expression
from harness import launch
from harness.procfs import command_line, descendants, kib, load_average, memory_kb, status_fields
from harness.stats import percentile
from harness.wire import ProgressClient
from harness.workspaces import queries

TOKENIZER = "words"
BATCH = 2000
"""Contents read and unpacked at a time, so a large index's words are never all in memory."""
CHURN = 1000


def _tantivy() -> Any:
    """tantivy, imported when first needed: `--help` works without it."""
    try:
        return importlib.import_module("tantivy")
    except ImportError:
        raise SystemExit("this benchmark needs tantivy (Python 3.11 or later: pip install -e .)") from None


def content_terms(text: str) -> list[str]:
    """The terms the content search is given for a question, none dropped: the prefilter's
    (`analyse`), without those FTS5 would read as phrases (their parts are terms too)."""
    return [term for term in analyse(text).terms if "_" not in term]


def schema() -> Any:
    tantivy = _tantivy()
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", tokenizer_name=TOKENIZER, index_option="freq")
    builder.add_unsigned_field("id", indexed=True, fast=True)
    builder.add_unsigned_field("stamp", fast=True)
    return builder.build()


def open_tantivy(directory: Path, made: Any | None = None) -> Any:
    """The index in `directory` (created with `made` as its schema), with its tokenizer."""
    tantivy = _tantivy()
    index = (
        tantivy.Index(made, path=str(directory)) if made is not None else tantivy.Index.open(str(directory))
    )
    index.register_tokenizer(TOKENIZER, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    return index


def document(content_id: int, digest: str, body: str) -> Any:
    made = _tantivy().Document()
    made.add_unsigned("id", content_id)
    made.add_unsigned("stamp", stamp(digest))
    made.add_text("body", tokens(body))
    return made


def tantivy_top(index: Any, terms: Sequence[str], pool: int) -> list[tuple[int, float]]:
    """(content id, score) of the best `pool`, best first, scored as the store scores
    (FTS5's IDF)."""
    if not terms:
        return []
    searcher = index.searcher()
    hits = searcher.search(weighed_query(searcher, index.schema, terms), limit=pool, count=False).hits
    ids = searcher.fast_field_values("id", [address for _, address in hits])
    return [(int(content_id), float(score)) for (score, _), content_id in zip(hits, ids, strict=True)]


def every_document(index: Any) -> list[tuple[int, int]]:
    """(content id, stamp) of every live document: what reconciling on open compares with
    `contents`."""
    tantivy = _tantivy()
    searcher = index.searcher()
    if not searcher.num_docs:
        return []
    addresses = [address for _, address in searcher.search(tantivy.Query.all_query(), searcher.num_docs).hits]
    ids = searcher.fast_field_values("id", addresses)
    stamps = searcher.fast_field_values("stamp", addresses)
    return list(zip(ids, stamps, strict=True))


FTS_TOP = "SELECT rowid, bm25(body_fts) AS score FROM body_fts WHERE body_fts MATCH ? ORDER BY score LIMIT ?"


def fts_top(connection: sqlite3.Connection, match: str | None, pool: int) -> list[tuple[int, float]]:
    if match is None:
        return []
    return [(int(rowid), -float(score)) for rowid, score in connection.execute(FTS_TOP, (match, pool))]


def contents_in_batches(db: Path, where: str = "", limit: int = -1) -> Iterator[list[tuple[int, str, str]]]:
    """(content id, hash, words) of the index's contents, in id order, a batch at a time."""
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cursor = connection.execute(
            f"SELECT id, hash, words FROM contents {where} ORDER BY id LIMIT ?", (limit,)
        )
        while rows := cursor.fetchmany(BATCH):
            yield [(int(content_id), str(digest), unpack_words(words)) for content_id, digest, words in rows]
    finally:
        connection.close()


def directory_mb(directory: Path) -> float:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file()) / 1e6


def resident_mb() -> tuple[float, float]:
    """(VmRSS, RssAnon) of this process, MB: the anonymous share is what a store allocates, the
    rest mapped files (SQLite's pages are in its cache, tantivy maps its segments)."""
    fields = status_fields(os.getpid())
    return kib(fields, "VmRSS") / 1024, kib(fields, "RssAnon") / 1024


@dataclass
class Timings:
    """Each repeat's per-question times, seconds."""

    runs: list[list[float]] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        """p50, p95 and max in ms, each the median over the repeats."""
        return {
            name: 1000 * statistics.median(percentile(run, share) for run in self.runs)
            for name, share in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))
        }


def timed(questions: Sequence[Any], repeat: int, search: Callable[[Any], object]) -> Timings:
    timings = Timings()
    for _ in range(repeat):
        run = []
        for question in questions:
            started = time.perf_counter()
            search(question)
            run.append(time.perf_counter() - started)
        timings.runs.append(run)
    return timings


def median_seconds(repeat: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _reader_memory(kind: str, location: str, questions: list[list[str]], pool: int, out: Any) -> None:
    """In a process of its own: resident memory before a store is opened, and after it answered
    every question once."""
    before = resident_mb()
    if kind == "tantivy":
        index = open_tantivy(Path(location))
        for terms in questions:
            tantivy_top(index, terms, pool)
    else:
        connection = sqlite3.connect(f"file:{location}?mode=ro", uri=True)
        connection.execute("PRAGMA cache_size = -65536")  # as much as a question reader may keep
        for terms in questions:
            fts_top(connection, expression(terms, single_tokens=True), pool)
    after = resident_mb()
    out.put({"rss": after[0] - before[0], "anon": after[1] - before[1]})


def reader_memory(kind: str, location: Path, questions: list[list[str]], pool: int) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    child = context.Process(target=_reader_memory, args=(kind, str(location), questions, pool, out))
    child.start()
    found = out.get(timeout=600)
    child.join()
    return found


def agreement(fts: list[tuple[int, float]], other: list[tuple[int, float]]) -> dict[str, float]:
    """How far two top lists agree: the share of the first's members the other has (top 20 and
    the whole pool), and the correlation of their scores over the members they share."""
    first, second = dict(fts), dict(other)
    shared = [content_id for content_id in first if content_id in second]
    top20 = [content_id for content_id, _ in fts[:20]]
    found: dict[str, float] = {
        "overlap": len(shared) / len(first) if first else 1.0,
        "top20_in_pool": sum(content_id in second for content_id in top20) / len(top20) if top20 else 1.0,
        "top20_overlap": len(set(top20) & {content_id for content_id, _ in other[:20]}) / len(top20)
        if top20
        else 1.0,
    }
    if len(shared) >= 3:
        found["correlation"] = statistics.correlation([first[i] for i in shared], [second[i] for i in shared])
        found["ratio"] = statistics.median(second[i] / first[i] for i in shared if first[i] > 0)
    return found


def averaged(rows: list[dict[str, float]]) -> dict[str, float]:
    names = {name for row in rows for name in row}
    return {name: statistics.mean(row[name] for row in rows if name in row) for name in sorted(names)}


def fts_churn(db: Path, batch: list[tuple[int, str, str]], repeat: int) -> dict[str, float]:
    """FTS5's cost for the same change, rolled back each time: `batch` deleted (by naming its
    words, as a contentless table needs), then added again under new row ids."""
    connection = sqlite3.connect(db, isolation_level=None)
    try:
        connection.execute("PRAGMA busy_timeout = 10000")
        ((top,),) = connection.execute("SELECT max(id) FROM contents").fetchall()
        deletes, adds = [], []
        for _ in range(repeat):
            connection.execute("BEGIN IMMEDIATE")
            try:
                started = time.perf_counter()
                connection.executemany(
                    "INSERT INTO body_fts(body_fts, rowid, body) VALUES ('delete', ?, ?)",
                    [(content_id, body) for content_id, _, body in batch],
                )
                deletes.append(time.perf_counter() - started)
                started = time.perf_counter()
                connection.executemany(
                    "INSERT INTO body_fts(rowid, body) VALUES (?, ?)",
                    [(top + number + 1, body) for number, (_, _, body) in enumerate(batch)],
                )
                adds.append(time.perf_counter() - started)
            finally:
                connection.execute("ROLLBACK")
        return {"delete": statistics.median(deletes), "add": statistics.median(adds)}
    finally:
        connection.close()


async def prepare(args: argparse.Namespace) -> tuple[Path, list[list[str]], list[str | None]]:
    """The index's path, each question's terms, and the FTS5 expression the prefilter searches
    today (common terms dropped)."""
    env = launch.server_env(args.cache)
    root = args.workspace.resolve()
    db = db_path_for(root, load_settings(root, None, env).settings, env)
    if not db.exists():
        print(f"indexing {root} into {args.cache} ...", file=sys.stderr)
        subprocess.run(launch.command("index", str(root)), env=env, check=True, stdout=subprocess.DEVNULL)
    index = await Index.open_readonly(db)
    try:
        questions, today = [], []
        for text in queries(args.queries):
            terms = analyse(text).terms
            total, frequency = await index.contents.frequencies(terms)
            questions.append(content_terms(text))
            today.append(expression(telling_terms(terms, frequency, total), single_tokens=True))
    finally:
        await index.close()
    return db, questions, today


def build(db: Path, directory: Path, heap_mb: int, threads: int) -> dict[str, float]:
    """A tantivy index of every content in `db`; the seconds it took (reading and unpacking the
    words included, and apart), documents, and the memory the writing added."""
    index = open_tantivy(directory, schema())
    before = resident_mb()
    started = time.perf_counter()
    writer = index.writer(heap_size=heap_mb * 1_000_000, num_threads=threads)
    reading = 0.0
    documents = 0
    batches = contents_in_batches(db)
    while True:
        read_started = time.perf_counter()
        batch = next(batches, None)
        reading += time.perf_counter() - read_started
        if batch is None:
            break
        for content_id, digest, body in batch:
            writer.add_document(document(content_id, digest, body))
        documents += len(batch)
    writer.commit()
    writer.wait_merging_threads()
    seconds = time.perf_counter() - started
    after = resident_mb()
    peak = kib(status_fields(os.getpid()), "VmHWM") / 1024
    return {
        "seconds": seconds,
        "reading": reading,
        "documents": documents,
        "writer_rss": after[0] - before[0],
        "peak_rss": peak,
    }


def churn(db: Path, directory: Path, repeat: int, heap_mb: int) -> tuple[dict[str, float], list[Any]]:
    """Deleting CHURN documents and committing, then adding them again and committing: medians
    over `repeat` rounds. Returns the batch used too."""
    tantivy = _tantivy()
    batch = next(contents_in_batches(db, limit=CHURN))
    index = open_tantivy(directory)
    writer = index.writer(heap_size=heap_mb * 1_000_000, num_threads=1)
    deletes, adds = [], []
    ids = [content_id for content_id, _, _ in batch]
    index.reload()
    documents = index.searcher().num_docs
    for _ in range(repeat):
        started = time.perf_counter()
        writer.delete_documents_by_query(tantivy.Query.term_set_query(index.schema, "id", ids))
        writer.commit()
        deletes.append(time.perf_counter() - started)
        index.reload()
        assert index.searcher().num_docs == documents - len(batch), "the deletions did not take"
        started = time.perf_counter()
        for content_id, digest, body in batch:
            writer.add_document(document(content_id, digest, body))
        writer.commit()
        adds.append(time.perf_counter() - started)
        index.reload()
        assert index.searcher().num_docs == documents
    writer.wait_merging_threads()
    return {"delete": statistics.median(deletes), "add": statistics.median(adds)}, batch


def reopen(directory: Path, terms: list[str], pool: int) -> None:
    tantivy_top(open_tantivy(directory), terms, pool)


def table(figures: dict[str, Any]) -> None:
    ms = lambda seconds: f"{seconds * 1000:.1f} ms"  # noqa: E731
    latency = figures["latency"]
    print(
        f"## Top-{figures['pool']} content search — {figures['documents']:,} contents, {figures['questions']} questions\n"
    )
    print(
        "| search | p50 | p95 | max | top-200 overlap with FTS5, all terms | FTS5's top 20 in its top 200 |"
    )
    print("|---|---|---|---|---|---|")
    for name, label in (
        ("fts_all", "FTS5 bm25, all terms"),
        ("fts_today", "FTS5 bm25, common terms dropped (today)"),
        ("tantivy", "tantivy, all terms"),
    ):
        row = latency[name]
        agree = figures["agreement"].get(name, {})
        print(
            f"| {label} | {row['p50']:.1f} ms | {row['p95']:.1f} ms | {row['max']:.1f} ms | "
            f"{agree.get('overlap', 1.0):.0%} | {agree.get('top20_in_pool', 1.0):.0%} |"
        )
    agree = figures["agreement"]["tantivy"]
    print(
        f"\ntantivy's scores against FTS5's on shared hits: correlation {agree.get('correlation', float('nan')):.3f}, "
        f"median ratio {agree.get('ratio', float('nan')):.2f}; top-20 overlap {agree['top20_overlap']:.0%}"
    )
    print(
        f"doc counts agree for {figures['vocabulary']['agree']}/{figures['vocabulary']['terms']} question terms\n"
    )
    built, moved, fts = figures["build"], figures["churn"], figures["fts_churn"]
    print("| measure | tantivy | FTS5 |")
    print("|---|---|---|")
    print(
        f"| build (reading and unpacking `contents` included) | {built['seconds']:.1f} s "
        f"(reading {built['reading']:.1f} s) | |"
    )
    print(f"| size on disk | {figures['tantivy_mb']:.0f} MB | {figures['fts_mb']} |")
    print(
        f"| RSS a reader adds after every question (anonymous) | {figures['memory']['tantivy']['rss']:.0f} MB "
        f"({figures['memory']['tantivy']['anon']:.0f}) | {figures['memory']['fts']['rss']:.0f} MB "
        f"({figures['memory']['fts']['anon']:.0f}) |"
    )
    print(
        f"| RSS the writer added while building (peak RSS) | {built['writer_rss']:.0f} MB ({built['peak_rss']:.0f}) | |"
    )
    print(
        f"| delete {CHURN:,} documents + commit | {ms(moved['delete'])} | {ms(fts['delete'])} (no commit) |"
    )
    print(f"| add {CHURN:,} documents + commit | {ms(moved['add'])} | {ms(fts['add'])} (no commit) |")
    print(f"| reopen + first question | {ms(figures['reopen'])} | |")
    print(f"| list every document's (id, stamp) | {ms(figures['listing'])} | |")
    made = figures["prototype"]
    print("\nThe store as `filescout.index.topk` keeps it:\n")
    print("| measure | time |")
    print("|---|---|")
    print(f"| build: open an empty store, reconcile with `contents` | {made['build']:.1f} s |")
    print(f"| reopen, reconcile with nothing to do | {ms(made['reopen'])} |")
    search = made["search"]
    print(
        f"| search top {figures['pool']}, hits checked against `contents` | p50 {search['p50']:.1f} ms, "
        f"p95 {search['p95']:.1f} ms, max {search['max']:.1f} ms |"
    )
    print(f"| reconcile after losing {CHURN:,} documents | {ms(made['catch_up'])} |")


async def prototype(
    db: Path, questions: list[list[str]], pool: int, repeat: int, tmp: Path | None
) -> dict[str, Any]:
    """The store as filescout.index.topk makes it: built by reconciling an empty store, opened
    again with nothing to do, searched with its hits checked against `contents`, and reconciled
    after losing CHURN documents. The index is opened for writing; nothing is written to it."""
    directory = Path(tempfile.mkdtemp(prefix="topk-store-", dir=tmp)) / "store"
    index = await Index.open(db)
    try:
        started = time.perf_counter()
        store = await ContentTopK.open(directory, index.db)
        built = time.perf_counter() - started
        await store.close()
        reopens = []
        for _ in range(repeat):
            started = time.perf_counter()
            store = await ContentTopK.open(directory, index.db)
            reopens.append(time.perf_counter() - started)
            await store.close()
        store = await ContentTopK.open(directory, index.db)
        try:
            searched = Timings()
            for _ in range(repeat):
                run = []
                for terms in questions:
                    started = time.perf_counter()
                    await store.search(terms, limit=pool)
                    run.append(time.perf_counter() - started)
                searched.runs.append(run)
            rows = await index.db.reader.execute_fetchall(
                f"SELECT id FROM contents ORDER BY id LIMIT {CHURN}"
            )
            catching_up = []
            for _ in range(repeat):
                await store.apply([], [int(row[0]) for row in rows])
                started = time.perf_counter()
                caught = await store.reconcile()
                catching_up.append(time.perf_counter() - started)
                assert caught.added == len(rows), caught
        finally:
            await store.close()
        return {
            "build": built,
            "reopen": statistics.median(reopens),
            "search": searched.summary(),
            "catch_up": statistics.median(catching_up),
        }
    finally:
        await index.close()
        shutil.rmtree(directory.parent, ignore_errors=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    tantivy = _tantivy()
    db, questions, today = asyncio.run(prepare(args))
    pool = args.pool
    directory = Path(tempfile.mkdtemp(prefix="topk-", dir=args.tmp))
    try:
        print("FTS5 ...", file=sys.stderr)
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        connection.execute("PRAGMA cache_size = -65536")
        everything = [expression(terms, single_tokens=True) for terms in questions]
        fts_all = timed(everything, args.repeat, lambda match: fts_top(connection, match, pool))
        fts_today = timed(today, args.repeat, lambda match: fts_top(connection, match, pool))
        exact = [fts_top(connection, match, pool) for match in everything]
        kept = [fts_top(connection, match, pool) for match in today]
        counts = dict(connection.execute("SELECT term, doc FROM body_terms").fetchall())
        ((documents,),) = connection.execute("SELECT count(*) FROM contents").fetchall()
        try:
            ((pages,),) = connection.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'body_fts%' OR name LIKE 'contents%'"
            ).fetchall()
            fts_mb = f"{pages / 1e6:.0f} MB (`body_fts` and `contents`)"
        except sqlite3.Error:
            fts_mb = "(dbstat not available)"
        connection.close()

        print(f"tantivy: building from {documents:,} contents ...", file=sys.stderr)
        built = build(db, directory, args.heap_mb, args.threads)
        reopened = median_seconds(args.repeat, lambda: reopen(directory, questions[0], pool))
        index = open_tantivy(directory)
        searched = timed(questions, args.repeat, lambda terms: tantivy_top(index, terms, pool))
        answered = [tantivy_top(index, terms, pool) for terms in questions]
        searcher = index.searcher()
        terms = sorted({term for found in questions for term in found})
        agree = sum(searcher.doc_freq("body", term) == counts.get(term, 0) for term in terms)
        listing = median_seconds(args.repeat, lambda: every_document(index))
        assert len(every_document(index)) == documents
        print("memory, each store in a process of its own ...", file=sys.stderr)
        memory = {
            "tantivy": reader_memory("tantivy", directory, questions, pool),
            "fts": reader_memory("fts", db, questions, pool),
        }
        print(f"churn of {CHURN:,} documents ...", file=sys.stderr)
        moved, batch = churn(db, directory, args.repeat, args.heap_mb)
        fts_moved = fts_churn(db, batch, args.repeat)
        print("the store as filescout.index.topk makes it ...", file=sys.stderr)
        made = asyncio.run(prototype(db, questions, pool, args.repeat, args.tmp))
        return {
            "tantivy_version": tantivy.__version__,
            "pool": pool,
            "documents": documents,
            "questions": len(questions),
            "latency": {
                "fts_all": fts_all.summary(),
                "fts_today": fts_today.summary(),
                "tantivy": searched.summary(),
            },
            "agreement": {
                "fts_today": averaged([agreement(a, b) for a, b in zip(exact, kept, strict=True)]),
                "tantivy": averaged([agreement(a, b) for a, b in zip(exact, answered, strict=True)]),
            },
            "vocabulary": {"terms": len(terms), "agree": agree},
            "build": built,
            "tantivy_mb": directory_mb(directory),
            "fts_mb": fts_mb,
            "memory": memory,
            "churn": moved,
            "fts_churn": fts_moved,
            "reopen": reopened,
            "listing": listing,
            "prototype": made,
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@dataclass
class Peaks:
    """The largest RSS and PSS seen of the server, and of it and its processes at once, MB."""

    server_rss: float = 0.0
    server_pss: float = 0.0
    all_rss: float = 0.0
    all_pss: float = 0.0

    def take(self, server: tuple[int, int], everything: tuple[int, int]) -> None:
        self.server_rss = max(self.server_rss, server[0] / 1024)
        self.server_pss = max(self.server_pss, server[1] / 1024)
        self.all_rss = max(self.all_rss, everything[0] / 1024)
        self.all_pss = max(self.all_pss, everything[1] / 1024)


def memory_at_once(server: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(RSS, PSS) in KiB of the server, and of it and the processes it started but git."""
    own = memory_kb(server)
    rss, pss = own
    for pid in descendants(server):
        command = command_line(pid)
        if pid != server and (b"spawn_main" in command or b"resource_tracker" in command):
            child = memory_kb(pid)
            rss, pss = rss + child[0], pss + child[1]
    return own, (rss, pss)


STORES = 2
"""The stores a server builds (content words, descriptions): the run ends once both are built."""


async def cold_index(args: argparse.Namespace) -> dict[str, Any]:
    """The server's memory through a cold index and the build of its store after it."""
    cache = Path(tempfile.mkdtemp(prefix="filescout-topk-cold-", dir=args.tmp))
    environment = {
        name: value for name, value in os.environ.items() if name not in ("FILESCOUT_WORKERS", DISABLED)
    }
    if args.no_topk:
        environment[DISABLED] = "1"
    figures: dict[str, Any] = {"topk": not args.no_topk, "load_before": load_average()}
    through_pass, overall = Peaks(), Peaks()
    client = await ProgressClient.start(args.workspace.resolve(), cache, watch=False, base_env=environment)
    try:
        built: list[float] = []

        async def sample() -> None:
            while True:
                server, everything = await asyncio.to_thread(memory_at_once, client.pid)
                overall.take(server, everything)
                if client.progress_at("end") is None:
                    through_pass.take(server, everything)
                if not built and len(list(cache.rglob(BUILT))) >= STORES:
                    built.append(time.perf_counter())
                await asyncio.sleep(0.2)

        sampling = asyncio.ensure_future(sample())
        try:
            figures["query_ready_s"] = await client.phase_time("annotating") - client.started
            figures["pass_s"] = await client.wait_for_progress("end") - client.started
            deadline = time.perf_counter() + args.wait
            while not args.no_topk and not built and time.perf_counter() < deadline:
                await asyncio.sleep(0.5)
            await asyncio.sleep(5)
        finally:
            sampling.cancel()
        figures["store_built_s"] = built[0] - client.started if built else None
        figures["through_pass"] = through_pass.__dict__
        figures["overall"] = overall.__dict__
        figures["load_after"] = load_average()
    finally:
        await client.stop()
        shutil.rmtree(cache, ignore_errors=True)
    return figures


def cold_table(figures: dict[str, Any]) -> None:
    built = figures["store_built_s"]
    store = (
        "off (FTS5)" if not figures["topk"] else f"built {built:.1f} s after start" if built else "not built"
    )
    print(
        f"## Cold index with the top-k store {store} — scan stored {figures['query_ready_s']:.1f} s, "
        f"pass ended {figures['pass_s']:.1f} s\n"
    )
    print("| peak, MB | server RSS | server PSS | every process at once, RSS | PSS |")
    print("|---|---|---|---|---|")
    for name, label in (("through_pass", "through the pass"), ("overall", "in all (the store's build too)")):
        peaks = figures[name]
        print(
            f"| {label} | {peaks['server_rss']:.0f} | {peaks['server_pss']:.0f} | "
            f"{peaks['all_rss']:.0f} | {peaks['all_pss']:.0f} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, default=Path(__file__).parent / ".work" / "ws100k")
    parser.add_argument("--cache", type=Path, help="the index's cache (required but with --cold-index)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pool", type=int, default=POOL, help="top k of each search (the prefilter's POOL)")
    parser.add_argument("--heap-mb", type=int, default=64, help="tantivy writer's memory budget")
    parser.add_argument("--threads", type=int, default=1, help="tantivy writer's indexing threads")
    parser.add_argument("--tmp", type=Path, default=None, help="where the tantivy index is built")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--cold-index", action="store_true", help="the server's memory through a cold index")
    parser.add_argument(
        "--no-topk", action="store_true", help="with --cold-index: the server without the store"
    )
    parser.add_argument(
        "--wait", type=float, default=300.0, help="with --cold-index: longest wait for the build"
    )
    args = parser.parse_args()
    if args.cold_index:
        figures = asyncio.run(cold_index(args))
        cold_table(figures)
    elif args.cache is None:
        parser.error("--cache is required")
    else:
        figures = run(args)
        table(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
