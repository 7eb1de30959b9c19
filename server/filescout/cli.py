"""The `filescout` command: serve editors, or index and query a workspace from a terminal.
Every subcommand drives the same engine the server uses."""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from filescout import __version__
from filescout.core.errors import FilescoutError
from filescout_protocol.names import FILE_KINDS, OVERVIEW_TOKENS, Command, Method

if TYPE_CHECKING:
    from filescout.engine import Workspace
    from filescout.engine.progress import ProgressReporter
    from filescout.engine.workspace import CurrentIndex
    from filescout_protocol.types import SharedCacheStatus, StatusResult

    Answering = Workspace | CurrentIndex
    """What answers a query: the whole engine, or the index as it is."""

Wire = dict[str, Any]
"""A request's params or an answer as JSON-RPC carries them (camelCase)."""

M_ARENA_MAX = -8  # glibc's mallopt parameter number
QUERIES = ("find", "files", "overview", "status")
"""The commands a server's door may answer (door/)."""
VERBOSE = ("info", "debug")
LOG_LEVELS = ("debug", "error", "info", "warning")
"""`log.LEVELS`' names (a unit test holds the two together): `log.py` loads `logging`, which a
command answered through the door never needs."""
BACKGROUND_COMMAND = "background-index"
"""`engine/handoff.py` starts it (named there too: this module loads none of the engine)."""


class TerminalProgress:
    """A one-line progress bar on stderr when it is a terminal; silent otherwise."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self._stream = stream
        self._enabled = stream.isatty()
        self._title = ""

    def begin(self, title: str, message: str | None = None) -> None:
        self._title = title.removeprefix("filescout: ")
        self.report(message, 0)

    def report(self, message: str | None = None, percentage: int | None = None) -> None:
        if not self._enabled:
            return
        import shutil  # here, not above, like the engine: most runs draw no bar

        width = max(10, min(30, shutil.get_terminal_size().columns - 60))
        filled = width * (percentage or 0) // 100
        bar = "#" * filled + "." * (width - filled)
        line = f"{self._title} [{bar}] {percentage or 0:3d}% {message or ''}"
        self._stream.write("\r" + line[: shutil.get_terminal_size().columns - 1].ljust(40))
        self._stream.flush()

    def end(self, message: str | None = None) -> None:
        if self._enabled:
            self._stream.write("\r\033[K")
        if message:
            self._stream.write(f"{message}\n")
        self._stream.flush()

    def is_cancelled(self) -> bool:
        return False


def _print_json(value: object) -> None:
    import msgspec

    sys.stdout.buffer.write(msgspec.json.encode(value) + b"\n")


async def _terminal_progress(kind: str) -> ProgressReporter:
    return TerminalProgress()


async def _with_workspace(path: str, refresh: bool, action: Callable[[Workspace], Awaitable[int]]) -> int:
    # Imported here, not above: the annotation workers import this module as the console
    # script's main module, and need none of the engine.
    from filescout.engine import Hooks, Workspace

    # A one-shot run gives up on a failing model endpoint instead of waiting it out.
    engine = await Workspace.open(Path(path), hooks=Hooks(progress=_terminal_progress, persistent=False))
    try:
        _print_warnings(engine.warnings)
        return await _refreshed_then(engine, refresh, action)
    finally:
        # A refresh cut short (an interrupt) is finished by a background indexer.
        await engine.close(hand_off=refresh)


async def _from_current_index(
    path: str,
    refresh: bool,
    action: Callable[[Answering], Awaitable[int]],
    collect: Callable[[], None] | None = None,
) -> int:
    """A query (find, files, overview): answered from the index as it is when it is current,
    or when another filescout process keeps it current. The whole engine, which imports and
    starts the indexing machinery, is opened only when a refresh has something to do: the few
    files that changed, read again, or else a pass (`collect` is called first: the garbage
    collector, off for a query, is needed again)."""
    from filescout.engine import Hooks
    from filescout.engine.workspace import CurrentIndex, NeedsEngine

    index = await CurrentIndex.open(Path(path))
    engine: Workspace | None = None
    try:
        said = _print_warnings(index.warnings)
        told = refresh and _tell_reader(index)
        stale: list[str] | None = []
        if refresh and index.role == "writer" and index.unwritable is None:
            stale = await index.stale_files()
        if stale == []:
            try:
                return await action(index)
            except NeedsEngine as exc:  # e.g. a damaged index, which the engine mends
                import logging  # here: a command answered through the door never logs

                logging.getLogger(__name__).info("answering through the engine: %s", exc)
                stale = None
        if collect is not None:
            collect()
        # A one-shot run gives up on a failing model endpoint instead of waiting it out.
        engine = await index.engine(Hooks(progress=_terminal_progress, persistent=False))
        _print_warnings(engine.warnings[said:])
        return await _refreshed_then(engine, refresh, action, told=told, only=stale or None)
    finally:
        if engine is not None:
            # A refresh cut short (an interrupt) is finished by a background indexer.
            await engine.close(hand_off=refresh)
        else:
            await index.close()


def _print_warnings(warnings: Sequence[str]) -> int:
    for warning in warnings:
        print(f"filescout: {warning}", file=sys.stderr)
    return len(warnings)


def _tell_reader(engine: Answering) -> bool:
    """Say that another process's index answers, when it does."""
    if engine.role != "reader" or engine.unwritable is not None:
        return False
    print(
        f"filescout: another filescout process (pid {engine.writer_pid}) is "
        "indexing this workspace; answering from its index",
        file=sys.stderr,
    )
    return True


