"""What the frozen build (packaging/filescout.spec) runs: the `filescout` command.

A frozen program is its own interpreter, so every process filescout starts from
`sys.executable` starts here: the indexing workers and multiprocessing's resource tracker
(started with multiprocessing's own arguments, which `freeze_support` recognises, runs and
exits on) and the background indexer (a `filescout` command line like any other). The
workers must get there before the command line is parsed and before the server's modules
load: a worker imports only what its jobs need.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import MutableMapping

LIBRARY_PATH = "LD_LIBRARY_PATH"


def restore_library_path(environ: MutableMapping[str, str] = os.environ) -> None:
    """On Linux (and other POSIX systems but macOS) the bootloader starts this program with
    LD_LIBRARY_PATH pointing at the bundled libraries (the original kept as
    LD_LIBRARY_PATH_ORIG). Every program filescout starts, git above all, would inherit it and
    load the bundle's libz or libcrypto ahead of its own, which breaks it where the two differ.
    The loader of this process read the variable when it started, so putting the original back
    changes nothing here; a frozen child gets the bundle's again from its own bootloader."""
    original = environ.pop(LIBRARY_PATH + "_ORIG", None)
    if original is not None:
        environ[LIBRARY_PATH] = original
    else:
        environ.pop(LIBRARY_PATH, None)


if __name__ == "__main__":
    if getattr(sys, "frozen", False) and os.name == "posix" and sys.platform != "darwin":
        restore_library_path()
    multiprocessing.freeze_support()
    from filescout.cli import main

    raise SystemExit(main())
