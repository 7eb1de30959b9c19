"""The connection (`lsp/connection.py`, `lsp/partial_results.py`) overrides private methods of pygls's
protocol and reads one of its private attributes; pyproject pins pygls to the minor version they
were written against. This test fails, naming what moved, when an installed pygls no longer has
them as the overrides expect — before a subtly broken server does."""

from __future__ import annotations

import inspect
from importlib.metadata import version

import pytest
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol

from filescout.lsp.connection import CheckedProtocol

PINNED_MINOR = "2.1"
OVERRIDDEN = {
    "_execute_handler": ["self", "msg_id", "handler", "callback", "args", "kwargs"],
    "_run_generator": ["self", "future", "gen", "result_future"],
    "_send_response": ["self", "msg_id", "result", "error"],
    "send_request": ["self", "method", "params", "callback", "msg_id"],
    "set_writer": ["self", "writer", "include_headers"],
}
CALLED = ["handle_message", "structure_message", "get_message_type"]


def test_pyproject_pins_the_minor_version_installed() -> None:
    assert version("pygls").startswith(PINNED_MINOR + "."), (
        f"pygls {version('pygls')} is installed; the overrides were checked against {PINNED_MINOR}.x: "
        "review lsp/connection.py and lsp/partial_results.py, then move the pin in pyproject.toml and here"
    )


@pytest.mark.parametrize(("name", "parameters"), OVERRIDDEN.items())
def test_each_overridden_method_still_exists_with_the_parameters_it_is_called_with(
    name: str, parameters: list[str]
) -> None:
    original = getattr(JsonRPCProtocol, name, None)
    assert original is not None, f"pygls's JsonRPCProtocol has no {name} any more"
    assert list(inspect.signature(original).parameters) == parameters
    assert getattr(CheckedProtocol, name) is not original  # ours is in the chain
    assert issubclass(CheckedProtocol, LanguageServerProtocol)


@pytest.mark.parametrize("name", CALLED)
def test_each_method_the_connection_calls_exists(name: str) -> None:
    assert callable(getattr(JsonRPCProtocol, name, None)), f"pygls's protocol has no {name}"


def test_the_request_futures_the_sweep_prunes_are_where_it_looks() -> None:
    """`_execute_handler` drops finished futures from `_request_futures`; were pygls to keep them
    elsewhere, the sweep would find nothing and memory would grow with every notification."""
    assert "_request_futures" in inspect.getsource(JsonRPCProtocol.__init__)
    assert "_request_futures" in inspect.getsource(JsonRPCProtocol._execute_handler)