async def _refreshed_then(
    engine: Workspace,
    refresh: bool,
    action: Callable[[Workspace], Awaitable[int]],
    *,
    told: bool = False,
    only: Sequence[str] | None = None,
) -> int:
    """`action`, after a refresh of the index when one is asked for and this process writes it:
    a pass, or a rescan of `only` these files when they are known to be all that changed."""
    if refresh and engine.unwritable is not None:
        pass  # the warning above says why nothing is indexed
    elif refresh and engine.role == "reader":
        told or _tell_reader(engine)
    elif refresh:
        if only:
            await engine.refresh(only)
        else:
            engine.start_indexing("index")
        await engine.wait_idle()
        if engine.last_error:
            print(f"filescout: {engine.last_error}", file=sys.stderr)
            return 1
    return await action(engine)


async def _index(engine: Workspace) -> int:
    status = await engine.status()
    print(f"{status.files} files in {status.db_path}")
    for name, count in sorted(status.by_status.items()):
        print(f"  {name:<10} {count}")
    _print_skipped_names(status.skipped_names)
    return 0


def _print_skipped_names(count: int) -> None:
    if count:
        print(f"  {count} files left out: their names are not valid UTF-8 (the warning above names them)")


class Query:
    """A query (find, files, overview, status) as the protocol asks it, and how its answer is
    printed. The same params and printing serve both ways it is answered: by the process that
    keeps the workspace's door (door/), or by this process (status: from the whole engine)."""

    def __init__(self, method: str, params: Wire, as_json: bool) -> None:
        self.method = method
        self.params = params
        self.as_json = as_json
        self.printed = False
        self._shown_stage: str | None = None

    @property
    def streams(self) -> bool:
        """Whether the answer comes in batches (files, each stage's ranking) before the result."""
        return self.method in (Method.GET_FILES, Method.FIND_RELEVANT)

    def partial(self, items: list[Wire]) -> None:
        """One streamed batch: files, or a stage's ranking."""
        self.printed = True
        if self.method == Method.GET_FILES:
            for item in items:
                print(_json_line(item) if self.as_json else f"{item['path']}\t{item['summary']}")
            return
        if self.as_json:
            return
        if items and items[0]["stage"] != self._shown_stage:
            self._shown_stage = items[0]["stage"]
            print(f"-- {self._shown_stage}")
        _print_items(items)

    def result(self, result: Any) -> int:
        """The final response (findRelevant's with every item of the final ranking)."""
        self.printed = True
        if self.method == Command.STATUS:
            from msgspec import convert

            from filescout_protocol.types import StatusResult

            return _print_status(convert(result, StatusResult), self.as_json)
        if self.method == Method.GET_OVERVIEW:
            print(_json_line(result) if self.as_json else result["prompt"])
        elif self.method == Method.FIND_RELEVANT:
            if self.as_json:
                print(_json_line(result))
            else:
                final = result["stages"][-1]
                if final != self._shown_stage or result["degraded"]:
                    print(f"-- answer ({final})")
                    _print_items(result["items"])
                if result.get("message"):
                    print(result["message"], file=sys.stderr)
        return 0

    async def answer(self, engine: Answering) -> int:
        """Answered by this process, streamed as the door streams it."""
        from msgspec import to_builtins

        from filescout.rpc.params import decode_params
        from filescout_protocol.types import FindRelevantParams, GetFilesParams, GetOverviewParams

        if self.method == Method.GET_FILES:
            files = decode_params(self.params, GetFilesParams, self.method)
            async for batch in engine.stream_files(files):
                self.partial(to_builtins(batch))
            return self.result([])
        if self.method == Method.GET_OVERVIEW:
            overview = decode_params(self.params, GetOverviewParams, self.method)
            return self.result(to_builtins(await engine.overview(overview)))
        find = decode_params(self.params, FindRelevantParams, self.method)
        async for update in engine.find_relevant_stream(find):
            if update.done:
                return self.result(to_builtins(update.result()))
            if update.items:
                self.partial(to_builtins(update.items))
        raise AssertionError("the relevance stages ended without an answer")


