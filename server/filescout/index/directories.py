"""The directory walk's memory (the `directories` table): each directory's stamp and what the
walk listed in it at the last complete pass, so that a walk of a tree whose directories did not
change reads their entries from here instead of listing them again. Only workspaces that are not
git work trees are walked; for the others the table stays empty."""

from __future__ import annotations

from collections.abc import Sequence

from filescout.core.records import DirectoryListing
from filescout.index.database import Database, json_list

SEPARATOR = "/"
"""Between the names of one directory's entries: no name contains it."""


def _joined(names: Sequence[str]) -> str:
    return SEPARATOR.join(names)


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split(SEPARATOR)) if text else ()


class Directories:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._may_hold_rows = True

    async def load(self) -> dict[str, DirectoryListing]:
        # On a question reader: the listing reader is loading the files' rows meanwhile, and a
        # walk waits for this, not for those.
        rows = await self._db.questions.fetchall(
            "SELECT path, mtime_ns, ctime_ns, inode, device, settled, ignore_digest, files, subdirs "
            "FROM directories"
        )
        return {
            str(path): DirectoryListing(
                path=str(path),
                mtime_ns=int(mtime_ns),
                ctime_ns=int(ctime_ns),
                inode=int(inode),
                device=int(device),
                settled=bool(settled),
                ignore_digest=str(digest),
                files=_names(str(files)),
                subdirs=_names(str(subdirs)),
            )
            for path, mtime_ns, ctime_ns, inode, device, settled, digest, files, subdirs in rows
        }

    async def keep(self, listed: Sequence[DirectoryListing], gone: Sequence[str], *, replace: bool) -> None:
        """After a complete walk: store the directories it listed and drop those it no longer
        found; with `replace`, drop every listing kept before (a walk that could not use them).
        Nothing read under the database's generation depends on this table, so the commit
        leaves it as it is."""
        if not (listed or gone or (replace and self._may_hold_rows)):
            return
        async with self._db.transaction(bump=False) as db:
            if replace:
                await db.execute("DELETE FROM directories")
            elif gone:
                await db.execute(
                    "DELETE FROM directories WHERE path IN (SELECT value FROM json_each(?))",
                    (json_list(gone),),
                )
            await db.executemany(
                """
                INSERT OR REPLACE INTO directories(
                    path, mtime_ns, ctime_ns, inode, device, settled, ignore_digest, files, subdirs)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    (
                        item.path,
                        item.mtime_ns,
                        item.ctime_ns,
                        item.inode,
                        item.device,
                        item.settled,
                        item.ignore_digest,
                        _joined(item.files),
                        _joined(item.subdirs),
                    )
                    for item in listed
                ],
            )
        self._may_hold_rows = bool(listed) or not replace

    async def forget(self) -> None:
        """The workspace was not walked (git listed it): listings kept from a walk are dropped,
        since no later walk could tell whether they still hold under the rules of then."""
        await self.keep((), (), replace=True)
