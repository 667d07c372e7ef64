"""How a vocabulary's pieces are written in every view (no Qt here: the engine's thread works them out for a new
vocabulary, so that the window's thread does not spend ~0.15 s on 65,001 pieces when a model opens)."""

from __future__ import annotations

# characters a piece may hold that would print as nothing (or break the line): each written as a visible sign —
# a space ␣, a line break ↵, a tab ⇥, another control character its Unicode picture (U+241E ␞ for U+001E)
INVISIBLE = {c: chr(0x2400 + c) for c in range(0x20)} | {0x7F: "␡", 0x20: "␣", 0x0A: "↵", 0x0D: "↵", 0x09: "⇥"}


def shown_piece(piece: str) -> str:
    """A piece as every view writes it: a space as ␣ (GPT-2's byte-level “ the” is “␣the”), a line break as ↵,
    another control character as its picture, an empty piece as ∅. Only the labels change, never the text."""
    return piece.translate(INVISIBLE) or "∅"


_SHOWN: list[tuple[tuple[str, ...], tuple[str, ...]]] = []  # (a vocabulary's pieces, as shown) of the last few


def shown_pieces(pieces: tuple[str, ...]) -> tuple[str, ...]:
    """Every piece of a vocabulary as :func:`shown_piece` writes it, worked out once per tuple of pieces: the engine
    sends the same tuple again for each checkpoint of a followed run, and 65,001 pieces take ~0.15 s (the panels
    that show pieces share the result; the engine's thread works it out first, as it describes a run)."""
    for given, shown in _SHOWN:
        if given is pieces:
            return shown
    _SHOWN[:] = [*_SHOWN[-3:], (pieces, tuple(map(shown_piece, pieces)))]
    return _SHOWN[-1][1]
