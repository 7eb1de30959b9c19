"""Secrets benchmark: the planted-secret corpus through the whole pipeline, counted.

    python bench/secrets_bench.py [--throughput]

The corpus (bench/harness/secrets_corpus.py) plants every kind of secret in a file written the way real
repositories hold it. A workspace of those files is served by `filescout serve` with a model on
(a local OpenAI-compatible server on 127.0.0.1, which records every request body): the files
are annotated by the model from their outlines and excerpts, then findRelevant runs over
questions that pull them in, with tag picking, judging and the final ranking. Every fourth answer
is held back, so those files keep their structural annotations and the judge reads those too. The
model writes secrets back into the summaries, tags and reasons it answers with, the way a file
holds them.

Reported: kinds, secrets planted, requests logged, secrets of which any fragment of 8 characters
of the random part reached any request (goal 0), secrets of which a fragment reached the client
in what findRelevant and getFiles answered, prompt-ready blocks included (goal 0; a secret in a
file's name is shown with the name), files annotated by the model, files judged, and ordinary
identifiers or prose that did not arrive intact. Exits 1 when a secret leaked either way.

With --throughput it measures what redaction costs instead: megabytes of filescout's own
sources redacted a second (best of 15 passes over three copies), and the microseconds each of
their summaries and tag lists (from the structural annotator) takes to be shown: through the
screen, and through every rule.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from filescout.annotate.structural import annotate_structure
from filescout.core.records import FileToAnnotate
from filescout.llm.redact import apply_rules, redact
from harness import secrets_corpus
from harness.fake_openai import FakeOpenAI
from harness.procfs import load_average

HERE = Path(__file__).resolve().parent


async def measure() -> secrets_corpus.Outcome:
    fake = FakeOpenAI().start()
    try:
        with tempfile.TemporaryDirectory(prefix="filescout-secrets-") as tmp:
            return await secrets_corpus.run(Path(tmp), fake)
    finally:
        fake.stop()


def report(outcome: secrets_corpus.Outcome, before: str, after: str) -> None:
    readable = outcome.files - len(outcome.skipped)
    requests = ", ".join(f"{kind} {count}" for kind, count in sorted(outcome.requests.items()))
    rows = [
        ("date", datetime.now(timezone.utc).strftime("%Y-%m-%d")),
        ("machine", f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"),
        ("load (1/5/15 min) before, after", f"{before} / {after}"),
        ("kinds of secret", str(outcome.kinds)),
        ("secrets planted", str(outcome.secrets)),
        (
            "files",
            f"{outcome.files} ({len(outcome.skipped)} skipped as sensitive by name, {readable} read)",
        ),
        ("requests logged", f"{sum(outcome.requests.values())} ({requests})"),
        ("request bodies", f"{outcome.request_chars / 1000:.0f} kB"),
        ("secrets reaching any request (goal 0)", str(len(outcome.leaked))),
        (
            "secrets reaching the client (goal 0)",
            f"{len(outcome.shown_leaked)} (in {outcome.shown_chars / 1000:.0f} kB of answers)",
        ),
        ("files sent to the model for annotation", f"{len(outcome.sent_for_annotation)} of {readable}"),
        (
            "files annotated by the model",
            f"{len(outcome.model_annotated)} of {readable} "
            f"({len(outcome.structural)} answers held back on purpose: structural)",
        ),
        ("files listed to the judge", f"{len(outcome.judged)} of {readable}"),
        (
            "files findRelevant returned",
            f"{len(outcome.found)} (over {len(secrets_corpus.QUESTIONS)} questions)",
        ),
        ("ordinary text lost (goal 0)", str(len(outcome.lost))),
        ("run time", f"{outcome.seconds:.1f} s"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    for kind, secret in outcome.leaked:
        print(f"LEAKED  {kind}: {secret[:12]}...")
    for kind, secret in outcome.shown_leaked:
        print(f"SHOWN  {kind}: {secret[:12]}...")
    for text in outcome.lost:
        print(f"LOST  {text}")


def throughput() -> None:
    texts = [path.read_text() for path in sorted((HERE.parent / "server" / "filescout").rglob("*.py"))] * 3
    size = sum(len(text) for text in texts)
    redact("warm up: compile the patterns")
    before, best = load_average(), float("inf")
    for _ in range(15):
        started = time.perf_counter()
        for text in texts:
            redact(text)
        best = min(best, time.perf_counter() - started)
    print(f"redacted {size / 1e6:.2f} MB in {best:.3f} s (best of 15): {size / 1e6 / best:.2f} MB/s")
    shown = summaries()
    for name, redaction in (("through the screen", redact), ("through every rule", apply_rules)):
        fastest = float("inf")
        for _ in range(15):
            started = time.perf_counter()
            for text in shown:
                redaction(text)
            fastest = min(fastest, time.perf_counter() - started)
        print(f"{len(shown)} summaries and tag lists {name}: {fastest / len(shown) * 1e6:.1f} µs each")
    print(f"load (1/5/15 min) before, after: {before} / {load_average()}")


def summaries() -> list[str]:
    """What the structural annotator says of filescout's own sources: each summary, and each
    file's tags as one text (as `engine.shown` screens an item's texts)."""
    texts = []
    for path in sorted((HERE.parent / "server" / "filescout").rglob("*.py")):
        item = FileToAnnotate(str(path), "h", "python", "source", path.read_text())
        annotation = annotate_structure(item, with_words=False)
        texts += [annotation.summary, "\n".join(annotation.tags)]
    return texts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--throughput", action="store_true", help="measure what redaction costs")
    if parser.parse_args().throughput:
        throughput()
        return 0
    before = load_average()
    outcome = asyncio.run(measure())
    report(outcome, before, load_average())
    return 1 if outcome.leaked or outcome.shown_leaked else 0


if __name__ == "__main__":
    sys.exit(main())
