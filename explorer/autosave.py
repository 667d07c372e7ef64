"""Unsaved work kept when the window closed: offered back at the next launch, restored on request."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from explorer.commands import Load
from explorer.i18n import tr

if TYPE_CHECKING:
    from explorer.answers import RunInfo
    from explorer.engine_client import EngineClient
    from explorer.widgets.message_bar import MessageBar

ConfirmReplace = Callable[[Callable[[], object], str], None]


class Autosave:
    def __init__(self, folder: Path, client: EngineClient, bar: MessageBar) -> None:
        self.folder, self.client, self.bar = folder, client, bar
        self.restoring: tuple[int, Path] | None = None  # (load request, autosave file) being restored

    @property
    def path(self) -> Path:
        """Where the window writes unsaved work when it closes."""
        return self.folder / "autosave.ckpt"

    def offer(self, confirm_replace: ConfirmReplace, person_acts: Callable[[], None]) -> None:
        """A bar offering the newest autosave back (older ones are named, never deleted unasked)."""
        found = sorted(self.folder.glob("autosave*.ckpt"), key=lambda p: p.stat().st_mtime, reverse=True)
        if not found:
            return
        newest = found[0]
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(newest.stat().st_mtime))
        text = tr("Unsaved work from an earlier session was kept ({when}). Restore it?").format(when=when)
        if len(found) > 1:
            text += " " + tr("({n} older autosaves are in {folder}.)").format(n=len(found) - 1, folder=self.folder)

        def restore() -> None:
            person_acts()
            confirm_replace(lambda: self._load(newest), tr("Restoring the autosave replaces the current model."))

        self.bar.show_message(
            text, "warning", [(tr("Restore"), restore), (tr("Discard"), lambda: newest.unlink(missing_ok=True))]
        )

    def _load(self, path: Path) -> None:
        self.restoring = (self.client.send(Load(str(path), kind="autosave")), path)

    def arrived(self, info: RunInfo) -> None:
        if self.restoring is not None and info.origin == self.restoring[0]:
            self.restoring[1].unlink(missing_ok=True)  # the autosave is open again: its file is no longer needed
            self.restoring = None

    def failed(self, request_id: int) -> None:
        if self.restoring is not None and request_id == self.restoring[0]:
            self.restoring = None  # the autosave could not be opened: it stays where it is
