"""Decoding lanes: the same sentence decoded several ways side by side — greedy, beam search (with its tree),
sampling with several seeds — on one step cursor. Step moves every lane one token (a lane that has finished
stays at its end), Back moves them all back; each lane says the log-probability of its prefix in focus and
where it parts from the first lane.

Each lane is a :class:`~model.decoding.stepping.DecodeDriver` of its own (so each is exactly the stepped
decoding of its settings, its views the same as the Decoding panel's); no PyTorch is imported here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from model.decoding.stepping import DecodeDriver
from model.io.snapshots import DecodeSettings, DecodeView, Lane, LanesView

if TYPE_CHECKING:
    from model.session import Session

LANE_ACTIONS = ("step", "back", "run", "reset", "show")


def lane_label(s: DecodeSettings) -> str:
    """How a lane is named: "greedy", "beam 4", "sampling T 0.8, top-k 20, top-p 0.9, seed 2"."""
    if s.sampling:
        cuts = (f", top-k {s.sample_top_k}" if s.sample_top_k else "") + (f", top-p {s.top_p:g}" if s.top_p < 1 else "")
        return f"sampling T {s.temperature:g}{cuts}, seed {s.seed}"
    return "greedy" if s.beam_size == 1 else f"beam {s.beam_size}"


def standard_lanes(
    text: str, beam: int = 4, temperature: float = 0.8, seeds: tuple[int, ...] = (1, 2)
) -> list[DecodeSettings]:
    """Greedy, beam ``beam`` and sampling at ``temperature`` with each of ``seeds``."""
    base = DecodeSettings(text)
    return [
        base,
        replace(base, beam_size=beam),
        *(replace(base, temperature=temperature, seed=seed) for seed in seeds),
    ]


class LanesDriver:
    """Several step-through decodings of one sentence on one cursor (engine thread only)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.lanes: list[DecodeDriver] = []
        self.text = ""
        self.position = 0

    def start(self, settings: list[DecodeSettings]) -> LanesView:
        """New lanes, one per settings (all of the same sentence: the first's)."""
        if not settings:
            raise ValueError("decoding lanes need at least one way of decoding")
        text = settings[0].text
        self.lanes = []
        for s in settings:
            driver = DecodeDriver(self.session)
            driver.start(replace(s, text=text))
            self.lanes.append(driver)
        self.text, self.position = text, 0
        return self.view()

    def act(self, action: str) -> LanesView:
        """Step, back, run (every lane to its end), reset, or show."""
        if action not in LANE_ACTIONS:
            raise ValueError(f"unknown lanes action {action!r}")
        if not self.lanes:
            raise ValueError("start the lanes with a sentence first")
        if action == "step":
            if not self._at_end():
                self._goto(self.position + 1)
        elif action == "back":
            self._goto(max(0, self.position - 1))
        elif action == "reset":
            self._goto(0)
        elif action == "run":
            while not self._at_end():
                self._goto(self.position + 1)
        return self.view()

    def _goto(self, position: int) -> None:
        """Every lane to ``position``, or to its end if it finished before."""
        self.position = position
        for lane in self.lanes:
            view = lane.act("show")
            while view.position < position and not view.at_end:
                view = lane.act("step")
            while view.position > position:
                view = lane.act("back")

    def _at_end(self) -> bool:
        return all(lane.act("show").at_end for lane in self.lanes)

    def view(self) -> LanesView:
        views = [lane.act("show") for lane in self.lanes]
        first = views[0].focus_tokens
        lanes = tuple(
            Lane(lane_label(v.settings), v, focus_log_prob(v), parted(v.focus_tokens, first) if i else None)
            for i, v in enumerate(views)
        )
        return LanesView(self.text, self.position, lanes, self._at_end())


def focus_log_prob(view: DecodeView) -> float:
    """The log-probability of the view's prefix in focus: its live candidate's, or its finished hypothesis's."""
    if not view.steps:
        return 0.0
    last = view.steps[-1]
    for c in last.kept:
        if c.status == "live" and tuple(last.prefixes[c.parent] + [c.token]) == view.focus_tokens:
            return c.log_prob
    for _, _, log_prob, ids in view.hypotheses:
        if tuple(ids) == view.focus_tokens:
            return log_prob
    return float("nan")


def parted(mine: tuple[int, ...], first: tuple[int, ...]) -> int | None:
    """The first position where two prefixes differ (one ending before the other differs there); None: not."""
    for i, (a, b) in enumerate(zip(mine, first)):
        if a != b:
            return i
    return None if len(mine) == len(first) else min(len(mine), len(first))
