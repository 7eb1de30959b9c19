"""What each annotation worker process runs first (engine/annotation_pool.py starts them).

Outside the engine package on purpose: a spawned worker imports the modules of what it runs,
and the engine's would bring the index, the protocol and asyncio with them — tens of MB and a
slower start in every worker, for code it never calls. A worker imports this, the scan's reading
and the annotation jobs.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading

WORKER_NICENESS = 5
"""Workers yield the CPU to the server, which answers requests and writes the index."""


def start_worker(log_level: int) -> None:
    """Exit with the server's own process however it ends (a worker waiting for work would
    otherwise outlive a killed server), let it handle Ctrl-C (it stops the pool), give way to
    it for CPU, and write to stderr only, as it does."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), name="parent-watch", daemon=True).start()
    os.dup2(2, 1)  # the server's stdout may be its protocol stream: nothing else may write there
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.nice(WORKER_NICENESS)
    except OSError:
        pass
    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _exit_with(parent_sentinel: int) -> None:
    multiprocessing.connection.wait([parent_sentinel])
    os._exit(0)
