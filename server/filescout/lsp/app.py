"""The LSP face assembled: the server (server.py) with every handler (handlers.py) registered,
and `filescout serve`. Kept apart so the handlers can name the server's class and the server
need not know its handlers: no module imports the other back."""

from __future__ import annotations

import sys

from filescout import log as logsetup
from filescout.lsp.handlers import register
from filescout.lsp.server import FilescoutServer
from filescout.lsp.stdio import ClientStdin, ClientStdout


def create_server() -> FilescoutServer:
    """A server with every handler registered."""
    server = FilescoutServer()
    register(server)
    return server


def serve(tcp: str | None = None, log_level: str = "info") -> int:
    """Serve one editor on stdio (or TCP) until it leaves: by `exit`, by closing stdin, or by
    closing stdout, which ends the input too (see stdio.py). The exit code is LSP's: 1 for an
    `exit` that no `shutdown` preceded, else 0."""
    logsetup.configure(log_level)
    server = create_server()
    try:
        if tcp:
            host, _, port = tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
        else:
            stdin = ClientStdin(sys.stdin.fileno())
            stdout = ClientStdout(sys.stdout.buffer, on_lost=stdin.end)
            server.start_io(stdin, stdout)
    finally:
        if server.door is not None:  # the client vanished without shutdown
            server.door.remove()
        if server.engine is not None:
            server.engine.stop_threads()
    return server.exit_code
