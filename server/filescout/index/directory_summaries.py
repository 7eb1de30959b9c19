"""Directory summaries a model wrote, by (key, annotator): the `directory_summaries` table.

A directory's key is a hash of what it holds: the sorted list of its children's names, each with
the file's content hash or the subdirectory's own key. It does not include the directory's own
name, so a directory renamed unchanged keeps its summary; anything changed below it changes its
key and every ancestor's, and only those are written again. Rows of keys no longer in the
workspace stay (a branch checked out again finds its summaries); they are small.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from filescout.index.database import Database, json_list

_decode_list = msgspec.json.Decoder(list[str]).decode
KEY_PREFIX = b"filescout-directory-1\n"
"""Changes when what a key covers changes: old keys then simply go unused."""


@dataclass(frozen=True, slots=True)
class DirectorySummary:
    summary: str
    tags: tuple[str, ...]
    input_tokens: int = 0
    output_tokens: int = 0


def directory_keys(files: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Every directory's key (the workspace's root is ""), from (path, content hash) pairs."""
    entries: dict[str, list[tuple[str, str, str]]] = {"": []}
    for path, digest in files:
        parent, _, name = path.rpartition("/")
        above = parent
        while above not in entries:  # every ancestor listed, so each directory reaches its parent
            entries[above] = []
            above = above.rpartition("/")[0]
        entries[parent].append(("f", name, digest))
    keys: dict[str, str] = {}
    # Deepest first: a directory's key is known before its parent's is made.
    for directory in sorted(entries, key=lambda path: (-(path.count("/") + bool(path)), path)):
        listed = sorted(entries[directory])
        hasher = hashlib.blake2b(KEY_PREFIX, digest_size=16)
        for kind, name, value in listed:
            hasher.update(f"{kind}\0{name}\0{value}\n".encode("utf-8", "surrogatepass"))
        keys[directory] = hasher.hexdigest()
        if directory:
            parent, _, name = directory.rpartition("/")
            entries[parent].append(("d", name, keys[directory]))
    return keys


class DirectorySummaries:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def of(self, annotator: str, keys: Iterable[str]) -> dict[str, DirectorySummary]:
        """The summaries stored for these keys."""
        rows = await self._db.reader.execute_fetchall(
            "SELECT key, summary, tags, input_tokens, output_tokens FROM directory_summaries "
            "WHERE annotator = ? AND key IN (SELECT value FROM json_each(?))",
            (annotator, json_list(dict.fromkeys(keys))),
        )
        return {
            str(key): DirectorySummary(
                str(summary), tuple(_decode_list(tags)), int(tokens_in), int(tokens_out)
            )
            for key, summary, tags, tokens_in, tokens_out in rows
        }

    async def save(self, annotator: str, summaries: Sequence[tuple[str, DirectorySummary]]) -> None:
        if not summaries:
            return
        now = int(time.time())
        async with self._db.transaction() as db:
            await db.executemany(
                """
                INSERT INTO directory_summaries(key, annotator, summary, tags, input_tokens,
                                                output_tokens, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(key, annotator) DO UPDATE SET
                    summary = excluded.summary, tags = excluded.tags,
                    input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
                    created_at = excluded.created_at
                """,
                [
                    (
                        key,
                        annotator,
                        item.summary,
                        json_list(item.tags),
                        item.input_tokens,
                        item.output_tokens,
                        now,
                    )
                    for key, item in summaries
                ],
            )
