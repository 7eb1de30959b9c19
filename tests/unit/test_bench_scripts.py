"""Every benchmark starts from a fresh clone as the docs say (`python bench/NAME.py`), with the
harness found without path edits, and no test or benchmark edits `sys.path` to find it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "bench").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_each_benchmark_starts_and_describes_itself(script: Path, tmp_path: Path) -> None:
    """`--help` imports everything the script imports (the harness too) and parses its options;
    run from elsewhere, as the docs' commands may be, with no PYTHONPATH."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, str(script), "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


def _edits_the_path(tree: ast.AST) -> list[int]:
    """Lines that touch `sys.path`: a test or benchmark has no reason to, reading or changing it."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            found.append(node.lineno)
    return found


@pytest.mark.parametrize("folder", ["bench", "tests"])
def test_nothing_edits_the_import_path(folder: str) -> None:
    offenders = []
    for path in sorted((REPO / folder).rglob("*.py")):
        lines = _edits_the_path(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        offenders += [f"{path.relative_to(REPO)}:{line}" for line in lines]
    assert offenders == [], (
        "sys.path used; the harness is found through pyproject's pythonpath: " + ", ".join(offenders)
    )


def test_the_check_sees_a_path_edit() -> None:
    assert _edits_the_path(ast.parse("import sys\nsys.path.insert(0, 'x')\n")) == [2]
    assert _edits_the_path(ast.parse("import sys\nprint(sys.argv)\n")) == []
