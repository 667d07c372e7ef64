"""Beam searches to draw, for the beam tree's tests (the view, its columns, its layout): the engine's steps of a real
decode, the target pieces the panel passes with them, and the least a column asks of the tree that shows it."""

from __future__ import annotations

from functools import cache

from PySide6.QtGui import QFont

from model.decoding.stepping import DecodeDriver
from model.io.snapshots import DecodeSettings


@cache
def pieces_of(session) -> tuple[str, ...]:
    """The target pieces, one tuple per session (the panel passes the same one at every step)."""
    tok = session.tgt_tok
    return tuple(tok.display_token(i) for i in range(tok.vocab_size))


def step_views(session, settings: DecodeSettings) -> list:
    """The engine's view after each step, to the end of the search."""
    driver = DecodeDriver(session)
    driver.start(settings)
    views = [driver.act("step")]
    while not views[-1].at_end:
        views.append(driver.act("step"))
    return views


class Host:
    """The least a column asks of its tree: fonts and the pieces."""

    pruned_shown = False

    def piece(self, token: int) -> str:
        return f"t{token}"

    def fonts(self, bold: bool) -> tuple[QFont, QFont]:
        return QFont(), QFont()
