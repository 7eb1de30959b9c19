"""What a client is shown: every text an answer's Struct carries, redacted on the way out.

Summaries, tags and reasons quote the workspace (a text file's first line, a constant's
definition, a commit subject), and a model or the team's shared cache may write anything into
them; these answers are made to be pasted into a chat model's prompt. So the faces pass each item
through `shown` where records become Structs, and every text field is redacted, whichever field
it is, a field added later included. Paths are the exception: a client must be able to open the
file, so a path is shown as it is (a model's prompt shows it redacted, `annotate.llm.shown_path`).

Redaction costs little here. The structural annotator redacts its summaries and tags as it
writes them (in the worker processes), so an item showing its annotation has only its other
fields looked at; an older index's, a model's and the shared cache's are screened here. `redact`
screens a text before its rules run, and an item's texts are screened as one (joined by
newlines, which no part of the screen needs to read across), so most items cost one screening
pass and the rules run only for the few that need them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from operator import attrgetter
from typing import Any, TypeVar

import msgspec

from filescout.annotate.structural import ANNOTATOR_ID as STRUCTURAL

KEPT = frozenset({"path", "root", "db_path"})
"""Fields that name a file or a directory: shown as they are."""
SELF_REDACTING = frozenset({STRUCTURAL})
"""Annotators that redact what they write: an item's `summary` and `tags` (what its `annotator`
wrote) need no second look when it names one of these."""
WRITTEN_BY_THE_ANNOTATOR = frozenset({"summary", "tags"})

S = TypeVar("S", bound=msgspec.Struct)


@cache
def _text_fields(kind: type[msgspec.Struct]) -> tuple[str, ...]:
    """The fields of `kind` that can hold text (a string, a list or dict of them, a Struct),
    paths and fixed vocabularies (Literal types) left out."""
    info = msgspec.inspect.type_info(kind)
    assert isinstance(info, msgspec.inspect.StructType)
    return tuple(field.name for field in info.fields if field.name not in KEPT and _holds_text(field.type))


def _holds_text(kind: msgspec.inspect.Type) -> bool:
    if isinstance(kind, msgspec.inspect.Metadata):  # Annotated[...]
        return _holds_text(kind.type)
    if isinstance(kind, msgspec.inspect.StrType | msgspec.inspect.StructType):
        return True
    if isinstance(kind, msgspec.inspect.UnionType):
        return any(_holds_text(member) for member in kind.types)
    if isinstance(kind, msgspec.inspect.ListType | msgspec.inspect.SetType | msgspec.inspect.FrozenSetType):
        return _holds_text(kind.item_type)
    if isinstance(kind, msgspec.inspect.DictType):
        return _holds_text(kind.key_type) or _holds_text(kind.value_type)
    return False


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to look at the items of one Struct type."""

    fields: tuple[str, ...]
    values: Callable[[Any], tuple[Any, ...]]
    plain: bool
    """Every field holds a string or None: the values themselves can be remembered (a language
    and an annotator's id come again and again)."""


def _plan(kind: type[msgspec.Struct], annotator_redacted: bool) -> _Plan:
    """The text fields of `kind` to look at, without what the annotator wrote if it redacted
    that itself."""
    fields = _text_fields(kind)
    if annotator_redacted:
        fields = tuple(name for name in fields if name not in WRITTEN_BY_THE_ANNOTATOR)
    getter = attrgetter(*fields) if fields else (lambda item: ())
    values = getter if len(fields) != 1 else (lambda item, get=getter: (get(item),))
    plain = all(_plain_text(field.type) for field in _struct_fields(kind) if field.name in fields)
    plan = _Plan(fields, values, plain)
    (_REDACTED_PLANS if annotator_redacted else _PLANS)[kind] = plan
    return plan


_PLANS: dict[type[msgspec.Struct], _Plan] = {}
_REDACTED_PLANS: dict[type[msgspec.Struct], _Plan] = {}


def _struct_fields(kind: type[msgspec.Struct]) -> tuple[msgspec.inspect.Field, ...]:
    info = msgspec.inspect.type_info(kind)
    assert isinstance(info, msgspec.inspect.StructType)
    return info.fields


def _plain_text(kind: msgspec.inspect.Type) -> bool:
    if isinstance(kind, msgspec.inspect.Metadata):
        return _plain_text(kind.type)
    if isinstance(kind, msgspec.inspect.UnionType):
        return all(_plain_text(member) for member in kind.types)
    return isinstance(kind, msgspec.inspect.StrType | msgspec.inspect.NoneType)


def shown(item: S) -> S:
    """`item` as a client may see it: its texts redacted, paths as they are. Changes the item in
    place when a text needs redacting (a Struct made for this answer), and returns it."""
    kind = item.__class__
    if getattr(item, "annotator", None) in SELF_REDACTING:
        plan = _REDACTED_PLANS.get(kind) or _plan(kind, True)
    else:
        plan = _PLANS.get(kind) or _plan(kind, False)
    values = plan.values(item)
    if plan.plain:
        verdict = _VERDICTS.get(values)
        if verdict is None:
            verdict = _remembered(values, _screened("\n".join(value for value in values if value)))
    else:
        texts: list[str] = []
        _collect(values, texts)
        verdict = bool(texts) and _screened("\n".join(texts))
    if verdict:
        for name in plan.fields:
            setattr(item, name, _redacted(getattr(item, name)))
    return item


REMEMBERED = 4096
"""Verdicts kept for plain values (the most recent few thousand)."""
_VERDICTS: dict[tuple[Any, ...], bool] = {}


def _remembered(values: tuple[Any, ...], verdict: bool) -> bool:
    if len(_VERDICTS) >= REMEMBERED:
        _VERDICTS.clear()
    _VERDICTS[values] = verdict
    return verdict


def _screened(text: str) -> bool:
    """Whether some redaction rule could change `text` (`redact.might_hold_secret`)."""
    if not text:
        return False
    # Imported here, not above: compiling the patterns costs startup 30 ms.
    from filescout.llm.redact import might_hold_secret

    return might_hold_secret(text)


def _collect(value: Any, texts: list[str]) -> None:
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, list | tuple | set | frozenset):
        for member in value:
            _collect(member, texts)
    elif isinstance(value, dict):
        for key, member in value.items():
            _collect(key, texts)
            _collect(member, texts)
    elif isinstance(value, msgspec.Struct):
        for name in _text_fields(type(value)):
            _collect(getattr(value, name), texts)


def _redacted(value: Any) -> Any:
    from filescout.llm.redact import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(member) for member in value]
    if isinstance(value, tuple | set | frozenset):
        return type(value)(_redacted(member) for member in value)
    if isinstance(value, dict):
        return {_redacted(key): _redacted(member) for key, member in value.items()}
    if isinstance(value, msgspec.Struct):
        return shown(value)
    return value
