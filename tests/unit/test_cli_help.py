"""`filescout COMMAND -h` is the terminal's manual: every visible command describes itself, gives
an example and says what each of its arguments and flags does. The checks walk the parser, so a
command or flag added without help fails here."""

from __future__ import annotations

import argparse

import pytest

from filescout import __version__, cli
from filescout import log as logsetup
from filescout.cli import build_parser


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The commands `filescout -h` lists (a hidden one, left out of that list, is not the user's)."""
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    listed = [choice.dest for choice in commands._choices_actions if choice.help is not argparse.SUPPRESS]
    return {name: commands.choices[name] for name in listed}


def _help_output(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 0
    return capsys.readouterr().out


VISIBLE = sorted(_subcommands(build_parser()))


def test_the_commands_are_listed() -> None:
    assert {"serve", "mcp", "index", "files", "find", "status", "cache"} <= set(VISIBLE)


@pytest.mark.parametrize("name", VISIBLE)
def test_every_command_describes_itself_with_an_example(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sub = _subcommands(build_parser())[name]
    text = _help_output(capsys, [name, "-h"])
    assert sub.description, f"`filescout {name}` has no description"
    assert sub.description.splitlines()[0] in text
    assert "examples:" in text
    examples = text.split("examples:", 1)[1]
    assert f"  filescout {name}" in examples, f"`filescout {name} -h` shows no example of it:\n{text}"
    # argparse wraps the rest to the terminal; these two are laid out by hand.
    for line in [*sub.description.splitlines(), *(sub.epilog or "").splitlines()]:
        assert len(line) <= 80, f"`filescout {name} -h` has an overlong line: {line!r}"


@pytest.mark.parametrize("name", ["", *VISIBLE])
def test_every_argument_and_flag_has_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    sub = _subcommands(parser)[name] if name else parser
    text = _help_output(capsys, [name, "-h"] if name else ["-h"])
    usage = text.split("\n\n", 1)[0]
    for action in sub._actions:
        if action.help is argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        what = "/".join(action.option_strings) or str(action.metavar or action.dest)
        assert action.help and action.help.strip(), f"`filescout {name}`: {what} has no help"
        # The help text is printed (wrapped, so compared word by word) and the flag is in the usage.
        assert " ".join(action.help.split()[:3]) in " ".join(text.split()), f"{what}: help not shown"
        if action.option_strings:
            assert action.option_strings[0] in usage, f"`filescout {name}`: {what} is not in the usage"


def test_find_usage_reads_as_it_is_parsed(capsys: pytest.CaptureFixture[str]) -> None:
    usage = " ".join(_help_output(capsys, ["find", "-h"]).split("\n\n", 1)[0].split())
    assert usage.startswith("usage: filescout find [-h] [--limit N]")
    assert usage.endswith(" [PATH] QUERY...")
    assert "[[PATH]" not in usage


@pytest.mark.parametrize(
    ("argv", "words", "limit"),
    [
        (["find", "where are refunds issued"], ["where are refunds issued"], 10),
        (["find", ".", "where", "are", "refunds", "--limit", "5"], [".", "where", "are", "refunds"], 5),
        (["find", "--limit", "3", "--no-model", "src", "refunds"], ["src", "refunds"], 3),
    ],
)
def test_find_keeps_its_invocations(argv: list[str], words: list[str], limit: int) -> None:
    args = build_parser().parse_args(argv)
    assert (args.words, args.limit) == (words, limit)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert _help_output(capsys, ["--version"]).strip() == f"filescout {__version__}"


def test_the_log_levels_offered_are_the_ones_logging_is_set_up_with() -> None:
    """`cli.py` names them without loading `log.py` (and `logging`), for a command the door
    answers."""
    assert set(cli.LOG_LEVELS) == set(logsetup.LEVELS)
    assert list(cli.LOG_LEVELS) == sorted(cli.LOG_LEVELS)  # as `--help` lists them


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        (["find", ".", "refunds", "--log-level", "info"], "info"),
        (["--log-level", "debug", "find", ".", "refunds"], "debug"),
        (["--log-level", "debug", "status", ".", "--log-level", "error"], "error"),
        (["files", "."], "warning"),
    ],
)
def test_the_log_level_may_follow_the_command(
    argv: list[str], level: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FILESCOUT_LOG_LEVEL", raising=False)
    assert build_parser().parse_args(argv).log_level == level
