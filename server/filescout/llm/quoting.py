"""Workspace text placed in a model prompt as data that cannot pass for anything else.

Prompts put what comes from the workspace (paths, outlines, excerpts, summaries, tags, and the
reasons a model gave about them) between delimiters and say it is data. Text from a file may try
to end that block early (`</files>`, also nested as `</fi</files>les>`, spaced, in another case,
with zero-width characters inside or fullwidth brackets), to pass for a chat-template turn
boundary (`<|im_start|>system`, `[INST]`, `<|eot_id|>`), or to end the code fence it sits in.
Here such text keeps its letters and loses what makes it markup: its angle brackets become
single guillemets, invisible characters go, and an excerpt is fenced with more backticks than it contains.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

INVISIBLE = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)
"""Control, zero-width and bidirectional characters: nothing a reader sees, so nothing data
needs, and each can hide a delimiter from a check that reads the text literally."""
OPEN_ANGLE = "<\uff1c\ufe64\u2329\u3008"
CLOSE_ANGLE = ">\uff1e\ufe65\u232a\u3009"
ANGLES = str.maketrans(dict.fromkeys(OPEN_ANGLE, "‹") | dict.fromkeys(CLOSE_ANGLE, "›"))
TURN_MARKER = re.compile(
    rf"[{OPEN_ANGLE}]\s*\|[^|\n]{{0,40}}\|\s*[{CLOSE_ANGLE}]"  # <|im_start|>, <|eot_id|>, ...
    rf"|[{OPEN_ANGLE}]{{1,2}}\s*/?\s*(?:s|SYS|start_of_turn|end_of_turn)\s*[{CLOSE_ANGLE}]{{1,2}}"
    r"|\[\s*/?\s*INST\s*\]",
    re.IGNORECASE,
)
BLOCK_NAMES = ("files", "tags")
"""The delimiters the prompts use; a tag of any of these names in data is defused."""
BACKTICKS = re.compile(r"`+")


def _tag(names: Iterable[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in names)
    brackets = OPEN_ANGLE + CLOSE_ANGLE
    return re.compile(
        rf"[{OPEN_ANGLE}]\s*/?\s*(?:{alternatives})\b[^{brackets}]*[{CLOSE_ANGLE}]", re.IGNORECASE
    )


BLOCK_TAG = _tag(BLOCK_NAMES)


def _unbracket(match: re.Match[str]) -> str:
    return match.group(0).translate(ANGLES).replace("[", "(").replace("]", ")")


def defuse(text: str) -> str:
    """`text` with no tag that opens or closes a prompt's block and no turn marker; repeated
    until none is left, so defusing one cannot assemble another around it."""
    text = INVISIBLE.sub("", text)
    while True:
        defused = TURN_MARKER.sub(_unbracket, BLOCK_TAG.sub(_unbracket, text))
        if defused == text:
            return text
        text = defused


def one_line(text: str) -> str:
    """Defused, on one line: a listing's entry cannot start another entry or a new section."""
    return " ".join(defuse(text).split())


def lines(text: str) -> str:
    """Defused, line breaks kept (an excerpt of a file); carriage returns become line breaks."""
    return defuse(text.replace("\r\n", "\n").replace("\r", "\n"))


def fenced(text: str) -> str:
    """`text` in a code fence longer than any run of backticks in it, so nothing inside can
    close it."""
    longest = max((len(run) for run in BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def block(name: str, body: str) -> str:
    """`body` between `<name>` and `</name>`; the body must have been defused."""
    return f"<{name}>\n{body}\n</{name}>"
