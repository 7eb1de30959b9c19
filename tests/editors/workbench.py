"""What a user of VS Code sees and does, through the workbench's DOM in Chromium: the status bar,
notification toasts, the command palette, quick picks and input boxes, editor tabs. Every read
waits until what is expected shows (the workbench updates asynchronously) and fails with what was
on screen instead."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from playwright.sync_api import Page

T = TypeVar("T")

STATUS_BAR = "#workbench\\.parts\\.statusbar .statusbar-item"
TOASTS = ".notifications-toasts .notification-toast"
QUICK_INPUT = ".quick-input-widget"
QUICK_INPUT_BOX = ".quick-input-widget .quick-input-box input"
QUICK_INPUT_ROWS = ".quick-input-widget .quick-input-list .monaco-list-row"
ACTIVE_TAB = ".tabs-container .tab.active"


class NotSeen(AssertionError):
    """What the test waited for did not show; the message says what did."""


def wait_until(
    read: Callable[[], T], check: Callable[[T], bool], timeout: float, what: str, interval: float = 0.25
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if check(value):
            return value
        if time.monotonic() > deadline:
            raise NotSeen(f"{what} not seen in {timeout:g} s; last seen: {value!r}")
        time.sleep(interval)


@dataclass
class Toast:
    message: str
    source: str
    buttons: list[str]


class Workbench:
    def __init__(self, page: Page) -> None:
        self.page = page

    def wait_ready(self, timeout: float = 90) -> None:
        self.page.wait_for_selector(STATUS_BAR, timeout=timeout * 1000)

    # The status bar.

    def status_items(self) -> list[str]:
        texts = self.page.locator(STATUS_BAR).all_inner_texts()
        return [" ".join(text.split()) for text in texts if text.strip()]

    def filescout_items(self) -> list[str]:
        return [text for text in self.status_items() if "filescout" in text.lower()]

    def wait_status(self, pattern: str, timeout: float = 60) -> list[str]:
        """The filescout status bar entries, once one matches `pattern` (a regular expression)."""
        return wait_until(
            self.filescout_items,
            lambda items: any(re.search(pattern, item) for item in items),
            timeout,
            f"a filescout status bar entry matching {pattern!r}",
        )

    def status_entry(self, pattern: str) -> dict[str, str]:
        """The first status bar entry whose text matches: its text, aria-label and id."""
        for handle in self.page.locator(STATUS_BAR).element_handles():
            text = " ".join(handle.inner_text().split())
            if re.search(pattern, text):
                return {
                    "text": text,
                    "label": handle.get_attribute("aria-label") or "",
                    "id": handle.get_attribute("id") or "",
                }
        raise NotSeen(f"no status bar entry matches {pattern!r}: {self.status_items()}")

    def hover_text(self, pattern: str, timeout: float = 10) -> str:
        """The tooltip of the status bar entry whose text matches `pattern`, as shown on hover."""
        entry = self.page.locator(STATUS_BAR).filter(has_text=re.compile(pattern)).first
        self.page.mouse.move(0, 0)  # a hover shows again only once the pointer has left
        entry.hover()
        hover = self.page.locator(".monaco-hover, .workbench-hover").first
        return wait_until(
            lambda: " ".join(hover.inner_text().split()) if hover.count() and hover.is_visible() else "",
            bool,
            timeout,
            f"the tooltip of the status bar entry {pattern!r}",
        )

    # Notifications.

    def toasts(self) -> list[Toast]:
        shown = []
        for toast in self.page.locator(TOASTS).all():
            message = toast.locator(".notification-list-item-message")
            source = toast.locator(".notification-list-item-source")
            buttons = toast.locator(".notification-list-item-buttons-container .monaco-button")
            shown.append(
                Toast(
                    message=" ".join(message.inner_text().split()) if message.count() else "",
                    source=" ".join(source.inner_text().split()) if source.count() else "",
                    buttons=[" ".join(text.split()) for text in buttons.all_inner_texts()],
                )
            )
        return shown

    def wait_toast(self, pattern: str, timeout: float = 30) -> Toast:
        toasts = wait_until(
            self.toasts,
            lambda toasts: any(re.search(pattern, toast.message) for toast in toasts),
            timeout,
            f"a notification matching {pattern!r}",
        )
        return next(toast for toast in toasts if re.search(pattern, toast.message))

    def click_toast_button(self, pattern: str, button: str) -> None:
        toast = self.page.locator(TOASTS).filter(has_text=re.compile(pattern)).first
        toast.locator(".monaco-button", has_text=button).first.click()

    def dismiss_toasts(self) -> None:
        """Clear All Notifications, so the next assertions see only what comes after."""
        self.run_command("Notifications: Clear All Notifications")
        wait_until(self.toasts, lambda toasts: not toasts, 10, "no notification")

    # The command palette, quick picks and input boxes.

    def run_command(self, title: str, timeout: float = 15) -> None:
        """Run a command from the command palette (F1) by its title, as a user types it."""
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("F1")
        box = self.page.locator(QUICK_INPUT_BOX)
        box.wait_for(state="visible", timeout=timeout * 1000)
        box.fill(f">{title}")
        row = self.page.locator(QUICK_INPUT_ROWS).filter(has_text=title).first
        row.wait_for(state="visible", timeout=timeout * 1000)
        wait_until(
            lambda: self.quick_pick_rows()[:1],
            lambda rows: bool(rows) and title in rows[0],
            timeout,
            f"the command {title!r} first in the palette",
        )
        box.press("Enter")

    def quick_input_visible(self) -> bool:
        widget = self.page.locator(QUICK_INPUT)
        return widget.count() > 0 and widget.first.is_visible()

    def quick_input_title(self) -> str:
        parts = self.page.locator(
            ".quick-input-widget .quick-input-title, .quick-input-widget .quick-input-message"
        )
        return " ".join(" ".join(text.split()) for text in parts.all_inner_texts() if text.strip())

    def placeholder(self) -> str:
        box = self.page.locator(QUICK_INPUT_BOX)
        return (box.get_attribute("placeholder") or "") if box.count() else ""

    def wait_input(self, timeout: float = 15) -> None:
        self.page.locator(QUICK_INPUT_BOX).wait_for(state="visible", timeout=timeout * 1000)

    def answer(self, text: str) -> None:
        """Type into the open input box or quick pick and press Enter."""
        self.wait_input()
        box = self.page.locator(QUICK_INPUT_BOX)
        box.fill(text)
        box.press("Enter")

    def quick_pick_rows(self) -> list[str]:
        if not self.quick_input_visible():
            return []
        rows = self.page.locator(QUICK_INPUT_ROWS)
        return [" ".join(text.split()) for text in rows.all_inner_texts()]

    def wait_rows(self, check: Callable[[list[str]], bool], what: str, timeout: float = 30) -> list[str]:
        return wait_until(self.quick_pick_rows, check, timeout, what)

    def choose(self, text: str) -> None:
        """Pick the quick pick row that contains `text`."""
        self.page.locator(QUICK_INPUT_ROWS).filter(has_text=text).first.click()

    # Editors.

    def active_tab(self) -> str:
        tab = self.page.locator(ACTIVE_TAB)
        return (tab.first.get_attribute("aria-label") or "") if tab.count() else ""

    def wait_active_tab(self, pattern: str, timeout: float = 20) -> str:
        return wait_until(
            self.active_tab,
            lambda label: bool(re.search(pattern, label)),
            timeout,
            f"an editor tab {pattern!r}",
        )
