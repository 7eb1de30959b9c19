"""How long-running engine work tells the outside world how far it got.

The LSP layer turns this into work-done progress, the CLI into a terminal bar; the engine
only ever sees this interface.
"""

from __future__ import annotations

from typing import Protocol


class ProgressReporter(Protocol):
    def begin(self, title: str, message: str | None = None) -> None: ...

    def report(self, message: str | None = None, percentage: int | None = None) -> None: ...

    def end(self, message: str | None = None) -> None: ...

    def is_cancelled(self) -> bool:
        """True once the user asked to stop (e.g. the editor's cancel button)."""
        ...


class NullProgress:
    def begin(self, title: str, message: str | None = None) -> None:
        pass

    def report(self, message: str | None = None, percentage: int | None = None) -> None:
        pass

    def end(self, message: str | None = None) -> None:
        pass

    def is_cancelled(self) -> bool:
        return False
