"""Fusion weights fitted on the workspace's own history: learnt where the repository's past says
the defaults rank wrong, kept only when they rank its newest commits better, deterministic, and
shown in the status. Real git repositories, a real index, the real engine."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from filescout.engine import Workspace
from filescout.relevance import fit
from filescout.relevance.filters import PathFilter
from filescout.relevance.past_commits import gather_votes
from filescout.relevance.prefilter import prefilter
from filescout.relevance.query import analyse
from filescout.relevance.signals import ENVIRONMENT_WITH
from filescout.relevance.weights import DEFAULT, OFF, RankingFit, Weights, stored_fit

COMMITTED = 1_700_000_000
UNASKED = 3


def made_up_words(count: int, seed: int = 5) -> list[str]:
    """Distinct pronounceable words no dictionary, stemmer or stop list knows."""
    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        word = "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(3))
        if word not in found:
            found.append(word)
    return found


def fast_import(root: Path, commits: list[tuple[str, dict[str, str]]]) -> None:
    """A repository whose history is `commits` (subject, files written), oldest first."""
    root.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    stream: list[bytes] = []
    for number, (subject, files) in enumerate(commits):
        message = subject.encode()
        stream.append(b"commit refs/heads/main\n")
        stream.append(f"committer filescout <t@example.invalid> {COMMITTED + 60 * number} +0000\n".encode())
        stream.append(b"data %d\n%s\n" % (len(message), message))
        for path, text in files.items():
            data = text.encode()
            stream.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
    subprocess.run(
        ["git", "-C", str(root), "fast-import", "--quiet"], input=b"".join(stream), check=True, env=env
    )
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "-f", "main"], check=True, env=env)


def source(word: str, other: str, edition: int) -> str:
    body = "\n".join(f"def step_{n}(value):\n    return value + {n}\n" for n in range(40))
    return f'"""Step functions."""\n\n{body}\n\ndef {word}(value):\n    return value\nEDITION = {edition}\n'


def checks(word: str, other: str) -> str:
    return (
        f'"""Checks of {word} {other}: {word} {other} {word} {other}."""\n\n'
        f"def test_{word}_{other}():\n    assert {word}_{other}({word}, {other})\n"
    )


def history_of_tested_code(root: Path, topics: int) -> list[tuple[str, str]]:
    """A repository whose past says its changes are made in its source, however loudly the
    tests name them: every commit after the first changes one topic's source file (a pair of
    words no other commit uses), whose test file says those words far more. Returns UNASKED
    more topics no commit changed."""
    words = made_up_words(2 * (topics + UNASKED))
    pairs = list(zip(words[::2], words[1::2], strict=True))
    files = {f"src/{a}.py": source(a, b, 0) for a, b in pairs} | {
        f"tests/test_{a}.py": checks(a, b) for a, b in pairs
    }
    commits = [("Initial import", files)]
    commits += [(f"Handle {a} {b} input", {f"src/{a}.py": source(a, b, 1)}) for a, b in pairs[:topics]]
    fast_import(root, commits)
    return pairs[topics:]


@pytest.fixture(autouse=True)
def fitting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fitting is an unproven signal, asked for by the ranking process's environment."""
    monkeypatch.setenv(ENVIRONMENT_WITH, "fit")


async def open_indexed(root: Path, tmp_path: Path) -> Workspace:
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")})
    engine.start_indexing("index")
    await engine.wait_idle()
    return engine


async def first_answer(engine: Workspace, question: str, weights: Weights | None) -> str:
    found = await prefilter(
        engine._index, analyse(question), limit=5, scope=PathFilter(), current="", weights=weights
    )
    return found[0].item.path


async def test_weights_learnt_from_the_history_rank_its_kind_of_answer_first(tmp_path: Path) -> None:
    unasked = history_of_tested_code(tmp_path / "ws", 160)
    engine = await open_indexed(tmp_path / "ws", tmp_path)
    try:
        found = await stored_fit(engine._index)
        assert found is not None and found.kept, found
        assert found.trained == fit.EXAMPLES - fit.VALIDATED and found.validated == fit.VALIDATED
        assert found.weights.test < DEFAULT.test
        assert found.fitted_mrr >= found.default_mrr + fit.MARGIN
        status = await engine.status()
        assert status.ranking is not None and status.ranking.startswith("fitted on 100 past commits")
        # A question like the past ones, on a topic no commit changed: the defaults put the test
        # that names it loudest first, the fitted weights the source, as the history does.
        a, b = unasked[0]
        question = f"Handle {a} {b} input"
        assert await first_answer(engine, question, DEFAULT) == f"tests/test_{a}.py"
        assert await first_answer(engine, question, None) == f"src/{a}.py"
    finally:
        await engine.close()


