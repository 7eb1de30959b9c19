"""The repository's history, as far as relevance needs it: `commits` (one row per commit, newest
with the largest id), the workspace paths each touched (`history_paths`, `commit_files`, both
ways indexed: a commit's files for its vote, a file's commits for what changes with it), the
words of each message in a contentless full-text index (`commits_fts`, split into identifier
words like every other index here; no stemmer, so `commits_terms` counts each word's messages
exactly), and `history_state`: the tip the rows describe.

The tip is written last: a rebuild clears it first, so one interrupted leaves no tip and the next
update starts over; an extension interrupted between batches leaves rows above the tip's, which
tell the next update to start over too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import aiosqlite
import msgspec

from filescout.core.records import PastCommit
from filescout.core.words import body_words
from filescout.index.database import Database, json_list


@dataclass(frozen=True, slots=True)
class HistoryState:
    tip: str | None
    """The commit the rows end at; None while a rebuild is under way."""
    newest: int
    """The tip's row id."""
    highest: int
    """The highest row id present: above `newest` only after an interrupted extension."""
    commits: int
    built_ms: int


@dataclass(frozen=True, slots=True)
class CommitHit:
    """A past commit whose message matches a question: BM25 as a positive score."""

    id: int
    sha: str
    time: int
    changed: int
    subject: str
    score: float


def message_words(message: str) -> str:
    """A message's words as the content index splits a file's (each counted at most three
    times): identifier-aware, so `parseHeader` in a message is found by "parse header"."""
    return body_words(message)


class History:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def state(self) -> HistoryState | None:
        """None when no history was ever stored (or it was cleared)."""
        rows = list(
            await self._db.reader.execute_fetchall(
                "SELECT s.tip, s.newest, s.built_ms, (SELECT max(id) FROM commits), "
                "(SELECT count(*) FROM commits) FROM history_state AS s"
            )
        )
        if not rows:
            return None
        tip, newest, built_ms, highest, count = rows[0]
        return HistoryState(
            tip, int(newest), int(highest if highest is not None else newest), int(count), int(built_ms)
        )

    async def clear(self) -> None:
        """Forget the history: the workspace has none (any more)."""
        async with self._db.transaction() as db:
            await _erase(db)
            await db.execute("DELETE FROM history_state")

    async def start_rebuild(self) -> None:
        async with self._db.transaction() as db:
            await _erase(db)
            await _record_tip(db, None, 0, 0)

    async def add(self, commits: Sequence[PastCommit], first_id: int) -> None:
        """One transaction: `commits`, newest first, as ids `first_id`, `first_id - 1`, ..."""
        async with self._db.transaction() as db:
            await _insert(db, commits, first_id)

    async def complete(
        self,
        tip: str,
        tip_id: int,
        built_ms: int,
        *,
        commits: Sequence[PastCommit] = (),
        first_id: int = 0,
        renamed: Mapping[str, str] | None = None,
        below: int = 0,
    ) -> None:
        """One transaction: the last `commits` (ids down from `first_id`), the older rows'
        paths renamed (`renamed`, for ids below `below`), and the tip they all end at."""
        async with self._db.transaction() as db:
            if commits:
                await _insert(db, commits, first_id)
            if renamed:
                await _rename(db, renamed, below)
            await _record_tip(db, tip, tip_id, built_ms)

    # -- questions ----------------------------------------------------------------------------

    async def matching(self, match: str, *, limit: int, before: int | None = None) -> list[CommitHit]:
        """The commits whose messages match best (BM25), best first; with `before`, only
        commits older than that id (the history as it stood then)."""
        rows = await self._db.questions.fetchall(
            """
            SELECT c.id, hex(c.sha), c.time, c.changed, c.subject, hit.score FROM (
                SELECT rowid, bm25(commits_fts) AS score
                FROM commits_fts WHERE commits_fts MATCH ? AND rowid < ? ORDER BY score LIMIT ?
            ) AS hit JOIN commits AS c ON c.id = hit.rowid
            ORDER BY hit.score
            """,
            (match, _horizon(before), limit),
        )
        return [
            CommitHit(int(i), str(sha).lower(), int(t), int(changed), str(subject), -float(score))
            for i, sha, t, changed, subject, score in rows
        ]

    async def frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(commits, how many messages contain each term): to leave out terms too common to
        tell commits apart before they cost a scan of most of the history."""
        async with self._db.questions.connection() as reader:
            ((count,),) = await reader.execute_fetchall("SELECT count(*) FROM commits")
            rows = await reader.execute_fetchall(
                "SELECT term, doc FROM commits_terms WHERE term IN (SELECT value FROM json_each(?))",
                (json_list(terms),),
            )
        return int(count), {str(term): int(documents) for term, documents in rows}

    async def files_of(self, commit_ids: Iterable[int]) -> dict[int, list[tuple[str, str]]]:
        """The files each commit touched that the workspace has now, with their kinds."""
        rows = await self._db.questions.fetchall(
            """
            SELECT cf.commit_id, f.path, f.kind FROM commit_files AS cf
            JOIN history_paths AS p ON p.id = cf.path_id
            JOIN files AS f ON f.path = p.path
            WHERE cf.commit_id IN (SELECT value FROM json_each(?))
            """,
            (json_list(commit_ids),),
        )
        found: dict[int, list[tuple[str, str]]] = {}
        for commit_id, path, kind in rows:
            found.setdefault(int(commit_id), []).append((str(path), str(kind)))
        return found

    async def commits_touching(
        self, paths: Sequence[str], *, recent: int, before: int | None = None
    ) -> dict[str, list[int]]:
        """The newest `recent` commits that touched each of `paths`, newest first; with
        `before`, among the commits older than that id."""
        rows = await self._db.questions.fetchall(
            """
            SELECT path, commit_id FROM (
                SELECT p.path, cf.commit_id,
                    row_number() OVER (PARTITION BY p.id ORDER BY cf.commit_id DESC) AS n
                FROM history_paths AS p JOIN commit_files AS cf ON cf.path_id = p.id
                WHERE p.path IN (SELECT value FROM json_each(?)) AND cf.commit_id < ?
            ) WHERE n <= ? ORDER BY commit_id DESC
            """,
            (json_list(paths), _horizon(before), recent),
        )
        found: dict[str, list[int]] = {}
        for path, commit_id in rows:
            found.setdefault(str(path), []).append(int(commit_id))
        return found

    async def recent_examples(
        self, count: int, *, most_files: int, kinds: Sequence[str] = ("source",)
    ) -> list[PastExample]:
        """The newest `count` commits that touched between one and `most_files` files, some of
        them files of `kinds` the workspace has now, newest first, with those files: what the
        repository's own past says a question like each subject was about."""
        rows = await self._db.questions.fetchall(
            """
            SELECT c.id, lower(hex(c.sha)), c.subject, json_group_array(f.path) FROM (
                SELECT id, sha, subject, changed FROM commits ORDER BY id DESC LIMIT :window
            ) AS c
            JOIN commit_files AS cf ON cf.commit_id = c.id
            JOIN history_paths AS p ON p.id = cf.path_id
            JOIN files AS f ON f.path = p.path AND f.kind IN (SELECT value FROM json_each(:kinds))
            WHERE c.changed BETWEEN 1 AND :most
            GROUP BY c.id ORDER BY c.id DESC LIMIT :count
            """,
            {"most": most_files, "count": count, "kinds": json_list(kinds), "window": count * EXAMPLES_AMONG},
        )
        return [
            PastExample(int(commit_id), str(sha), str(subject), tuple(sorted(_decode_paths(paths))))
            for commit_id, sha, subject, paths in rows
        ]


