"""The PostgreSQL harness itself: the team-cache tests lean on it, so it must really give a
working, password-protected database, really refuse what it should, and really go away when
killed and come back when started."""

from __future__ import annotations

import shutil

import psycopg
import pytest
from psycopg import errors

from harness.postgres import PostgresDatabase, PostgresServer


def test_database_is_fresh_and_works(pg_database: PostgresDatabase) -> None:
    with psycopg.connect(pg_database.url) as connection:
        assert connection.execute("SELECT current_user, current_database()").fetchone() == (
            pg_database.user,
            pg_database.name,
        )
        tables = connection.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        assert tables == (0,)
        connection.execute("CREATE TABLE notes (path text PRIMARY KEY, summary text NOT NULL)")
        connection.execute("INSERT INTO notes VALUES (%s, %s)", ("src/cart.py", "Shopping cart"))
    with psycopg.connect(pg_database.url) as connection:  # committed, seen by a new session
        assert connection.execute("SELECT path, summary FROM notes").fetchall() == [
            ("src/cart.py", "Shopping cart")
        ]


def test_each_test_gets_its_own_database(postgres: PostgresServer, pg_database: PostgresDatabase) -> None:
    other = PostgresDatabase.create(postgres)
    try:
        assert other.name != pg_database.name and other.user != pg_database.user
        with pytest.raises(psycopg.OperationalError, match="permission denied"):
            psycopg.connect(postgres.url(pg_database.user, pg_database.password, other.name)).close()
    finally:
        other.drop()
    assert not postgres.execute("SELECT 1 FROM pg_database WHERE datname = %s", [other.name])
    assert not postgres.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [other.user])


def test_wrong_or_missing_password_is_refused(
    postgres: PostgresServer, pg_database: PostgresDatabase
) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(postgres.url(pg_database.user, pg_database.password + "x", pg_database.name)).close()
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(postgres.url("postgres", "not-the-password", "postgres")).close()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(postgres.url(pg_database.user, None, pg_database.name), passfile="/dev/null").close()


def test_kill_breaks_connections_and_start_brings_the_data_back(
    postgres: PostgresServer, pg_database: PostgresDatabase
) -> None:
    with pg_database.connect() as setup:
        setup.execute("CREATE TABLE notes (path text PRIMARY KEY)")
        setup.execute("INSERT INTO notes VALUES ('README.md')")
    connection = pg_database.connect()
    try:
        postgres.kill()
        assert not postgres.running
        with pytest.raises(psycopg.OperationalError):
            connection.execute("SELECT 1")
        assert connection.broken
    finally:
        connection.close()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(pg_database.url, connect_timeout=2).close()

    postgres.start()
    assert postgres.running
    with pg_database.connect() as connection:
        assert connection.execute("SELECT path FROM notes").fetchall() == [("README.md",)]


def test_read_only_role_can_select_but_not_write(
    postgres: PostgresServer, pg_database: PostgresDatabase
) -> None:
    reader, password = pg_database.add_role("reader", read_only=True)
    # The owner creates the table after the grant: default privileges make it readable too.
    with pg_database.connect() as owner:
        owner.execute("CREATE TABLE notes (path text PRIMARY KEY)")
        owner.execute("INSERT INTO notes VALUES ('README.md')")
    with psycopg.connect(postgres.url(reader, password, pg_database.name), autocommit=True) as connection:
        assert connection.execute("SELECT path FROM notes").fetchall() == [("README.md",)]
        with pytest.raises(errors.InsufficientPrivilege):
            connection.execute("INSERT INTO notes VALUES ('src/cart.py')")
        with pytest.raises(errors.InsufficientPrivilege):
            connection.execute("UPDATE notes SET path = 'x'")
        with pytest.raises(errors.InsufficientPrivilege):
            connection.execute("CREATE TABLE mine (id int)")
    with pg_database.connect() as owner:
        assert owner.execute("SELECT count(*) FROM notes").fetchone() == (1,)


def test_writer_role_changes_rows_but_not_the_schema(
    postgres: PostgresServer, pg_database: PostgresDatabase
) -> None:
    writer, password = pg_database.add_role("writer")
    with pg_database.connect() as owner:
        owner.execute("CREATE TABLE notes (id serial PRIMARY KEY, path text NOT NULL)")
    with psycopg.connect(postgres.url(writer, password, pg_database.name), autocommit=True) as connection:
        connection.execute("INSERT INTO notes (path) VALUES ('README.md'), ('src/cart.py')")
        connection.execute("UPDATE notes SET path = 'docs/README.md' WHERE path = 'README.md'")
        connection.execute("DELETE FROM notes WHERE path = 'src/cart.py'")
        assert connection.execute("SELECT path FROM notes").fetchall() == [("docs/README.md",)]
        with pytest.raises(errors.InsufficientPrivilege):
            connection.execute("ALTER TABLE notes ADD COLUMN summary text")
        with pytest.raises(errors.InsufficientPrivilege):
            connection.execute("CREATE TABLE mine (id int)")


def test_statement_timeout_for_a_role_cancels_slow_statements(
    postgres: PostgresServer, pg_database: PostgresDatabase
) -> None:
    postgres.set_role_setting(pg_database.user, "statement_timeout", "100ms")
    with pg_database.connect() as connection:
        assert connection.execute("SHOW statement_timeout").fetchone() == ("100ms",)
        with pytest.raises(errors.QueryCanceled):
            connection.execute("SELECT pg_sleep(5)")
    with postgres.connect() as superuser:  # the superuser's sessions are unaffected
        assert superuser.execute("SELECT pg_sleep(0.2)::text").fetchone() == ("",)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command for a certificate")
def test_ssl_server_verifies_with_its_certificate(postgres: PostgresServer) -> None:
    with PostgresServer(postgres.bindir, ssl=True) as server:
        url = server.url("postgres", server.superuser_password, "postgres")
        secure = f"{url}?sslmode=verify-full&sslrootcert={server.ssl_cert_path}"
        with psycopg.connect(secure) as connection:
            row = connection.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()
            assert row == (True,)
    assert server.base is None
