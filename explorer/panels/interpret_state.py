"""What the Why panel shows, as a value (no Qt): presenter mode, scenes and tests set it, never the widgets."""

from __future__ import annotations

from dataclasses import dataclass

TABS = ("attribution", "lens")


@dataclass(frozen=True)
class WhyView:
    tab: str = "attribution"  # "attribution" or "lens"
    method: str = "integrated_gradients"  # one of model.interpret.results.ATTRIBUTION_METHODS
    steps: int = 64  # integrated gradients' steps (a decoding's earlier rows are kept: a step costs its own row)
    contrast: int | None = None  # the token Y of "why X rather than Y" (an id of the current step's candidates)
    on_source: bool = True  # the source chips of the Decoding panel tinted by the current step's row
