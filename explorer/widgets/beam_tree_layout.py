"""Where the beam-search tree's nodes go: one column per level, grown from the search's steps, and the best
path through them.

Columns already in the scene stay when the next step arrives (only new steps are added), and many new steps
at once (Run to end) are added a slice of time at a time (:meth:`BeamTreeLayout.add_pending`), so the GUI
never waits long for the tree.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QGraphicsScene

from explorer.widgets.beam_tree_items import LIVE, PITCH_X, PITCH_Y, ROOT, Column, Node, TreeHost, badge_rect, node_rect

if TYPE_CHECKING:  # types only: PyTorch is loaded by the engine, after the window shows
    from model.decoding.search import DecodeStep


class BeamTreeLayout:
    """The columns in ``scene``, level 0 the start (BOS) and level n the continuations step n - 1 considered,
    and the steps still to add."""

    def __init__(self, scene: QGraphicsScene, host: TreeHost) -> None:
        self.scene, self.host = scene, host
        self.columns: list[Column] = []  # one per level drawn; level 0 is the start
        self.steps: list[DecodeStep] = []  # the steps drawn (columns 1…)
        self.pending: list[DecodeStep] = []  # steps still to draw
        self.live_rows: list[np.ndarray] = []  # per level: rows of the prefixes entering the next step
        self.pieces: tuple[str, ...] = ()
        self.eos_id = -1

    def piece(self, token: int) -> str:
        """The token as text (the start and the end by name)."""
        if token < 0:
            return "<bos>"
        if token == self.eos_id:
            return "<eos>"
        return self.pieces[token] if token < len(self.pieces) else "?"

    @property
    def nodes(self) -> list[Node]:
        """Every node, drawn or not (pruned ones too), level by level."""
        return [node for column in self.columns for node in column.all_nodes()]

    # -- growing ---------------------------------------------------------------------------------
    def is_for(self, pieces: tuple[str, ...], eos_id: int) -> bool:
        """The tree has started, in this vocabulary (the panel passes the same pieces at every step)."""
        return pieces is self.pieces and eos_id == self.eos_id and bool(self.columns)

    def restart(self, pieces: tuple[str, ...], eos_id: int) -> None:
        """The start (BOS) alone, in the vocabulary ``pieces``."""
        self.clear()
        self.pieces, self.eos_id = pieces, eos_id
        root = {
            "status": np.array([ROOT], np.int8),
            "token": np.array([-1]),
            "log_prob": np.zeros(1),
            "score": np.full(1, np.nan),
            "live_index": np.zeros(1, np.int64),
        }
        self._add_column(Column(0, root, np.zeros(0, np.int64), self.host))

    def clear(self) -> None:
        for column in self.columns:
            self.scene.removeItem(column)
        self.columns, self.steps, self.pending, self.live_rows = [], [], [], []

    def keep_drawn(self, steps: Sequence[DecodeStep]) -> int:
        """Keep the columns of the steps drawn that ``steps`` begins with, take away the rest (Back, or steps
        computed again with new weights) and mark the others pending. Returns how many columns were kept."""
        same = 0
        while same < min(len(steps), len(self.steps)) and steps[same] is self.steps[same]:
            same += 1
        while len(self.steps) > same:
            self.steps.pop()
            self.live_rows.pop()
            self.scene.removeItem(self.columns.pop())
        self.pending = list(steps[same:])
        return same

    def add_pending(self, seconds: float) -> bool:
        """Add pending columns for up to ``seconds``; True while some are left."""
        start = time.perf_counter()
        while self.pending and (time.perf_counter() - start < seconds):
            step = self.pending.pop(0)
            level = len(self.columns)
            self._add_column(Column.from_step(step, level, self.live_rows[-1], self.host))
            self.steps.append(step)
        self.update_scene_rect()
        return bool(self.pending)

    def _add_column(self, column: Column) -> None:
        self.scene.addItem(column)
        self.columns.append(column)
        self.live_rows.append(column.live_rows())

    def update_scene_rect(self) -> None:
        rect = QRectF()
        for column in self.columns:
            rect = rect.united(column.boundingRect())
        self.scene.setSceneRect(rect.adjusted(-6, -6, 6, 6))

    def set_expanded(self, shown: bool, level: int | None = None) -> None:
        """Draw (or fold into their badge) the pruned nodes of one level, or of every level."""
        for column in self.columns if level is None else self.columns[level : level + 1]:
            column.set_expanded(shown)
        self.update_scene_rect()

    # -- reading it --------------------------------------------------------------------------------
    def best_path(self) -> list[tuple[Column, int]]:
        """(column, row) from the start to the best finished node, else to the best live prefix."""
        best: tuple[float, int, int] | None = None  # score, level, index
        for column in self.columns[1:]:
            if column.best >= 0:
                score = float(column.score[column.best])
                if best is None or score > best[0]:  # ties: the earlier step, as the search ranks them
                    best = (score, column.level, column.best)
        if best is not None:
            level, index = best[1], best[2]
        elif len(self.columns) > 1 and len(self.live_rows[-1]):
            level, index = len(self.columns) - 1, int(self.live_rows[-1][0])  # live index 0: the most probable
        else:
            return []
        path = []
        while level > 0:
            column = self.columns[level]
            path.append((column, int(column.rows[index])))
            level, index = level - 1, int(column.parent_row[index])  # kept parents: row == index
        path.append((self.columns[0], 0))
        return path[::-1]

    def kept_per_level(self) -> list[int]:
        """How many kept (live) nodes each level has — at most the beam size."""
        kept = [int((column.status == LIVE).sum()) for column in self.columns[1:]]
        while kept and not kept[-1]:
            kept.pop()
        return kept

    def prefix_row(self, level: int, live_index: int) -> int | None:
        """The row of the prefix the search kept at ``live_index`` of ``level`` (the start: level 0, index 0);
        None while that level is not drawn."""
        if level >= len(self.columns):
            return None
        rows = np.flatnonzero(self.columns[level].live_index == live_index)  # root and live nodes only
        return int(rows[0]) if len(rows) else None

    def node_at(self, scene_x: float, scene_y: float) -> Node | None:
        """The node drawn at this scene point (pruned ones only while their level shows them)."""
        level, row = math.floor(scene_x / PITCH_X), math.floor(scene_y / PITCH_Y)
        if not (0 <= level < len(self.columns)) or not node_rect(level, row).contains(scene_x, scene_y):
            return None
        column = self.columns[level]
        index = column.index(row)
        if index is None or (index >= column.n_kept and not column.expanded):
            return None
        return column.node(row)

    def badge_at(self, scene_x: float, scene_y: float) -> int | None:
        """The level whose "+N pruned" badge is at this point."""
        level = math.floor(scene_x / PITCH_X)
        if not 0 < level < len(self.columns) or not self.columns[level].n_pruned:
            return None
        column = self.columns[level]
        return level if badge_rect(level, column.n_kept).contains(scene_x, scene_y) else None
