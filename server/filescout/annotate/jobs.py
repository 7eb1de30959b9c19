"""Structural annotation of a batch as one job: read each file, check it still has the content
the index knows, annotate it. Plain records in and out: a job may run in a worker process
(engine/annotation_pool.py) or in a thread of the server's own."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from filescout.annotate.structural import annotate_safely
from filescout.core.beneath import RootDir, opened, read_regular
from filescout.core.packing import prepare
from filescout.core.records import Annotation, FileToAnnotate, IndexWords, PendingFile
from filescout.core.words import join_words
from filescout.scan.tree import content_hash, readable


@dataclass(slots=True)
class AnnotationJob:
    root: str
    files: Sequence[PendingFile]
    with_words: Collection[str] = ()
    """Contents (hashes) whose words the content index lacks (indexed by an older version):
    their annotation carries them. Every other content's words were found by the scan."""


@dataclass(slots=True)
class AnnotatedBatch:
    annotations: list[tuple[str, Annotation]] = field(default_factory=list)
    """(content hash, annotation), in the order of the job's files."""
    changed: list[str] = field(default_factory=list)
    """Paths whose content is not what the index knows any more (or that vanished)."""


def read_text(root: RootDir | Path | str, pending: PendingFile) -> FileToAnnotate | None:
    """The file's text if it still has the content the index knows; None if it changed,
    vanished, is no regular file any more (a FIFO there is never waited on) or leads outside
    the root (a link retargeted since the scan)."""
    try:
        with opened(root) as beneath:
            found = read_regular(beneath, pending.path)
    except OSError:
        return None
    if found is None or content_hash(found[0]) != pending.hash:
        return None
    text, facts = readable(pending.kind, pending.language, found[0])
    return FileToAnnotate(
        path=pending.path,
        hash=pending.hash,
        language=pending.language,
        kind=pending.kind,
        text=text,
        facts=facts,
    )


def annotate_batch(job: AnnotationJob) -> AnnotatedBatch:
    done = AnnotatedBatch()
    with_words = set(job.with_words)
    try:
        beneath = RootDir(job.root)  # once for the batch
    except OSError:  # the folder is gone: none of its files has the content the index knows
        done.changed.extend(pending.path for pending in job.files)
        return done
    with beneath:
        for pending in job.files:
            item = read_text(beneath, pending)
            if item is None:
                done.changed.append(pending.path)
                continue
            annotation = annotate_safely(item, with_words=item.hash in with_words)
            if annotation is not None:
                done.annotations.append((item.hash, with_index_words(annotation)))
    return done


def with_index_words(annotation: Annotation) -> Annotation:
    """The annotation with its full-text words and its definitions as the index keeps them,
    found here rather than by the server, whose one writer bounds the throughput (the
    definitions then travel packed only: decoding them cost the server more than storing)."""
    prepared = prepare(annotation.definitions) if annotation.definitions is not None else None
    words = IndexWords(join_words(annotation.symbols), join_words(annotation.tags), prepared)
    return dataclasses.replace(annotation, definitions=None, words=words)


def annotate_batch_packed(job: AnnotationJob) -> bytes:
    """`annotate_batch`, its result as MessagePack: a worker's answer is decoded in C on the
    server's side (unpickling dataclasses costs several times as much, and that process's time
    bounds the throughput)."""
    return _encode(annotate_batch(job))


def unpack_batch(packed: bytes) -> AnnotatedBatch:
    return _decode_batch(packed)


_encode = msgspec.msgpack.Encoder().encode
_decode_batch = msgspec.msgpack.Decoder(AnnotatedBatch).decode
