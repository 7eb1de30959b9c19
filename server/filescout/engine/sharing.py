"""The team's shared cache from this workspace's side, for `filescout cache`: upload what this
machine's model wrote (a CI job on the main branch can fill the cache for everyone), and say
what the cache holds for this workspace."""

from __future__ import annotations

from dataclasses import dataclass

from filescout.annotate.team_cache import SharedCache
from filescout.core.errors import WorkspaceUnavailable
from filescout.core.records import Annotation
from filescout.index import Index
from filescout_protocol.types import SharedCacheSettings, SharedCacheStatus


@dataclass(frozen=True)
class PushReport:
    annotations: int
    """Model annotations of this workspace's files in the local index."""
    status: SharedCacheStatus


@dataclass(frozen=True)
class CacheReport:
    status: SharedCacheStatus
    entries: int | None
    """Entries in the shared cache, all workspaces and annotators together."""
    covered: int
    """Of this workspace's model annotations, how many the cache has."""
    local: int


def _open(settings: SharedCacheSettings) -> SharedCache:
    if not settings.url:
        raise WorkspaceUnavailable(
            "no shared cache is configured: set sharedCache.url in the editor settings or "
            "FILESCOUT_SHARED_CACHE"
        )
    return SharedCache(settings)


async def push(index: Index, settings: SharedCacheSettings) -> PushReport:
    """Share every model annotation of this workspace's files (first writer wins)."""
    if settings.mode != "read_write":
        raise WorkspaceUnavailable(
            f"the shared cache is {settings.mode.replace('_', '-')} here; pushing needs mode read_write"
        )
    cache = _open(settings)
    total = 0
    try:
        async for batch in index.annotations.by_models():
            total += len(batch)
            by_annotator: dict[str, list[tuple[str, Annotation]]] = {}
            for digest, annotator, annotation in batch:
                by_annotator.setdefault(annotator, []).append((digest, annotation))
            for annotator, annotations in by_annotator.items():
                await cache.store(annotator, annotations)
            if cache.state != "ready":
                break
        return PushReport(annotations=total, status=cache_status(cache))
    finally:
        await cache.close()


async def report(index: Index, settings: SharedCacheSettings) -> CacheReport:
    """The cache's state and what it holds of this workspace's model annotations."""
    cache = _open(settings)
    local = covered = 0
    try:
        entries = await cache.entries()
        async for batch in index.annotations.by_models():
            local += len(batch)
            by_annotator: dict[str, list[str]] = {}
            for digest, annotator, _ in batch:
                by_annotator.setdefault(annotator, []).append(digest)
            for annotator, hashes in by_annotator.items():
                covered += len(await cache.lookup(annotator, hashes))
        return CacheReport(status=cache_status(cache), entries=entries, covered=covered, local=local)
    finally:
        await cache.close()


def cache_status(cache: SharedCache) -> SharedCacheStatus:
    """The team cache as a client sees it."""
    return SharedCacheStatus(
        state=cache.state,
        mode=cache.settings.mode,
        location=cache.location,
        hits=cache.hits,
        misses=cache.misses,
        stored=cache.stored,
        rejected=cache.rejected,
        tokens_saved=cache.tokens_saved,
        last_error=cache.last_error or cache.write_refused,
    )
