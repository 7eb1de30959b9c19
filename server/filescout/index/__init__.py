"""The SQLite index of one workspace, one room per concern.

`Index` is a handle on the rooms; each writes only its own tables:

    database    connections, transactions, migrations (schema.py holds the history)
    catalogue   files: one row per file, the annotation it shows, listings
    annotations annotations by (content hash, annotator)
    search      files_fts (what describes a file) and the content index (contents, body_fts)
    topk        the content words and the descriptions again, in tantivy stores beside the file:
                the exact top k
    definitions what each content defines, described, and its full-text index
    graph       what each file imports, as keys its imports are found by
    access      frecency of use
    history     the repository's commits: messages and the files they touched
    usage       model calls and tokens per day
    directories what a directory walk listed in each directory, for the next walk
    directory_summaries  directory summaries a model wrote, by what each directory holds
    meta        small facts about the index itself

Nothing here knows the wire protocol: rooms take and return plain records (`filescout.core.records`).
"""

from __future__ import annotations

from pathlib import Path

from filescout.index.access import AccessLog
from filescout.index.annotations import Annotations
from filescout.index.catalogue import Catalogue, FileFilter
from filescout.index.database import Database, IndexUnusable
from filescout.index.definitions import DefinitionIndex
from filescout.index.directories import Directories
from filescout.index.directory_summaries import DirectorySummaries
from filescout.index.graph import ImportGraph
from filescout.index.history import History
from filescout.index.meta import Meta
from filescout.index.search import ContentIndex, DescriptionIndex
from filescout.index.usage import UsageLog

__all__ = ["FileFilter", "Index", "IndexUnusable"]


class Index:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.contents = ContentIndex(db)
        self.descriptions = DescriptionIndex(db)
        self.files = Catalogue(db, self.contents, self.descriptions)
        self.annotations = Annotations(db, self.contents, self.descriptions)
        self.definitions = DefinitionIndex(db)
        self.graph = ImportGraph(db)
        self.access = AccessLog(db)
        self.history = History(db)
        self.usage = UsageLog(db)
        self.directories = Directories(db)
        self.directory_summaries = DirectorySummaries(db)
        self.meta = Meta(db)

    @classmethod
    async def open(cls, path: Path) -> Index:
        """Open (creating if needed) for writing; IndexUnusable for a foreign or newer file."""
        return cls(await Database.open(path))

    @classmethod
    async def open_readonly(cls, path: Path) -> Index:
        """Open an index another process writes."""
        return cls(await Database.open_readonly(path))

    @classmethod
    async def open_unwritable(cls, path: Path) -> Index:
        """Open an index on storage this process cannot write."""
        return cls(await Database.open_unwritable(path))

    @property
    def path(self) -> Path:
        return self.db.path

    @property
    def writable(self) -> bool:
        return self.db.writable

    async def become_writer(self, writer: Index) -> None:
        """Serve from `writer`'s connections from now on (this process took the lock). The
        content store, if kept, is opened again for writing at its next use."""
        await self.db.adopt(writer.db)

    def keep_stores(self) -> None:
        """Search content words and descriptions in the top-k stores beside the index (topk.py)
        whenever they can answer: opened in the background, made and reconciled by the writing
        process, and fed every commit's changes after it. For a server, not for a one-off look
        at an index."""
        self.keep_content_store()
        self.keep_description_store()

    def keep_content_store(self) -> None:
        from filescout.index.topk import directory_for

        self.contents.keep_store(directory_for(self.path))

    def keep_description_store(self) -> None:
        from filescout.index.topk import DescriptionTopK, directory_for

        self.descriptions.keep_store(directory_for(self.path, DescriptionTopK))

    async def stores_settled(self) -> bool:
        """Wait until both stores have taken every change they were told of; whether both can
        answer. For benchmarks and tests."""
        contents = await self.contents.store_settled()
        return await self.descriptions.store_settled() and contents

    async def close(self) -> None:
        await self.contents.close_store()
        await self.descriptions.close_store()
        await self.db.close()

    def stop_threads(self) -> None:
        self.contents.stop_store_threads()
        self.descriptions.stop_store_threads()
        self.db.stop_threads()
