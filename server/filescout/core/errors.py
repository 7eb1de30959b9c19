"""Errors the engine raises; the LSP layer maps them to JSON-RPC error codes."""

from __future__ import annotations


class FilescoutError(Exception):
    """Base of every error the engine reports to a caller."""


class InvalidParams(FilescoutError):
    """A caller passed something unusable; the message names the field."""


class WorkspaceUnavailable(FilescoutError):
    """The workspace or its index cannot be used."""


class ReadOnly(FilescoutError):
    """This process serves reads; another one writes the index."""
