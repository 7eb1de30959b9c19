"""The planted-secret corpus (bench/harness/secrets_corpus.py: every kind of secret in a file written the
way real repositories hold it) through the whole pipeline: no fragment of any secret reaches any
request the model server receives, nor any answer the client receives (though the model writes
secrets back), while the files are still sent, annotated and judged, and ordinary code and prose
arrive intact."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import secrets_corpus
from harness.fake_openai import FakeOpenAI


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


async def test_no_planted_secret_reaches_the_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    assert len(secrets_corpus.CORPUS) >= 40
    outcome = await secrets_corpus.run(tmp_path, fake)

    assert outcome.leaked == [], outcome.leaked
    # what the client received: summaries (the model's too, which quote secrets), tags, reasons
    # and the prompt-ready blocks of findRelevant and getFiles
    assert outcome.shown_leaked == [], outcome.shown_leaked

    every = set(secrets_corpus.files())
    sensitive = secrets_corpus.sensitive_files()
    readable = every - sensitive
    assert outcome.skipped == sensitive  # never read, so never sent
    assert outcome.sent_for_annotation == readable, readable - outcome.sent_for_annotation
    # whole, so what kept each secret out was redaction; one long line is cut inside its key
    assert outcome.excerpted == {"src/shop/feature_flags.py"}, outcome.excerpted
    assert outcome.model_annotated | outcome.structural == readable
    assert len(outcome.structural) < len(readable) // 3  # only the answers held back on purpose
    assert outcome.judged == readable, readable - outcome.judged
    assert {"annotate", "tags", "judge", "final"} <= set(outcome.requests), outcome.requests
    assert len(outcome.found) >= len(secrets_corpus.QUESTIONS) and outcome.found <= every
    assert outcome.lost == [], outcome.lost  # ordinary identifiers, prose and hashes survive
