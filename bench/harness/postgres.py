"""A real, throwaway PostgreSQL server for the team-cache tests.

The shared annotation cache talks to PostgreSQL, and the things worth testing (authentication,
permissions, timeouts, a server going away mid-run) are exactly what a mock gets wrong, so the
tests run a private cluster: initdb into a temporary directory, listen on 127.0.0.1 on a free
port, durability switched off for speed, everything removed afterwards.

PostgreSQL refuses to run as root, so when the tests run as root (CI containers) only initdb,
pg_ctl and postgres run as an unprivileged user (``postgres`` if it exists, else ``nobody``);
the test process itself stays root. Otherwise they run as the current user. PostgreSQL 13 or
newer.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote, urlencode

import psycopg
from psycopg import sql
from psycopg.abc import Query

SUPERUSER = "postgres"
HOST = "127.0.0.1"
START_TIMEOUT = 30  # seconds pg_ctl waits for the server to accept connections
INSTALL_HINT = (
    "the team-cache tests start a real PostgreSQL server and need its binaries (initdb, pg_ctl, "
    "postgres). Install them with `apt-get install postgresql` (Debian/Ubuntu) or "
    "`brew install postgresql` (macOS); `.ci/run` installs them on CI."
)


def find_bindir() -> Path | None:
    """The directory holding initdb, pg_ctl and postgres, or None when PostgreSQL is not installed.

    Debian and Ubuntu keep them out of PATH (only wrappers are there), so their versioned
    directories come first, highest version first; then `pg_config --bindir`; then PATH."""

    def usable(directory: str | Path) -> bool:
        return all(os.access(Path(directory) / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres"))

    def version(directory: str) -> tuple[int, ...]:
        found = re.search(r"/postgresql/([\d.]+)/bin$", directory)
        return tuple(int(part) for part in found.group(1).split(".") if part) if found else ()

    for directory in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        if usable(directory):
            return Path(directory)
    if pg_config := shutil.which("pg_config"):
        try:
            answer = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            answer = None
        if answer and answer.returncode == 0 and usable(answer.stdout.strip()):
            return Path(answer.stdout.strip())
    if initdb := shutil.which("initdb"):
        directory = Path(initdb).resolve().parent
        if usable(directory):
            return directory
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (start() retries if one is lost)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def new_password() -> str:
    """A random password; URL-safe, though url() quotes whatever it is given anyway."""
    return secrets.token_urlsafe(18)


class PostgresServer:
    """One private PostgreSQL cluster: initialised on the first start(), removed by close().

    Use it as a context manager, or call start() and close(). kill() stops it the way a crash or
    a lost network does (clients' connections break at once); start() brings the same cluster,
    data and port back. The superuser ``postgres`` signs in with a password over TCP like
    everyone else; connect() and execute() are its shortcuts."""

    def __init__(self, bindir: Path | None = None, *, ssl: bool = False) -> None:
        found = bindir or find_bindir()
        if found is None:
            raise RuntimeError("PostgreSQL binaries not found: " + INSTALL_HINT)
        self.bindir = found
        self.ssl = ssl
        self.port = 0
        self.superuser_password = new_password()
        self.base: Path | None = None  # temporary directory holding data, log and socket
        self._run_as: dict[str, Any] = {}  # user= and group= for subprocess.run when root
        self._atexit_registered = False

    # Paths -------------------------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        return self._base() / "data"

    @property
    def log_path(self) -> Path:
        return self._base() / "server.log"

    @property
    def ssl_cert_path(self) -> Path:
        """The self-signed certificate (ssl=True): a client's sslrootcert for sslmode=verify-ca."""
        return self.data_dir / "server.crt"

    def _base(self) -> Path:
        if self.base is None:
            raise RuntimeError("the PostgreSQL server has not been started")
        return self.base

    # Lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the server, creating the cluster on first use; returns once it accepts connections."""
        if self.base is None:
            self._init_cluster()
        elif self.running:
            return
        for attempt in range(3):
            started = self._pg_ctl(
                "start", "-l", str(self.log_path), "-w", "-t", str(START_TIMEOUT), check=False
            )
            if started.returncode == 0:
                return
            # Another process may have taken the port since free_port() chose it: pick a new one.
            if attempt < 2 and "already in use" in self.log_tail():
                self.port = free_port()
                self._append_config({"port": str(self.port)})
                continue
            raise RuntimeError(self._failure("pg_ctl start", started))

    def stop(self) -> None:
        """A clean shutdown (fast mode: open sessions are ended, no crash recovery next start)."""
        self._shut_down("fast")

    def kill(self) -> None:
        """Stop at once, as a crash would: every backend quits without a goodbye, so clients'
        open connections fail on their next use and new ones are refused until start()."""
        self._shut_down("immediate")

    def restart(self) -> None:
        """A clean stop, then start: same cluster, data and port."""
        self.stop()
        self.start()

    def close(self) -> None:
        """Stop the server (if running) and delete the cluster; the object can start afresh after."""
        if self.base is None:
            return
        try:
            self._shut_down("immediate")
        finally:
            self._kill_postmaster()
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None
            if self._atexit_registered:
                atexit.unregister(self.close)
                self._atexit_registered = False

    @property
    def running(self) -> bool:
        """Whether the postmaster is alive (asked of pg_ctl, so a server that died counts as down)."""
        if self.base is None or not (self.data_dir / "postmaster.pid").exists():
            return False
        return self._pg_ctl("status", check=False).returncode == 0

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # Connections -------------------------------------------------------------------------------

    def url(self, user: str, password: str | None, database: str, **params: str) -> str:
        """A ``postgresql://`` URL on 127.0.0.1 for the given role; params become query
        parameters (e.g. sslmode="require", connect_timeout="2")."""
        credentials = quote(user, safe="") + (f":{quote(password, safe='')}" if password is not None else "")
        query = f"?{urlencode(params)}" if params else ""
        return f"postgresql://{credentials}@{HOST}:{self.port}/{quote(database, safe='')}{query}"

    def superuser_url(self, database: str = "postgres") -> str:
        return self.url(SUPERUSER, self.superuser_password, database)

    def connect(self, database: str = "postgres", *, autocommit: bool = True) -> psycopg.Connection[Any]:
        """A superuser connection, autocommit by default: for setup, inspection, or a session
        that holds a lock, runs `SELECT pg_sleep(...)` or `SET statement_timeout` on purpose."""
        return psycopg.connect(self.superuser_url(database), autocommit=autocommit, connect_timeout=10)

    def execute(
        self, query: Query, params: Sequence[Any] | None = None, *, database: str = "postgres"
    ) -> list[tuple[Any, ...]]:
        """Run one statement as the superuser in its own autocommit session; returns its rows
        (empty for statements without a result)."""
        with self.connect(database) as connection:
            cursor = connection.execute(query, params)
            return cursor.fetchall() if cursor.description is not None else []

    # Roles and databases -----------------------------------------------------------------------

    def create_role(self, name: str, password: str | None, *, login: bool = True) -> None:
        """A plain role (no superuser, createdb or createrole rights) signing in with password."""
        self.execute(
            sql.SQL("CREATE ROLE {} {} PASSWORD {}").format(
                sql.Identifier(name),
                sql.SQL("LOGIN" if login else "NOLOGIN"),
                sql.Literal(password) if password is not None else sql.SQL("NULL"),
            )
        )

    def drop_role(self, name: str) -> None:
        self.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))

    def set_role_setting(self, role: str, setting: str, value: str, *, database: str | None = None) -> None:
        """A default for every new session of a role, e.g. ("statement_timeout", "50ms") to make
        the server cancel the role's slow statements, or ("lock_timeout", "100ms")."""
        in_database = sql.SQL(" IN DATABASE {}").format(sql.Identifier(database)) if database else sql.SQL("")
        self.execute(
            sql.SQL("ALTER ROLE {}{} SET {} TO {}").format(
                sql.Identifier(role), in_database, sql.Identifier(setting), sql.Literal(value)
            )
        )

    def create_database(self, name: str, owner: str) -> None:
        """A database owned by `owner`, who also owns its public schema (PostgreSQL 15+) and so
        may create tables there. Other roles may not even connect (PostgreSQL lets everyone by
        default) until grant_read_only() or a GRANT lets them: tests stay apart."""
        database, role = sql.Identifier(name), sql.Identifier(owner)
        self.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(database, role))
        self.execute(sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(database))
        # Before PostgreSQL 15 the public schema belongs to the superuser and PUBLIC may create
        # in it; make every version behave like 15: the owner's schema, nobody else writes.
        self.execute(
            sql.SQL("ALTER SCHEMA public OWNER TO {}; REVOKE CREATE ON SCHEMA public FROM PUBLIC").format(
                role
            ),
            database=name,
        )

    def drop_database(self, name: str) -> None:
        """Drop a database even while clients are still connected to it."""
        self.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def grant_read_only(self, role: str, database: str, *, owner: str | None = None) -> None:
        """Let `role` connect to `database` and read its public schema, never write: SELECT only.
        With `owner`, tables that owner creates later are readable too (default privileges), so
        the grant may come before the schema exists."""
        self._grant(role, database, owner, tables="SELECT", sequences="SELECT")

    def grant_read_write(self, role: str, database: str, *, owner: str | None = None) -> None:
        """Let `role` connect to `database` and read and change rows in its public schema, but
        not create or alter tables (the owner's business); `owner` as for grant_read_only()."""
        self._grant(role, database, owner, tables="SELECT, INSERT, UPDATE, DELETE", sequences="USAGE, SELECT")

    def _grant(self, role: str, database: str, owner: str | None, *, tables: str, sequences: str) -> None:
        grantee = sql.Identifier(role)
        self.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(database), grantee))
        statements = [
            sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(grantee),
            sql.SQL("GRANT {} ON ALL TABLES IN SCHEMA public TO {}").format(sql.SQL(tables), grantee),
            sql.SQL("GRANT {} ON ALL SEQUENCES IN SCHEMA public TO {}").format(sql.SQL(sequences), grantee),
        ]
        if owner is not None:
            defaults = sql.SQL("ALTER DEFAULT PRIVILEGES FOR ROLE {} IN SCHEMA public GRANT ").format(
                sql.Identifier(owner)
            )
            statements += [
                defaults + sql.SQL("{} ON TABLES TO {}").format(sql.SQL(tables), grantee),
                defaults + sql.SQL("{} ON SEQUENCES TO {}").format(sql.SQL(sequences), grantee),
            ]
        for statement in statements:
            self.execute(statement, database=database)

    # Diagnostics -------------------------------------------------------------------------------

    def log_tail(self, lines: int = 40) -> str:
        """The end of the server log, for failure messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except (OSError, RuntimeError):
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # Internals ---------------------------------------------------------------------------------

    def _shut_down(self, mode: str) -> None:
        if self.base is not None and self.running:
            self._pg_ctl("stop", "-m", mode, "-w", "-t", str(START_TIMEOUT))

    def _kill_postmaster(self) -> None:
        """The last resort when pg_ctl could not stop it: never leave a server behind the run.
        Its backends notice the postmaster's death and exit by themselves."""
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)

    def _init_cluster(self) -> None:
        if os.geteuid() == 0:
            account = _unprivileged_account()
            self._run_as = {"user": account.pw_uid, "group": account.pw_gid}
        # A short path: the unix socket lives here too and socket paths are limited to ~100 bytes.
        self.base = Path(tempfile.mkdtemp(prefix="pg-", dir="/tmp" if os.path.isdir("/tmp") else None))
        self._register_atexit()
        try:
            self._chown(self.base)
            password_file = self.base / "superuser-password"
            password_file.write_text(self.superuser_password + "\n")
            self._chown(password_file)
            self._run(
                "initdb",
                "-D",
                str(self.data_dir),
                "-U",
                SUPERUSER,
                f"--pwfile={password_file}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
                "--no-instructions",
            )
            password_file.unlink()
            self.port = free_port()
            settings = {
                "listen_addresses": HOST,
                "port": str(self.port),
                "unix_socket_directories": str(self.base),
                # No durability against power loss (nobody keeps this data), but commits stay
                # synchronous: with fsync off that costs a write(), and what a test committed
                # survives kill() and start(), as it would on a real server.
                "fsync": "off",
                "full_page_writes": "off",
                "shared_buffers": "16MB",
                "max_connections": "100",
            }
            if self.ssl:
                self._make_certificate()
                settings.update({"ssl": "on", "ssl_cert_file": "server.crt", "ssl_key_file": "server.key"})
            self._append_config(settings)
        except BaseException:
            self.close()
            raise

    def _make_certificate(self) -> None:
        """A self-signed certificate for 127.0.0.1; the key must be 0600 and the server user's."""
        openssl = shutil.which("openssl")
        if openssl is None:
            raise RuntimeError("ssl=True needs the openssl command")
        key, cert = self.data_dir / "server.key", self.data_dir / "server.crt"
        command = [openssl, "req", "-new", "-x509", "-nodes", "-days", "2", "-newkey", "rsa:2048"]
        command += ["-subj", f"/CN={HOST}", "-addext", f"subjectAltName=IP:{HOST}"]
        command += ["-keyout", str(key), "-out", str(cert)]
        subprocess.run(
            command,
            check=True,
            capture_output=True,
            timeout=60,
        )
        key.chmod(0o600)
        self._chown(key)
        self._chown(cert)

    def _append_config(self, settings: dict[str, str]) -> None:
        """Settings go to postgresql.auto.conf, which is read last, so later lines win."""
        lines = "".join(f"{name} = '{value}'\n" for name, value in settings.items())
        with (self.data_dir / "postgresql.auto.conf").open("a") as config:
            config.write(lines)

    def _pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self._run("pg_ctl", "-D", str(self.data_dir), *args, check=check)

    def _run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL program as the server user, in a plain C-locale environment (a
        PGPORT or PGDATA of the developer's must not leak in)."""
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "LANG": "C",
            "TZ": "UTC",
        }
        # The postmaster that pg_ctl starts writes to the log file (-l), not to these pipes.
        completed = subprocess.run(
            [str(self.bindir / program), *args],
            capture_output=True,
            text=True,
            env=environment,
            cwd=self._base(),
            stdin=subprocess.DEVNULL,
            timeout=START_TIMEOUT * 2,
            **self._run_as,
        )
        if check and completed.returncode != 0:
            raise RuntimeError(self._failure(program, completed))
        return completed

    def _failure(self, what: str, completed: subprocess.CompletedProcess[str]) -> str:
        return (
            f"{what} failed with exit code {completed.returncode}\n{completed.stdout}{completed.stderr}"
            f"--- server log ---\n{self.log_tail()}"
        )

    def _chown(self, path: Path) -> None:
        if self._run_as:
            os.chown(path, self._run_as["user"], self._run_as["group"])

    def _register_atexit(self) -> None:
        """Stop the server even if the test run ends without its teardown (e.g. interrupted)."""
        if not self._atexit_registered:
            atexit.register(self.close)
            self._atexit_registered = True


