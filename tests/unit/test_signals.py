"""Leaving a signal out: what the relevance benchmark's ablations rest on."""

from __future__ import annotations

import pytest

from filescout.relevance.signals import ENVIRONMENT, ENVIRONMENT_WITH, Signals


def test_every_signal_is_on_unless_left_out() -> None:
    assert Signals.from_environment({}) == Signals()
    assert Signals.from_environment({ENVIRONMENT: ""}) == Signals()


def test_signals_are_left_out_by_name() -> None:
    signals = Signals.from_environment({ENVIRONMENT: "history, imports"})
    assert (signals.mentions, signals.definitions, signals.imports, signals.history) == (
        True,
        True,
        False,
        False,
    )


def test_an_unknown_signal_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown signals \\['histroy'\\]"):
        Signals.from_environment({ENVIRONMENT: "histroy"})


def test_an_unproven_signal_is_off_unless_asked_for() -> None:
    assert not Signals().fit and not Signals.from_environment({}).fit
    assert Signals.from_environment({ENVIRONMENT_WITH: "fit"}).fit
    with pytest.raises(ValueError, match="unknown signals \\['history'\\]"):
        Signals.from_environment({ENVIRONMENT_WITH: "history"})  # a proven one is on already