async def test_the_fit_is_deterministic_and_asks_each_commit_against_its_own_past(tmp_path: Path) -> None:
    history_of_tested_code(tmp_path / "ws", 160)
    engine = await open_indexed(tmp_path / "ws", tmp_path)
    try:
        index = engine._index
        state = await index.history.state()
        assert state is not None
        first, second = (
            await fit.fit_ranking(index, state.commits),
            await fit.fit_ranking(index, state.commits),
        )
        assert (first.weights, first.fitted_mrr, first.default_mrr) == (
            second.weights,
            second.fitted_mrr,
            second.default_mrr,
        )
        newest = (await index.history.recent_examples(1, most_files=fit.MOST_FILES))[0]
        query = analyse(newest.subject)
        now = await gather_votes(index, query, PathFilter())
        then = await gather_votes(index, query, PathFilter(), before=newest.id)
        assert set(newest.paths) <= set(now.raw)  # its own commit votes for its files...
        assert not set(newest.paths) & set(then.raw)  # ...but not when it is asked as a question
    finally:
        await engine.close()


async def test_a_short_history_keeps_the_defaults_and_says_why(tmp_path: Path) -> None:
    unasked = history_of_tested_code(tmp_path / "ws", 20)
    engine = await open_indexed(tmp_path / "ws", tmp_path)
    try:
        found = await stored_fit(engine._index)
        assert found is not None and not found.kept
        assert found.reason == f"20 past commits to learn from, fewer than {fit.MIN_EXAMPLES}"
        status = await engine.status()
        assert status.ranking == f"default weights ({found.reason})"
        a, b = unasked[0]
        assert await first_answer(engine, f"Handle {a} {b} input", None) == f"tests/test_{a}.py"
    finally:
        await engine.close()


async def test_without_asking_nothing_is_fitted_and_the_defaults_rank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENVIRONMENT_WITH)
    unasked = history_of_tested_code(tmp_path / "ws", 160)
    engine = await open_indexed(tmp_path / "ws", tmp_path)
    try:
        assert await stored_fit(engine._index) is None
        assert (await engine.status()).ranking == OFF
        a, b = unasked[0]
        assert await first_answer(engine, f"Handle {a} {b} input", None) == f"tests/test_{a}.py"
    finally:
        await engine.close()


@pytest.mark.parametrize(
    ("fitted_at", "now", "again"),
    [(1000, 1000, False), (1000, 1249, False), (1000, 1250, True), (100, 150, False), (100, 200, True)],
)
def test_the_fit_is_redone_when_the_history_has_grown_by_a_margin(
    fitted_at: int, now: int, again: bool
) -> None:
    stored = RankingFit(DEFAULT, False, "", fitted_at, 0, 0, 0.0, 0.0, 0.0)
    assert fit.needs_fit(stored, now) is again
    assert fit.needs_fit(None, now)


async def test_a_past_commit_is_judged_on_its_files_as_they_were_before_it(tmp_path: Path) -> None:
    """Today's file holds the name its commit added, so today's text finds it first; before the
    commit it did not, and the fit judges the commit on that. A file the commit added could not
    have been found at all: it leaves the answer."""
    from filescout.engine.past_files import PastFiles
    from filescout.relevance import fusion
    from filescout.relevance.past_versions import as_before

    frob = made_up_words(1, seed=11)[0]
    shop = "def total(order):\n    return sum(order)\n"
    fast_import(
        tmp_path / "ws",
        [
            ("Initial import", {"src/shop.py": shop, "src/later.py": f"# {frob} some day\nPENDING = 1\n"}),
            (
                f"Add {frob} support",
                {"src/shop.py": shop + f"\n\ndef {frob}(order):\n    return order\n"},
            ),
            ("Write the ledger", {"src/ledger.py": "def post(entry):\n    return entry\n"}),
        ],
    )
    engine = await open_indexed(tmp_path / "ws", tmp_path)
    try:
        index = engine._index
        past = {item.subject: item for item in await index.history.recent_examples(10, most_files=8)}
        asked = [
            await fit.ask(index, past[subject]) for subject in (f"Add {frob} support", "Write the ledger")
        ]
        examples = [example for example in asked if example is not None]
        assert len(examples) == 2
        today = [path for _, path in fusion.first(examples[0].evidence, DEFAULT, 0.0)]
        answers = await as_before(
            index,
            [(example.commit, example.evidence, example.answer) for example in examples],
            PastFiles(tmp_path / "ws").before_and_now,
        )
    finally:
        await engine.close()
    assert today[0] == "src/shop.py"
    assert answers == [frozenset({"src/shop.py"}), frozenset()]  # the ledger was new
    before = [path for _, path in fusion.first(examples[0].evidence, DEFAULT, 0.0)]
    assert before[0] == "src/later.py" and "src/shop.py" not in before[:1]
