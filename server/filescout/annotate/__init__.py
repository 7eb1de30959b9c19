"""Annotators turn a file's content into a short summary, tags and symbols."""

from __future__ import annotations

from filescout.annotate.base import Annotator, FileToAnnotate
from filescout.annotate.heuristic import HeuristicAnnotator

__all__ = ["Annotator", "FileToAnnotate", "HeuristicAnnotator"]
