"""What the training panel shows, as plain values (no Qt): presenter mode, scenes and lessons set this, never
the panel's widgets (``TrainingPanel.set_state``)."""

from __future__ import annotations

from dataclasses import dataclass

SMOOTHING_STEPS = 100  # the smoothing slider's steps per unit of weight (0 to 0.99)


@dataclass(frozen=True)
class TrainingViewState:
    """How the training panel shows its plots."""

    presenting: bool = False  # the plots get the panel: the settings form, the run list and most controls hidden
    smoothing: float = 0.6  # the curves' exponential smoothing weight, 0 (none) to 0.99
    log_scale: bool = False  # loss, learning rate and gradient norm on a log scale

    def __post_init__(self) -> None:
        if not 0.0 <= self.smoothing < 1.0:
            raise ValueError(f"smoothing is a weight from 0 to 0.99, not {self.smoothing}")

    @property
    def slider_value(self) -> int:
        """The smoothing slider's position for this weight."""
        return round(self.smoothing * SMOOTHING_STEPS)


def smoothing_at(slider_value: int) -> float:
    """The smoothing weight at the slider's position ``slider_value``."""
    return slider_value / SMOOTHING_STEPS
