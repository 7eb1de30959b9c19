"""The PostgreSQL fixtures of the team-cache tests. The helpers the tests share with the
benchmarks are the `harness` package in bench/, on the path through pyproject's `pythonpath`."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from harness.postgres import INSTALL_HINT, PostgresDatabase, PostgresServer, find_bindir


def _on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One real PostgreSQL cluster for the whole run, started on first use and removed at the end.

    Without PostgreSQL's binaries the tests that need it are skipped on a developer's machine,
    but fail on CI (the CI variable is set), where they must run."""
    bindir = find_bindir()
    if bindir is None:
        message = "PostgreSQL not found: " + INSTALL_HINT
        if _on_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    server = PostgresServer(bindir)
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_database(postgres: PostgresServer) -> Iterator[PostgresDatabase]:
    """A fresh database of one's own, owned by a fresh login role with a password (see its url),
    dropped afterwards with its roles. Restarts the shared server if an earlier test stopped it."""
    if not postgres.running:
        postgres.start()
    database = PostgresDatabase.create(postgres)
    try:
        yield database
    finally:
        database.drop()
