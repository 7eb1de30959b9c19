"""How the index packs what a content defines, in one place for both sides: the packing runs
where the definitions are found (a worker process, which must not load the index's database
code: it would cost every worker memory and start-up time), the unpacking where the index reads
them (index/definitions.py, which owns the tables)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import msgspec

from filescout.core.records import Definition, PreparedDefinitions
from filescout.core.words import index_words

ORDINAL_BITS = 8
"""A content's definitions beyond 2**ORDINAL_BITS are not kept (the outline stops at 120)."""
ORDINALS = 1 << ORDINAL_BITS

Described = tuple[str, str, str | None, str, str, int]
Searchable = tuple[str, str, str, str]

_encode = msgspec.msgpack.Encoder().encode
_decode_each = msgspec.msgpack.Decoder(list[bytes]).decode
_decode_described = msgspec.msgpack.Decoder(Described).decode
_decode_searchable = msgspec.msgpack.Decoder(list[Searchable]).decode


def searchable(definition: Definition) -> Searchable:
    """A definition's full-text words: name, container, signature, doc."""
    return (
        index_words(definition.name),
        index_words(definition.container) if definition.container else "",
        index_words(definition.signature),
        index_words(definition.doc),
    )


def prepare(definitions: Sequence[Definition]) -> PreparedDefinitions:
    """Definitions as the index keeps them; pure, so a worker process makes them."""
    kept = definitions[:ORDINALS]
    words = [searchable(item) for item in kept]
    # Each definition packed on its own: a search unpacks only the ones it found.
    described = [
        _encode((item.name, item.kind, item.container, item.signature, item.doc, item.line)) for item in kept
    ]
    return PreparedDefinitions(
        described=_encode(described),
        words=zlib.compress(_encode(words), 1),
        searchable=words,
    )


def unpack(described: bytes) -> list[Definition]:
    return [unpack_one(item) for item in unpack_each(described)]


def unpack_each(described: bytes) -> list[bytes]:
    """The packed definitions one by one, each still packed."""
    return _decode_each(described)


def unpack_one(packed: bytes) -> Definition:
    return Definition(*_decode_described(packed))


def unpack_words(words: bytes) -> list[Searchable]:
    return _decode_searchable(zlib.decompress(words))
