"""The model worker: after the structural pass, a model rewrites summaries and tags, in the same
priority order, on its own queue, within the budget, and steps aside while the endpoint fails.
Images go to it as pictures when it can see (`model.images`), prepared here in a thread
(annotate/images.py); otherwise, or when one cannot be prepared, they keep their structural
annotation without a call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from filescout.annotate.directories import DirectorySummarizer
from filescout.annotate.images import (
    RASTER_FORMATS,
    ImageRefused,
    Picture,
    downscale,
    looks_secret,
    pillow_missing,
)
from filescout.annotate.llm import MAX_FILES_PER_REQUEST, ModelAnnotator, ModelInput
from filescout.annotate.structural import StructuralAnnotator
from filescout.annotate.team_cache import SharedCache, driver_missing
from filescout.core.beneath import RootDir, read_regular
from filescout.core.records import Annotation, PendingFile
from filescout.engine.hooks import Hooks
from filescout.engine.progress import ProgressReporter
from filescout.engine.queue import NEIGHBOUR, AnnotationQueue
from filescout.engine.structural_worker import Rescan, read_current
from filescout.index import Index
from filescout.llm.client import Budget, BudgetSpent, ModelClient, ModelError, ModelRefused, ModelUnavailable
from filescout.scan.tree import content_hash
from filescout_protocol.types import Settings

if TYPE_CHECKING:
    from filescout.engine.directory_writer import DirectoryCounts

log = logging.getLogger(__name__)

STOPPING_ERRORS = (ModelUnavailable, BudgetSpent, ModelRefused)
"""Errors that are not the batch's fault: the files go back to the queue."""


