"""The architecture's import rules (docs/ARCHITECTURE.md, "The rules"), checked on every module
of the server: each room imports only the rooms below it, the protocol's messages are built only
at the faces, and a worker process never loads the engine, the index's database code or the
protocol. A forbidden import fails here, naming the module, the line and the rule."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "filescout"

LOOSE = {"__init__", "__main__", "cli", "log", "worker_process"}
"""Modules outside the rooms: the package, the commands and what starts a process."""
ROOMS = [
    "core",
    "vcs",
    "scan",
    "llm",
    "annotate",
    "index",
    "relevance",
    "engine",
    "rpc",
    "door",
    "lsp",
    "mcp",
]
"""Rooms in the order of the data's way; each may import the ones listed for it below."""
MAY_IMPORT: dict[str, set[str]] = {
    "core": {"core"},
    "vcs": {"core", "vcs"},
    "scan": {"core", "vcs", "scan"},
    "llm": {"core", "llm"},
    "annotate": {"core", "vcs", "scan", "llm", "annotate"},
    "index": {"core", "index"},
    "relevance": {"core", "vcs", "scan", "llm", "index", "relevance"},
    "engine": {"core", "scan", "vcs", "llm", "annotate", "index", "relevance", "engine", "worker_process"},
    "rpc": {"core", "rpc"},
    "door": {"core", "rpc", "engine", "door"},
    "lsp": {"core", "rpc", "engine", "door", "lsp", "log"},
    "mcp": {"core", "rpc", "engine", "door", "mcp", "log", "llm"},
}
FACES = {
    "filescout.cli",
    "filescout.engine.workspace",
    "filescout.engine.listing",
    "filescout.engine.answers",
    "filescout.engine.status",
    "filescout.engine.shown",
    "filescout.engine.board",
    "filescout.engine.hooks",
    "filescout.engine.sharing",
}
"""Where records become the protocol's Structs (and the rooms lsp, mcp, rpc, door, which are faces)."""
WORKER_RUNS = ("filescout.worker_process", "filescout.annotate.jobs", "filescout.scan.tree")
"""What a worker process imports: its start, and the modules of the jobs it is sent (the
annotation batches, the scan's reads)."""
WORKER_FORBIDDEN = ("filescout.engine", "filescout.index", "filescout_protocol", "aiosqlite", "sqlite3")


@dataclass(frozen=True)
class Import:
    module: str
    target: str
    names: tuple[str, ...]
    line: int
    deferred: bool
    """Inside a function: loaded when that runs, not when the module is."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    module = module_name(path)
    found: list[Import] = []
    deferred_lines = {
        node.lineno
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(function)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    }
    typing_only = {
        node.lineno
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    }
    for node in ast.walk(tree):
        if node.lineno in typing_only if isinstance(node, (ast.Import, ast.ImportFrom)) else True:
            continue
        deferred = node.lineno in deferred_lines
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, (), node.lineno, deferred) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names = tuple(alias.name for alias in node.names)
            found.append(Import(module, node.module, names, node.lineno, deferred))
            # `from filescout.scan import tree` imports the module filescout.scan.tree
            found += [
                Import(module, f"{node.module}.{name}", (), node.lineno, deferred)
                for name in names
                if (PACKAGE.parent / node.module.replace(".", "/") / f"{name}.py").exists()
            ]
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))
ALL_IMPORTS = [found for path in MODULES for found in imports_of(path)]


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_module_lives_in_a_room() -> None:
    loose = [module_name(path) for path in MODULES if path.parent == PACKAGE and path.stem not in LOOSE]
    assert loose == [], f"modules outside the rooms: {loose}"
    rooms = {path.parent.name for path in MODULES if path.parent != PACKAGE}
    assert rooms == set(ROOMS), rooms ^ set(ROOMS)


def forbidden_between_rooms() -> list[str]:
    found = []
    for item in ALL_IMPORTS:
        if not item.target.startswith("filescout."):
            continue
        source, target = room_of(item.module), room_of(item.target)
        if source in MAY_IMPORT and target not in MAY_IMPORT[source]:
            found.append(
                f"{item.module}:{item.line} imports {item.target}: {source}/ may not import {target}"
            )
    return found


def test_each_room_imports_only_the_rooms_below_it() -> None:
    assert forbidden_between_rooms() == []


def forbidden_protocol_imports() -> list[str]:
    """The protocol's settings Structs are the configuration schema, which any room that is
    configured may read; its messages (params, results, items, statuses) exist at the faces."""
    found = []
    for item in ALL_IMPORTS:
        if not item.target.startswith("filescout_protocol"):
            continue
        if room_of(item.module) in {"lsp", "mcp", "rpc", "door"} or item.module in FACES:
            continue
        messages = [name for name in item.names if not name.endswith("Settings")]
        if room_of(item.module) in {"engine", "llm", "annotate"} and item.names and not messages:
            continue
        found.append(
            f"{item.module}:{item.line} imports {', '.join(messages) or item.target} from the protocol"
        )
    return found


def test_the_protocols_messages_are_built_only_at_the_faces() -> None:
    assert forbidden_protocol_imports() == []


def test_pygls_and_lsprotocol_only_in_the_lsp_face() -> None:
    found = [
        f"{item.module}:{item.line} imports {item.target}"
        for item in ALL_IMPORTS
        if item.target.split(".")[0] in {"pygls", "lsprotocol"} and room_of(item.module) != "lsp"
    ]
    assert found == []


def test_nothing_below_the_engine_imports_the_engine() -> None:
    found = [
        f"{item.module}:{item.line} imports {item.target}"
        for item in ALL_IMPORTS
        if item.target.startswith("filescout.engine")
        and room_of(item.module) in {"core", "scan", "vcs", "llm", "annotate", "index", "relevance"}
    ]
    assert found == []


def loaded_by(module: str, seen: set[str] | None = None) -> set[str]:
    """What importing `module` loads of the package and beyond, following the package's own
    module-level imports (deferred ones load only when their function runs)."""
    seen = set() if seen is None else seen
    for item in ALL_IMPORTS:
        if item.module != module or item.deferred or item.target in seen:
            continue
        seen.add(item.target)
        parts = item.target.split(".")
        for end in range(2, len(parts) + 1):  # a module loads its packages' __init__ first
            package = ".".join(parts[:end])
            if package.startswith("filescout.") and package not in seen | {item.target}:
                seen.add(package)
                loaded_by(package, seen)
        if item.target.startswith("filescout."):
            loaded_by(item.target, seen)
    return seen


def test_a_worker_process_loads_neither_the_engine_nor_the_index_nor_the_protocol() -> None:
    loaded: set[str] = set()
    for module in WORKER_RUNS:
        loaded |= loaded_by(module)
    found = sorted(name for name in loaded if name.startswith(WORKER_FORBIDDEN))
    assert found == [], f"a worker process would load {found}"
    assert {"filescout.annotate.structural", "filescout.core.beneath"} <= loaded  # the rule sees them


@pytest.mark.parametrize(
    ("rule", "module", "source"),
    [
        (
            forbidden_between_rooms,
            "filescout.index.catalogue",
            "from filescout.relevance.find import Question\n",
        ),
        (
            forbidden_protocol_imports,
            "filescout.index.catalogue",
            "from filescout_protocol.types import FileItem\n",
        ),
    ],
)
def test_a_forbidden_import_is_named(rule, module: str, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules are not vacuous: one forbidden line, added to a module, is reported by name."""
    path = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")
    planted = [*imports_of(path), *imports_from_text(module, source)]
    monkeypatch.setattr(
        __import__(__name__, fromlist=["ALL_IMPORTS"]),
        "ALL_IMPORTS",
        [item for item in ALL_IMPORTS if item.module != module] + planted,
    )
    assert any(module in line for line in rule())