def _json_line(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _through_door(path: str, query: Query, verbose: bool) -> int | None:
    """The query answered by the process that keeps the workspace's door (an editor's server,
    an MCP server), which takes in what changed on disk first; None when there is no door, or
    when the process behind it went away before it answered anything."""
    from filescout.door.address import open_door

    where = open_door(Path(path).expanduser().resolve(), os.environ)
    if where is None:
        return None
    from filescout.door.client import Door, DoorClosed, DoorError

    door = Door.knock(where)
    if door is None:
        return None
    with door:
        try:
            for final, value in door.ask(query.method, query.params, stream=query.streams):
                if final:
                    if verbose:
                        print("filescout: answered by the process that keeps this index", file=sys.stderr)
                    return query.result(value)
                query.partial(value)
        except DoorError as exc:
            print(f"filescout: {exc}", file=sys.stderr)
            return 1
        except DoorClosed as exc:
            if not query.printed:
                return None
            print(f"filescout: the filescout process answering this went away: {exc}", file=sys.stderr)
            return 1
    raise AssertionError("the door's answer ended without a result")


def _files_query(args: argparse.Namespace) -> Query:
    params: Wire = {"globs": args.glob, "paths": args.prefix, "kinds": args.kind, "languages": args.language}
    return Query(Method.GET_FILES, params, args.json)


def _find_query(args: argparse.Namespace, query: str) -> Query:
    params: Wire = {"query": query, "limit": args.limit}
    if args.glob or args.prefix:
        params["scope"] = {"globs": args.glob, "paths": args.prefix}
    if args.no_model:
        params["options"] = {"useModel": False}
    return Query(Method.FIND_RELEVANT, params, args.json)


def _overview_query(args: argparse.Namespace) -> Query:
    params: Wire = {"tokens": args.tokens, "globs": args.glob, "paths": args.prefix}
    if args.query is not None:
        params["query"] = args.query
    return Query(Method.GET_OVERVIEW, params, args.json)


def _print_items(items: list[Wire]) -> None:
    for rank, item in enumerate(items, 1):
        print(f"{rank:3d}. {item['path']}  [{item['stage']} {item['score']:.2f}]")
        print(f"     {item['reason']}")
        if item["summary"]:
            print(f"     {item['summary']}")


async def _status(engine: Workspace, as_json: bool) -> int:
    return _print_status(await engine.status(), as_json)


def _print_status(status: StatusResult, as_json: bool) -> int:
    if as_json:
        _print_json(status)
        return 0
    print(f"workspace  {status.root}")
    print(f"index      {status.db_path}")
    print(f"last scan  {status.last_scan or 'never'}")
    print(f"annotator  {status.annotator}")
    if status.ranking:
        print(f"ranking    {status.ranking}")
    model = status.model
    if model is not None and model.state not in ("off",):
        budget = " / ".join(
            f"{used} of {limit} {period}"
            for used, limit, period in (
                (model.tokens_today, model.daily_budget, "today"),
                (model.tokens_this_month, model.monthly_budget, "this month"),
            )
            if limit is not None
        )
        print(f"model      {model.state}" + (f" ({model.message})" if model.message else ""))
        print(
            f"  tokens   {model.tokens_today} today, {model.tokens_this_month} this month"
            + (f"; budget {budget}" if budget else "")
            + f"; {model.calls} calls, {model.failures} failed"
        )
        cost = (
            f" (about {model.estimated_cost_to_finish:.2f})"
            if model.estimated_cost_to_finish is not None
            else ""
        )
        print(f"  to do    {model.queued_files} files, about {model.estimated_tokens_to_finish} tokens{cost}")
    elif model is not None:
        print(f"model      off ({model.message})")
    if status.shared_cache is not None:
        shared = status.shared_cache
        _print_cache_status(shared)
        print(
            f"  used     {shared.hits} hits, {shared.misses} misses, {shared.stored} shared, "
            f"{shared.tokens_saved} tokens saved"
            + (f", {shared.rejected} rejected" if shared.rejected else "")
        )
    print(f"files      {status.files}")
    for name, count in sorted(status.by_status.items()):
        print(f"  {name:<10} {count}")
    for name, count in sorted(status.by_kind.items()):
        print(f"  {name:<10} {count}  (kind)")
    if status.skipped_names:
        print(f"  {status.skipped_names} files left out: their names are not valid UTF-8")
    return 0


def _cache(verb: str) -> Callable[[Workspace], Awaitable[int]]:
    async def run(engine: Workspace) -> int:
        if verb == "push":
            pushed = await engine.push_to_shared_cache()
            _print_cache_status(pushed.status)
            print(
                f"shared     {pushed.status.stored} of {pushed.annotations} model annotations "
                "(entries already there are kept)"
            )
            return 0 if pushed.status.state == "ready" or not pushed.annotations else 1
        report = await engine.shared_cache_report()
        _print_cache_status(report.status)
        print(f"entries    {report.entries if report.entries is not None else 'unknown'} in the cache")
        print(f"workspace  {report.covered} of its {report.local} model annotations are in the cache")
        return 0 if report.status.state == "ready" else 1

    return run


def _print_cache_status(status: SharedCacheStatus) -> None:
    print(f"cache      {status.location} ({status.mode.replace('_', '-')}): {status.state}")
    if status.last_error:
        print(f"  error    {status.last_error}")


def build_parser() -> argparse.ArgumentParser:
    # Every visible command has a description, help for each argument and an example
    # (tests/unit/test_cli_help.py holds each new flag to that).
    parser = argparse.ArgumentParser(
        prog="filescout",
        description="File-relevance sidecar: index a workspace and find the files that matter.",
        epilog="examples:\n"
        "  filescout index .\n"
        '  filescout find . "where are refunds issued"\n'
        "\n`filescout COMMAND -h` describes a command, its arguments and flags.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"filescout {__version__}")
    parser.add_argument(
        "--log-level",
        default=os.environ.get("FILESCOUT_LOG_LEVEL", "warning"),
        choices=LOG_LEVELS,
        help="what the log on stderr shows (default: $FILESCOUT_LOG_LEVEL, else warning; info for serve)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, description: str, examples: str) -> argparse.ArgumentParser:
        """A subcommand listed in `filescout -h` (as `summary`), with its own description and
        examples; both are laid out by hand, so lines stay under 80 columns."""
        return commands.add_parser(
            name,
            help=summary,
            description=description,
            epilog="examples:\n" + examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    serve = command(
        "serve",
        "run the JSON-RPC server on stdio (or TCP)",
        "Run the language server that editors start: JSON-RPC over stdio (or TCP). It\n"
        "indexes the workspace folders the editor opens and answers their questions\n"
        "(protocol/PROTOCOL.md). The log goes to stderr.",
        "  filescout serve                          # what an editor runs\n"
        "  filescout serve --tcp 127.0.0.1:2087     # for a client that connects to it",
    )
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP at HOST:PORT instead of stdio")

    mcp = command(
        "mcp",
        "run the MCP server on stdio, for chat panels and agents",
        "Run the MCP server on stdio for chat clients and agents, with the tools\n"
        "find_relevant_files, list_files, workspace_overview, index_status,\n"
        "reindex_workspace and annotate_files. Beside a running `filescout serve` on\n"
        "the same workspace it reads the shared index; alone, it indexes.",
        "  filescout mcp ~/src/shop\n"
        '  an MCP client\'s entry: "command": "filescout", "args": ["mcp", "/path/to/src"]',
    )
    mcp.add_argument("path", nargs="?", default=".", help="the workspace (default: the current directory)")

    index = command(
        "index",
        "index a workspace (incremental)",
        "Scan a workspace and annotate its files, then print how many files the index\n"
        "holds, by annotation status. Incremental: only new and changed files are read\n"
        "again. A progress bar shows on a terminal. When another filescout process is\n"
        "indexing the workspace, this one reports that process's index instead.",
        "  filescout index\n  filescout index ~/src/shop",
    )
    index.add_argument("path", nargs="?", default=".", help="the workspace (default: the current directory)")

    def add_filters(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--glob",
            action="append",
            default=[],
            metavar="G",
            help="gitignore-style pattern; repeat for several, prefix ! to exclude",
        )
        sub.add_argument(
            "--prefix",
            action="append",
            default=[],
            metavar="DIR",
            help="only files under this workspace-relative path",
        )
        sub.add_argument("--json", action="store_true", help="JSON lines instead of text")
        sub.add_argument(
            "--no-refresh",
            action="store_true",
            help="answer from the index as it is, without rescanning first",
        )

    files = command(
        "files",
        "list indexed files with their summaries",
        "List the indexed files of a workspace, one a line: the path, a tab, the\n"
        "file's one-line summary. The index is brought up to date first (fast when\n"
        "nothing changed).",
        "  filescout files --glob '*.py' --glob '!tests/'\n"
        "  filescout files --kind document --kind image\n"
        "  filescout files ~/src/shop --prefix src/shop/payments --json",
    )
    files.add_argument("path", nargs="?", default=".", help="the workspace (default: the current directory)")
    add_filters(files)
    files.add_argument(
        "--kind",
        action="append",
        default=[],
        choices=FILE_KINDS,
        metavar="KIND",
        help="only files of this kind; repeat for several (" + ", ".join(FILE_KINDS) + ")",
    )
    files.add_argument(
        "--language",
        action="append",
        default=[],
        metavar="LANG",
        help="only files of this language or format (python, pdf, docx, png, ...); repeat for several",
    )

    find = command(
        "find",
        "find the files relevant to a question",
        "Rank the files of a workspace by how well they answer a question, each with\n"
        "the reason and its summary. The answer comes in stages: the model-free\n"
        "prefilter first, then the model's judgement when a model is configured. The\n"
        "index is brought up to date first (fast when nothing changed).\n"
        "\n"
        "The question is the words that are not flags, quoted or not. When there are\n"
        "two words or more and the first names a directory, that directory is the\n"
        "workspace; otherwise it is the current directory.",
        '  filescout find "where are refunds issued"\n'
        "  filescout find ~/src/shop where are refunds issued --limit 5\n"
        "  filescout find . checkout address validation --glob '*.ts' --no-model --json",
    )
    words = find.add_argument(
        "words",
        nargs="+",
        metavar="[PATH] QUERY",
        help="the workspace (optional, default: the current directory), then the question",
    )
    find.add_argument(
        "--limit", type=int, default=10, metavar="N", help="show at most N files, 1 to 500 (default: 10)"
    )
    find.add_argument(
        "--no-model",
        action="store_true",
        help="the model-free stage only: the quick answer, with no model calls",
    )
    add_filters(find)
    # argparse would write the words as `[PATH] QUERY [[PATH] QUERY ...]`: the usage line is the
    # flags as argparse lays them out, then the words as they are read.
    words_help, words.help = words.help, argparse.SUPPRESS  # left out of the usage argparse makes
    find.usage = find.format_usage().removeprefix("usage: ").rstrip() + " [PATH] QUERY..."
    words.help = words_help

    overview = command(
        "overview",
        "the workspace as an annotated tree, within a token budget",
        "Print the workspace as an indented tree for a chat's prompt: each directory\n"
        "with what it is for, its main languages and how many files it holds, each\n"
        "file with its summary. The most important branches (the import graph, the\n"
        "history, your use, the kind of file) stay open within the budget; the rest\n"
        "fold into `… N more files` lines. With --query, the branches that matter for\n"
        "the question open first. The index is brought up to date first (fast when\n"
        "nothing changed).",
        "  filescout overview\n"
        "  filescout overview ~/src/shop --tokens 8000\n"
        "  filescout overview . --query \"where are refunds issued\" --glob '*.py'",
    )
    overview.add_argument(
        "path", nargs="?", default=".", help="the workspace (default: the current directory)"
    )
    overview.add_argument(
        "--tokens",
        type=int,
        default=OVERVIEW_TOKENS,
        metavar="N",
        help=f"most tokens the tree may take, 200 to 200000 (default: {OVERVIEW_TOKENS})",
    )
    overview.add_argument("--query", metavar="Q", help="a question to focus on: its branches open first")
    add_filters(overview)

    status = command(
        "status",
        "show what the index holds",
        "Show what the index of a workspace holds: files by annotation status and by\n"
        "kind, the last scan, the model's token use and what finishing would cost,\n"
        "and the team's shared cache when one is configured. It reads the index as it\n"
        "is, without rescanning.",
        "  filescout status\n  filescout status ~/src/shop --json",
    )
    status.add_argument("path", nargs="?", default=".", help="the workspace (default: the current directory)")
    status.add_argument(
        "--json", action="store_true", help="one JSON object (the filescout.status command's result)"
    )

    cache = command(
        "cache",
        "the team's shared annotation cache (PostgreSQL)",
        "Work with the team's shared annotation cache, a PostgreSQL database set in\n"
        "FILESCOUT_SHARED_CACHE (docs/TEAMS.md): push uploads the model annotations of\n"
        "the workspace's files; status says how much of the workspace the cache holds.",
        "  filescout index . && filescout cache push .     # in CI on the main branch\n"
        "  filescout cache status ~/src/shop",
    )
    cache.add_argument(
        "action",
        choices=["push", "status"],
        help="push: share this machine's model annotations; status: what the cache holds",
    )
    cache.add_argument("path", nargs="?", default=".", help="the workspace (default: the current directory)")

    # The background indexer a short-lived process leaves its work to (engine/handoff.py). Not
    # the user's: without help= it is left out of the list (SUPPRESS would print as a marker).
    background = commands.add_parser(BACKGROUND_COMMAND)
    background.add_argument("path")
    background.add_argument("--index", required=True)
    background.add_argument("--after", type=int)
    for sub in commands.choices.values():
        # Taken after the command too (`filescout find . x --log-level info`), where people write
        # it; `filescout -h` describes it.
        sub.add_argument("--log-level", default=argparse.SUPPRESS, choices=LOG_LEVELS, help=argparse.SUPPRESS)
    return parser


def _serve_mcp(path: str, log_level: str) -> int:
    try:
        from filescout.mcp.server import serve
    except ImportError as exc:  # the extra is not installed
        print(
            f"filescout: `filescout mcp` needs the MCP SDK, which comes with filescout ({exc}); "
            "reinstall filescout in this environment (pip install --force-reinstall filescout)",
            file=sys.stderr,
        )
        return 1
    try:
        return serve(path, log_level)
    except FilescoutError as exc:
        print(f"filescout: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _background_index(args: argparse.Namespace) -> int:
    import asyncio

    from filescout.engine.background_indexer import main as finish

    return asyncio.run(finish(Path(args.path), Path(args.index), args.after, serving=_door_kept))


@asynccontextmanager
async def _door_kept(engine: Workspace) -> AsyncIterator[None]:
    """The workspace's door, kept while a background indexer works: a command run meanwhile
    is answered by it, from the index it is writing, without opening one of its own."""
    from filescout.door.server import Door

    door = await Door.open(engine, engine.env)
    try:
        yield
    finally:
        if door is not None:
            await door.close()


@contextmanager
def _uncollected() -> Iterator[Callable[[], None]]:
    """A query answered from the index, without the cyclic garbage collector: the process makes
    little garbage in cycles before it exits, and the collections it would run (sixty-odd as
    the imports' objects pile up, 10 ms or more) would find next to none. What it gives turns the
    collector back on, for the whole engine's pass, which makes garbage in cycles all along."""
    was_enabled = gc.isenabled()
    gc.disable()

    def collect() -> None:
        if was_enabled:
            gc.enable()

    try:
        yield collect
    finally:
        collect()


@cache
def _frozen_at_exit() -> None:
    """Let the interpreter exit without its last collection, which walks every object the
    imports and the answer left (tens of milliseconds): at exit they are moved out of the
    collector's reach (`gc.freeze`, which frees nothing and changes nothing else that runs at
    exit), and freed as the modules go."""
    atexit.register(gc.freeze)


def _log_to_stderr(level: str) -> None:
    from filescout import log as logsetup

    logsetup.configure(level)


def limit_malloc_arenas(env: Mapping[str, str] = os.environ) -> None:
    """glibc gives every thread that allocates its own malloc arena. The database connections'
    threads and the annotation workers each hold on to one, tens of MB of mostly idle memory in a
    long-running sidecar; two arenas serve this process as fast (measured in bench/)."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in env:
        return
    import ctypes  # here, not above: a command answered through the door starts no thread

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(M_ARENA_MAX, 2)
    except (OSError, AttributeError):  # not glibc (musl): nothing to tune
        pass


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command not in QUERIES:
        limit_malloc_arenas()  # before any thread starts (a query: once no door answered it)
    if args.command == "serve":
        from filescout.lsp.app import serve

        return serve(args.tcp, "info" if args.log_level == "warning" else args.log_level)
    if args.command == "mcp":
        return _serve_mcp(args.path, args.log_level)
    if args.command == BACKGROUND_COMMAND:
        _log_to_stderr(args.log_level)
        return _background_index(args)
    action: Callable[[Workspace], Awaitable[int]] | None = None
    # A query: asked through the workspace's door when a server keeps one, else answered from
    # the index as it is when nothing changed (`_from_current_index`).
    query: Query | None = None
    try:
        if args.command == "index":
            action, path, refresh = _index, args.path, True
        elif args.command == "files":
            query, path, refresh = _files_query(args), args.path, not args.no_refresh
        elif args.command == "find":
            path, question = (
                (args.words[0], " ".join(args.words[1:]))
                if len(args.words) > 1 and Path(args.words[0]).is_dir()
                else (".", " ".join(args.words))
            )
            if not 1 <= args.limit <= 500:
                print("filescout: --limit must be between 1 and 500", file=sys.stderr)
                return 2
            query, refresh = _find_query(args, question), not args.no_refresh
        elif args.command == "overview":
            if not 200 <= args.tokens <= 200_000:
                print("filescout: --tokens must be between 200 and 200000", file=sys.stderr)
                return 2
            query, path, refresh = _overview_query(args), args.path, not args.no_refresh
        elif args.command == "cache":
            action, path, refresh = _cache(args.action), args.path, False
        else:
            path, refresh = args.path, False
            as_json = args.json
            # A status is the server's when one keeps the index: asked, not opened again.
            asked = Query(Command.STATUS, {}, as_json)
            if (answered := _through_door(path, asked, verbose=args.log_level in VERBOSE)) is not None:
                return answered

            async def status(engine: Workspace) -> int:
                return await _status(engine, as_json)

            action = status

        # A refresh is what the door's server does before it answers (--no-refresh: this
        # process answers from the index as it is).
        if query is not None and refresh:
            answered = _through_door(path, query, verbose=args.log_level in VERBOSE)
            if answered is not None:
                return answered
        if args.command in QUERIES:  # not limited above: no door answered
            limit_malloc_arenas()
        _log_to_stderr(args.log_level)
        import asyncio  # here, not above, for the same reason as the engine

        if query is not None:
            _frozen_at_exit()
            with _uncollected() as collect:
                return asyncio.run(_from_current_index(path, refresh, query.answer, collect))
        assert action is not None
        return asyncio.run(_with_workspace(path, refresh, action))
    except FilescoutError as exc:
        print(f"filescout: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `filescout files | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
