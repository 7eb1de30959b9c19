"""Annotators turn a file's content into a short summary, tags and symbols."""

from __future__ import annotations

from filescout.annotate.base import Annotator, FileToAnnotate

__all__ = ["Annotator", "FileToAnnotate"]