EXAMPLES_AMONG = 20
"""Past examples are looked for among this many times as many of the newest commits."""


def _horizon(before: int | None) -> int:
    return before if before is not None else 1 << 62


@dataclass(frozen=True, slots=True)
class PastExample:
    """A past commit as a question with its answer: its subject, and the files it touched."""

    id: int
    sha: str
    subject: str
    paths: tuple[str, ...]


_decode_paths = msgspec.json.Decoder(list[str]).decode


async def _erase(db: aiosqlite.Connection) -> None:
    await db.execute("DELETE FROM commit_files")
    await db.execute("DELETE FROM commits")
    await db.execute("DELETE FROM history_paths")
    await db.execute("INSERT INTO commits_fts(commits_fts) VALUES ('delete-all')")


async def _record_tip(db: aiosqlite.Connection, tip: str | None, newest: int, built_ms: int) -> None:
    await db.execute(
        "INSERT INTO history_state(id, tip, newest, built_ms) VALUES (1, ?, ?, ?) ON CONFLICT(id) DO "
        "UPDATE SET tip = excluded.tip, newest = excluded.newest, built_ms = excluded.built_ms",
        (tip, newest, built_ms),
    )


async def _path_ids(db: aiosqlite.Connection, paths: Iterable[str]) -> dict[str, int]:
    wanted = json_list(dict.fromkeys(paths))
    await db.execute("INSERT OR IGNORE INTO history_paths(path) SELECT value FROM json_each(?)", (wanted,))
    rows = await db.execute_fetchall(
        "SELECT path, id FROM history_paths WHERE path IN (SELECT value FROM json_each(?))", (wanted,)
    )
    return {str(path): int(path_id) for path, path_id in rows}


async def _insert(db: aiosqlite.Connection, commits: Sequence[PastCommit], first_id: int) -> None:
    # Stored oldest first: rows go into each table in ascending order, which packs its pages.
    numbered = list(zip(range(first_id, first_id - len(commits), -1), commits, strict=True))[::-1]
    await db.executemany(
        "INSERT INTO commits(id, sha, time, changed, subject) VALUES (?, ?, ?, ?, ?)",
        [
            (commit_id, bytes.fromhex(commit.sha), commit.time, commit.changed, commit.subject)
            for commit_id, commit in numbered
        ],
    )
    path_ids = await _path_ids(db, (path for commit in commits for path in commit.paths))
    await db.executemany(
        "INSERT OR IGNORE INTO commit_files(commit_id, path_id) VALUES (?, ?)",
        [(commit_id, path_ids[path]) for commit_id, commit in numbered for path in commit.paths],
    )
    # A generator: the words are split on the connection's thread, not the event loop's.
    await db.executemany(
        "INSERT INTO commits_fts(rowid, message) VALUES (?, ?)",
        ((commit_id, message_words(commit.message)) for commit_id, commit in numbered),
    )


async def _rename(db: aiosqlite.Connection, renamed: Mapping[str, str], below: int) -> None:
    """Older rows (ids below `below`) name their files as the newest commits do."""
    path_ids = await _path_ids(db, [*renamed.keys(), *renamed.values()])
    for old, new in renamed.items():
        if old == new:
            continue
        parameters = (path_ids[new], path_ids[old], below)
        await db.execute(
            "UPDATE OR IGNORE commit_files SET path_id = ? WHERE path_id = ? AND commit_id < ?", parameters
        )
        # A commit that touched both names keeps one row, under the new name.
        await db.execute("DELETE FROM commit_files WHERE path_id = ? AND commit_id < ?", parameters[1:])