class ModelWorker:
    def __init__(
        self,
        root: Path,
        index: Index,
        structural: StructuralAnnotator,
        hooks: Hooks,
        rescan: Rescan,
        storage_fault: Callable[[BaseException], str | None] = lambda exc: None,
    ) -> None:
        self.annotator: ModelAnnotator | None = None
        self.queue = AnnotationQueue()
        self.task: asyncio.Task[None] | None = None
        self.message: str | None = None
        self.stopped: ModelError | None = None
        """Why model work stopped (budget, refusal) until something changes."""
        self.gave_up: set[str] = set()
        """Content hashes the model answered without a usable annotation; not asked again."""
        self.in_flight = 0
        """Files taken from the queue whose annotation has not landed or gone back yet."""
        self._configuring = asyncio.Lock()
        self.shared: SharedCache | None = None
        """The team's cache of model annotations, looked up before the model is asked."""
        self._skipped: str | None = None
        """Why files of this drain were skipped, if any were."""
        self.directory_summarizer: DirectorySummarizer | None = None
        """Writes directory summaries once file annotation is idle (engine/directory_writer.py)."""
        self.directory_task: asyncio.Task[None] | None = None
        self.directories_stale = True
        """Something changed since the last directory pass found nothing to write."""
        self.directory_counts: DirectoryCounts | None = None
        """The overview's directories with and without a summary, as of the last pass."""
        self.directories_gave_up: set[str] = set()
        """Directory keys the model answered without a usable summary; not asked again."""
        self._root = root
        self._index = index
        self._structural = structural
        self._hooks = hooks
        self._rescan = rescan
        self._storage_fault = storage_fault
        """Says (once) when the disk under the index is full; None for other errors."""

    @property
    def active(self) -> bool:
        return self.task is not None and not self.task.done()

    @property
    def directory_id(self) -> str | None:
        """Whose directory summaries the overview shows: the model's, when one is on."""
        return self.directory_summarizer.id if self.directory_summarizer is not None else None

    async def configure(self, settings: Settings, warnings: list[str]) -> None:
        """Set up (or take down) model annotation from the settings; a writer's job. One
        configuration at a time: settings may change twice in quick succession."""
        async with self._configuring:
            await self._configure(settings, warnings)

    async def _configure(self, settings: Settings, warnings: list[str]) -> None:
        await self.retire()
        model = settings.model
        if model.model and not settings.privacy_mode and self._index.writable:
            month_start = Budget.today()[:8] + "01"
            budget = Budget(
                settings.budget, await self._index.usage.since(month_start), sink=self._record_usage
            )
            try:
                client = ModelClient(model, budget, one_shot=not self._hooks.persistent)
                self.annotator = ModelAnnotator(client)
            except Exception as exc:  # e.g. a base URL the HTTP client rejects
                log.error("model annotation is off: cannot use %s: %s", model.base_url or "the endpoint", exc)
                warnings.append(f"model annotation is off: {exc}")
            else:
                log.info("model annotation on: %s", self.annotator.id)
                if model.images and (missing := pillow_missing()) is not None:
                    self.annotator.blind = f"{missing}: images keep their structural annotation"
                    log.warning("%s", self.annotator.blind)
                    warnings.append(self.annotator.blind)
                if model.directory_summaries:
                    self.directory_summarizer = DirectorySummarizer(self.annotator.client)
        shared = settings.shared_cache
        if self.annotator is not None and shared.url and shared.mode != "off":
            if (missing := driver_missing()) is not None:
                log.warning("%s", missing)
                warnings.append(missing)
            else:
                self.shared = SharedCache(shared)
                log.info("shared annotation cache: %s (%s)", self.shared.location, shared.mode)
        self.queue = AnnotationQueue()
        self.gave_up.clear()
        self.directories_gave_up.clear()
        self.directories_stale, self.directory_counts = True, None

    async def retire(self) -> None:
        """Stop work on the current model and close its client."""
        retiring, self.annotator = self.annotator, None  # nothing may start on it meanwhile
        self.directory_summarizer = None
        for task in (self.task, self.directory_task):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if retiring is not None:
            await retiring.client.close()
        shared, self.shared = self.shared, None
        if shared is not None:
            await shared.close()
        self.message = None
        self.stopped = None

    async def _record_usage(
        self, day: str, calls: int, failures: int, input_tokens: int, output_tokens: int
    ) -> None:
        if self.annotator is not None:
            await self._index.usage.record(
                self.annotator.id,
                day,
                calls=calls,
                failures=failures,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
            )

    async def backlog(self) -> list[str]:
        if self.annotator is None:
            return []
        return await self._index.annotations.backlog(self.annotator.id, machine=False)

    def ensure_draining(self) -> None:
        if self.annotator is not None and len(self.queue) and not self.active:
            self.task = asyncio.create_task(self._drain(self.annotator), name="filescout-model")
        elif not self.active:
            self._write_directories()

    @property
    def writing_directories(self) -> bool:
        return self.directory_task is not None and not self.directory_task.done()

    def _write_directories(self) -> None:
        """Start a directory pass when file annotation is idle and something may be missing."""
        summarizer = self.directory_summarizer
        if (
            summarizer is None
            or not self.directories_stale
            or len(self.queue)
            or self.stopped is not None
            or self.writing_directories
        ):
            return
        self.directory_task = asyncio.create_task(
            self._directory_pass(summarizer), name="filescout-model-directories"
        )

    async def _directory_pass(self, summarizer: DirectorySummarizer) -> None:
        """Directory summaries until none is missing, files wait for the model again, or the
        model stops (engine/directory_writer.py); a failure leaves the rolled-up lines."""
        from filescout.engine.directory_writer import DirectoryCounts, write_directory_summaries

        self.directories_stale = False
        try:
            while self.directory_summarizer is summarizer:
                if self.directory_counts is None:
                    self.directory_counts = DirectoryCounts()
                result = await write_directory_summaries(
                    self._index,
                    summarizer,
                    self.shared,
                    self.directory_counts,
                    busy=lambda: bool(len(self.queue)) or self.active,
                    gave_up=self.directories_gave_up,
                )
                if result.error is not None:
                    self.directories_stale = True
                    self.message = str(result.error)
                    if isinstance(result.error, (BudgetSpent, ModelRefused)):
                        log.warning("directory summaries stopped: %s", result.error)
                        self.stopped = result.error
                    return
                if not result.more:
                    return
                if len(self.queue) or self.active:  # files first; a later pass goes on
                    self.directories_stale = True
                    return
        except Exception as exc:  # a defect or a failing index: the rolled-up lines stay
            self.directories_stale = True
            full = self._storage_fault(exc)
            if full is None:
                log.exception("directory summaries failed")

    async def _drain(self, model: ModelAnnotator) -> None:
        """Annotate queued files until the queue is empty or the model cannot go on (budget
        spent, endpoint refusing, or failing: then it waits and tries again)."""
        reporter: ProgressReporter | None = None
        done = 0
        self._skipped = None
        batch_size = MAX_FILES_PER_REQUEST * model.client.settings.concurrency
        try:
            while await self._may_go_on(model):
                if reporter is not None and reporter.is_cancelled():  # the backlog, not the touched
                    self.queue.clear_background()
                batch = self.queue.pop(batch_size)
                if not batch:
                    self.message = self._skipped  # None when every request was answered
                    return
                self.in_flight = len(batch)
                self.stopped = None
                pending = []
                for item in await self._index.annotations.pending(model.id, batch):
                    if item.hash in self.gave_up:
                        continue
                    if not self._may_see(model, item):
                        self.gave_up.add(item.hash)  # nothing to wait for: not counted as work left
                        continue
                    pending.append(item)
                if not pending:
                    continue
                if reporter is None:
                    reporter = await self._hooks.progress("model")
                    reporter.begin(
                        f"filescout: summarizing with {model.client.settings.model}",
                        f"{len(self.queue) + len(pending)} files",
                    )
                saved, stop = await self._annotate(model, pending)
                done += saved
                if saved:
                    self.directories_stale = True
                if stop:
                    return
                self.in_flight = 0
                total = done + len(self.queue)
                reporter.report(f"{done}/{total} files", 100 * done // max(total, 1))
        except Exception as exc:  # a defect, not the endpoint (those come back as ModelError)
            full = self._storage_fault(exc)
            if full is None:
                log.exception("model annotation failed")
            self.message = full or f"model annotation failed: {type(exc).__name__}: {exc}"
        finally:
            self.in_flight = 0
            if reporter is not None:
                reporter.end(f"{done} files summarized" + (f"; {self.message}" if self.message else ""))
            if self.annotator is model and not len(self.queue):  # file annotation is idle
                self._write_directories()

    async def _may_go_on(self, model: ModelAnnotator) -> bool:
        """False when the endpoint cannot be used now; a server waits out an open circuit."""
        while (reason := model.client.unavailable_reason()) is not None:
            self.message = reason
            if not (model.client.breaker.is_open and self._hooks.persistent):
                # A one-shot command's progress line says it; a server's log is where it shows.
                log.log(
                    logging.WARNING if self._hooks.persistent else logging.INFO,
                    "model annotation paused: %s",
                    reason,
                )
                return False
            await asyncio.sleep(model.client.breaker.seconds_left() + 0.05)
        return True

    async def _annotate(self, model: ModelAnnotator, pending: Sequence[PendingFile]) -> tuple[int, bool]:
        """One batch: (annotations saved, whether model work must stop). What the team's
        cache has costs no model call; what the model writes is shared."""
        from_cache = await self._from_shared_cache(model, pending)
        pending = [item for item in pending if item.hash not in from_cache]
        if not pending:
            return len(from_cache), False
        inputs = await self._with_pictures(model, await self._inputs(pending))
        annotations, error = await model.annotate(inputs)
        saved = [
            (item.hash, annotation)
            for item, annotation in zip(inputs, annotations, strict=True)
            if annotation is not None
        ]
        await self._index.annotations.save(model.id, saved, replace=True)  # paid for: kept first
        if self.shared is not None:
            await self.shared.store(model.id, saved)
        unanswered = [
            item for item, annotation in zip(inputs, annotations, strict=True) if annotation is None
        ]
        if not isinstance(error, STOPPING_ERRORS):
            # Answered, or this request itself was rejected (asking again would be rejected
            # again): these files keep their structural annotation.
            self.gave_up.update(item.hash for item in unanswered)
            if error is not None:
                log.warning("model annotation skipped %d files: %s", len(unanswered), error)
                self.message = self._skipped = f"some files were skipped: {error}"
            return len(saved) + len(from_cache), False
        # Not this batch's fault: put back what is left and pause.
        self.queue.extend([item.path for item in unanswered], NEIGHBOUR)
        self.message = str(error)
        if isinstance(error, (BudgetSpent, ModelRefused)):
            log.warning("model annotation stopped: %s", error)
            self.stopped = error
            return len(saved) + len(from_cache), True
        return len(saved) + len(from_cache), False

    @staticmethod
    def _may_see(model: ModelAnnotator, item: PendingFile) -> bool:
        """Whether the model is to be asked about a file at all, from what is known before it is
        read: an image only when the model can see and its path does not look secret. The others
        keep their structural annotation, without a call."""
        return item.kind != "image" or (model.sees and not looks_secret(item.path, None))

    async def _with_pictures(self, model: ModelAnnotator, inputs: list[ModelInput]) -> list[ModelInput]:
        """The inputs with each image's picture prepared (read again and decoded in a thread,
        one at a time: a large decode holds its memory briefly, and only one at once). An image
        whose facts look secret, or that cannot be prepared, keeps its structural annotation."""
        wanted = [
            item
            for item in inputs
            if item.kind == "image"
            and item.language in RASTER_FORMATS
            and model.sees
            and not looks_secret(item.path, item.facts)
        ]
        if not wanted:
            return inputs
        pictures, changed = await asyncio.to_thread(_prepare_pictures, self._root, wanted)
        if changed:
            self._rescan(changed)
        self.gave_up.update(
            item.hash for item in wanted if item.hash not in pictures and item.path not in changed
        )
        unready = {item.hash for item in wanted} - pictures.keys()
        return [
            replace(item, picture=pictures[item.hash]) if item.hash in pictures else item
            for item in inputs
            if item.hash not in unready
        ]

    async def _from_shared_cache(self, model: ModelAnnotator, pending: Sequence[PendingFile]) -> set[str]:
        """Store what the team's cache has for these contents; their hashes. The summary and
        tags are the team's; symbols and imports come from this machine's own outline of the
        same content, so nobody else's list can steer the ranking."""
        if self.shared is None:
            return set()
        found = await self.shared.lookup(model.id, [item.hash for item in pending])
        if not found:
            return set()
        outlined = await self._inputs([item for item in pending if item.hash in found])
        kept = [
            (item.hash, replace(found[item.hash], symbols=item.outline.symbols, imports=item.outline.imports))
            for item in outlined
        ]
        await self._index.annotations.save(model.id, kept, replace=True)
        return set(found)

    async def _inputs(self, pending: Sequence[PendingFile]) -> list[ModelInput]:
        """What the model starts from: each file's text and its structural outline (made now
        if the model got to the file first)."""
        readable = await read_current(self._root, pending, self._rescan)
        outlines: dict[str, Annotation] = await self._index.annotations.of(
            self._structural.id, [item.hash for item in readable]
        )
        missing = [item for item in readable if item.hash not in outlines]
        if missing:
            computed = [
                (item.hash, annotation)
                for item, annotation in zip(missing, await self._structural.annotate(missing), strict=True)
                if annotation is not None
            ]
            await self._index.annotations.save(self._structural.id, computed, replace=False)
            outlines.update(computed)
        return [
            ModelInput(
                path=item.path,
                hash=item.hash,
                language=item.language,
                kind=item.kind,
                text=item.text,
                outline=outlines[item.hash],
                facts=item.facts,
            )
            for item in readable
            if item.hash in outlines
        ]

    async def close(self) -> None:
        await self.retire()


def _prepare_pictures(root: Path, items: Sequence[ModelInput]) -> tuple[dict[str, Picture], list[str]]:
    """Each image's picture by content hash, for those still holding the content the index
    knows and decoding within the bounds (annotate/images.py); and the paths whose content
    changed since (or that vanished), for a rescan."""
    pictures: dict[str, Picture] = {}
    changed: list[str] = []
    try:
        beneath = RootDir(root)
    except OSError:  # the folder is gone
        return pictures, [item.path for item in items]
    with beneath:
        for item in items:
            try:
                found = read_regular(beneath, item.path)
            except OSError:
                found = None
            if found is None or content_hash(found[0]) != item.hash:
                changed.append(item.path)
                continue
            try:
                pictures[item.hash] = downscale(found[0])
            except ImageRefused as exc:
                log.info("%s keeps its structural annotation: %s", item.path, exc)
    return pictures, changed