def imports_from_text(module: str, source: str) -> list[Import]:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ImportFrom) and node.module is not None
    return [Import(module, node.module, tuple(alias.name for alias in node.names), 1, False)]


def test_no_modules_import_each_other() -> None:
    """A circle of imports makes the import order matter, and an import moved inside a function
    to get round it hides the circle: both count. A package's `__init__` re-exports its
    modules and is part of them."""
    graph: dict[str, set[str]] = {}
    for item in ALL_IMPORTS:
        inside = item.module.startswith(item.target + ".")  # a module of that package
        if item.target.startswith("filescout.") and item.target != item.module and not inside:
            graph.setdefault(item.module, set()).add(item.target)
    circles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


PIPELINE = ("evidence", "fusion", "reasons", "prefilter")
"""The prefilter's one pass (relevance/prefilter.py), in order: the evidence is read, fused into
a ranking, explained, and the prefilter runs the stages. A stage imports only those before it."""
PURE_STAGES = ("fusion", "reasons")
"""Stages after the reads read nothing: what they weigh or name was read once, as evidence."""


def _stage(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) == 3 and parts[1] == "relevance" and parts[2] in PIPELINE:
        return parts[2]
    return None


def pipeline_backflows(imports: list[Import]) -> list[str]:
    found = []
    for item in imports:
        source, target = _stage(item.module), _stage(item.target)
        if source and target and PIPELINE.index(target) > PIPELINE.index(source):
            found.append(f"{item.module}:{item.line} imports {item.target}, a later stage")
    return found


def reads_in(module: str, source: str) -> list[str]:
    """Coroutines and the index's handle in a stage that must read nothing."""
    tree = ast.parse(source)
    found = [
        f"{module}:{node.lineno} defines the coroutine {node.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.AsyncFunctionDef)
    ]
    found += [
        f"{module}:{node.lineno} imports the index"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "filescout.index"
    ]
    return found


def test_the_prefilters_stages_go_one_way_and_only_the_first_reads() -> None:
    assert pipeline_backflows(ALL_IMPORTS) == []
    stages = {_stage(module_name(path)): path for path in MODULES if _stage(module_name(path))}
    assert set(stages) == set(PIPELINE)
    for name in PURE_STAGES:
        assert reads_in(name, stages[name].read_text(encoding="utf-8")) == []


def test_a_stage_reaching_back_or_reading_is_named() -> None:
    """Not vacuous: a later stage imported by an earlier one, or a read in a pure stage, is named."""
    planted = imports_from_text(
        "filescout.relevance.fusion", "from filescout.relevance.reasons import Candidate\n"
    )
    assert pipeline_backflows(planted) == [
        "filescout.relevance.fusion:1 imports filescout.relevance.reasons, a later stage"
    ]
    assert reads_in("fusion", "from filescout.index import Index\nasync def more(index): ...\n") == [
        "fusion:2 defines the coroutine more",
        "fusion:1 imports the index",
    ]
