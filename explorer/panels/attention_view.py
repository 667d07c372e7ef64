"""What the Attention panel's map shows, as a value: the state that presenter mode, scenes, the model map and first
launch set (``AttentionPanel.show_view``) and read back (``AttentionPanel.view``), never the panel's widgets.

No Qt here: a scene, a lesson or a test builds one without a window.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AttentionView:
    """The map's choices: the panel's defaults when it is created."""

    source: str = "decoding"  # decoding (the decoding panel's sentence) | pair (typed in the panel) | probe (training)
    kind: str = "encoder"  # encoder | decoder_self | cross; a kind the model's family lacks shows its first kind
    layer: int = 1  # 1-based, as the Layer box counts
    head: int = 1  # 1-based; not used while the heads are averaged or all shown
    average: bool = False  # the mean over the layer's heads instead of one head
    all_heads: bool = False  # every layer and head as a grid (the columns are heads, averaged or not)
    stretch: bool = False  # the colour scale from 0 to the largest weight shown, instead of 0 to 1
