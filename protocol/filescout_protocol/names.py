"""The contract's names and defaults a client needs before any payload: the methods and
commands, the file kinds, the overview's budget. Free of msgspec, so a terminal command that
only asks a running server (server/filescout/door/) loads nothing heavier; types.py uses these."""

from __future__ import annotations

from typing import Final


class Method:
    """JSON-RPC method names filescout adds to LSP."""

    GET_FILES: Final = "files/getFiles"
    FIND_RELEVANT: Final = "files/findRelevant"
    DID_ACCESS: Final = "files/didAccess"
    STATUS: Final = "filescout/status"
    GET_OVERVIEW: Final = "files/getOverview"


class Command:
    """`workspace/executeCommand` command names."""

    REINDEX: Final = "filescout.reindex"
    STATUS: Final = "filescout.status"
    ANNOTATE: Final = "filescout.annotate"


FILE_KINDS: Final = (
    "source",
    "test",
    "docs",
    "config",
    "data",
    "document",
    "image",
    "generated",
    "binary",
    "other",
)
"""`types.FileKind`'s values, in its order (a unit test holds the two together)."""

OVERVIEW_TOKENS: Final = 2000
"""The overview's default budget: enough for the top of a large tree and most of a small one."""
