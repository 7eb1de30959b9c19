"""The engine: one workspace's state and every operation on it, in rooms.

workspace          the face: the operations the LSP server, the CLI and MCP call
roles              writer lock, read-only second process, takeover
passes             full scans, single-path rescans, the quiet periodic check
scheduler          what gets annotated next, for both workers; touches and neighbours
structural_worker  the embedded annotator's queue
model_worker       the model's queue, budget and failures
board, status      the phase, and the status a client asks for
repair             a damaged index: said once, moved aside and rebuilt while answering
listing            files/getFiles
answers            findRelevant's updates as protocol items
handoff            work a short-lived process leaves, handed to the background indexer
background_indexer that detached process: one per index, finishes the work and exits
"""

from __future__ import annotations

from filescout.engine.hooks import Hooks
from filescout.engine.workspace import Workspace

__all__ = ["Hooks", "Workspace"]