def _unprivileged_account() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("running as root, but there is no 'postgres' or 'nobody' user to run PostgreSQL as")


@dataclass
class PostgresDatabase:
    """A fresh database owned by its own login role, as the pg_database fixture hands out;
    roles made with add_role() are dropped with it."""

    server: PostgresServer
    name: str
    user: str
    password: str
    extra_roles: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The owner's URL, password included."""
        return self.server.url(self.user, self.password, self.name)

    def connect(self, *, autocommit: bool = True) -> psycopg.Connection[Any]:
        """A connection as the owner."""
        return psycopg.connect(self.url, autocommit=autocommit, connect_timeout=10)

    def add_role(self, suffix: str, *, read_only: bool = False) -> tuple[str, str]:
        """Another login role for this database, returned as (name, password), which may read and
        write rows, or with read_only only SELECT; either way also on tables the owner creates
        later. Its URL: server.url(name, password, database.name)."""
        name, password = f"{self.user}_{suffix}", new_password()
        self.server.create_role(name, password)
        self.extra_roles.append(name)
        grant = self.server.grant_read_only if read_only else self.server.grant_read_write
        grant(name, self.name, owner=self.user)
        return name, password

    @classmethod
    def create(cls, server: PostgresServer) -> PostgresDatabase:
        name = f"fs_{secrets.token_hex(5)}"
        database = cls(server, name, f"{name}_owner", new_password())
        server.create_role(database.user, database.password)
        server.create_database(database.name, database.user)
        return database

    def drop(self) -> None:
        """Drop the database and its roles, bringing the server back first if a test killed it."""
        if not self.server.running:
            self.server.start()
        self.server.drop_database(self.name)
        for role in [*self.extra_roles, self.user]:
            self.server.drop_role(role)
