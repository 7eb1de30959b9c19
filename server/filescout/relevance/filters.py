"""Request filters (globs, path prefixes) and paging cursors, validated up front."""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Union

import msgspec

from filescout.core.errors import InvalidParams
from filescout.core.paths import normalise_glob, to_relative

# The glob matcher (RE2, pathspec) is imported where a filter has globs: most questions and
# listings have none, and a one-shot command answered from another process's index would pay
# for it.
if TYPE_CHECKING:
    from filescout.scan.globs import Globs


class PageCursor(msgspec.Struct, forbid_unknown_fields=True, array_like=True):
    order: str
    position: list[Union[str, int]]


def encode_cursor(order: str, position: tuple) -> str:
    raw = msgspec.json.encode(PageCursor(order, list(position)))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


SqlInteger = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Offset = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
POSITIONS: dict[str, Any] = {
    "path": tuple[str],
    "recent": tuple[SqlInteger, str],
    "frecency": tuple[Offset],
    "rank": tuple[Offset],
}
"""What a position holds in each order (the catalogue's keyset or offset): a cursor is the
client's to keep, so one that was tampered with must fail here, not in SQLite."""
NOT_OURS = "cursor: not a cursor this server issued; pass `nextCursor` from the previous page"


def decode_cursor(cursor: str, order: str) -> tuple:
    """The position a cursor resumes from; it must come from a page of the same order."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        decoded = msgspec.json.decode(raw, type=PageCursor)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise InvalidParams(NOT_OURS) from None
    if decoded.order != order:
        raise InvalidParams(
            f"cursor: it continues a listing ordered by {decoded.order!r}, "
            f"not {order!r}; pass the same orderBy"
        )
    try:
        return tuple(msgspec.convert(decoded.position, POSITIONS.get(order, tuple)))
    except msgspec.ValidationError:
        raise InvalidParams(NOT_OURS) from None


@dataclass(frozen=True)
class PathFilter:
    """Globs and path prefixes, both relative to the workspace root."""

    prefixes: tuple[str, ...] = ()
    globs: Globs | None = None

    @classmethod
    def build(
        cls, root: Path, globs: Sequence[str], paths: Sequence[str], *, field_prefix: str = ""
    ) -> PathFilter:
        prefixes = tuple(
            to_relative(root, value, field=f"{field_prefix}paths[{index}]")
            for index, value in enumerate(paths)
        )
        if "" in prefixes:
            prefixes = ()
        patterns = [
            normalise_glob(root, glob, field=f"{field_prefix}globs[{index}]")
            for index, glob in enumerate(globs)
        ]
        matcher = None
        if patterns:
            from filescout.scan.globs import Globs, InvalidPattern

            everything = all(pattern.startswith("!") for pattern in patterns)
            try:
                matcher = Globs(["*", *patterns] if everything else patterns)
            except InvalidPattern as exc:
                index = exc.position - everything
                raise InvalidParams(
                    f"{field_prefix}globs[{index}]: {globs[index]!r} is not a valid pattern ({exc})"
                ) from None
        return cls(prefixes=prefixes, globs=matcher)

    @classmethod
    async def built(
        cls, root: Path, globs: Sequence[str], paths: Sequence[str], *, field_prefix: str = ""
    ) -> PathFilter:
        """`build`, in a thread when there are globs to compile (a hundred long ones take a
        tenth of a second)."""
        build = functools.partial(cls.build, root, globs, paths, field_prefix=field_prefix)
        return await asyncio.to_thread(build) if globs else build()

    @property
    def is_empty(self) -> bool:
        return not self.prefixes and self.globs is None

    async def kept(self, paths: Iterable[str]) -> set[str]:
        """The paths it matches; globs are matched in a thread (RE2 lets go of the GIL while it
        matches, so the event loop goes on)."""
        paths = list(paths)
        if self.is_empty:
            return set(paths)
        if self.globs is None:
            return {path for path in paths if self.matches(path)}
        return await asyncio.to_thread(lambda: {path for path in paths if self.matches(path)})

    def matches(self, path: str) -> bool:
        if self.prefixes and not any(
            path == prefix or path.startswith(prefix + "/") for prefix in self.prefixes
        ):
            return False
        return self.globs is None or self.globs.match(path)
