"""The beam tree's overlay: the best path's key, then Fit, −, + and Show pruned, over the bottom-right corner
of the tree (they do not scroll with it)."""

from __future__ import annotations

import html

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from explorer.i18n import tr
from explorer.widgets.beam_tree_items import ACCENT

BAR_STYLE = (  # light in either theme, like the tree it lies on
    "#beam_tree_zoom_bar { background: rgba(255, 255, 255, 220); border: 1px solid #c8c8c8;"
    " border-radius: 4px; }"
    " #beam_tree_zoom_bar QLabel, #beam_tree_zoom_bar QToolButton { color: #202020; }"
    " #beam_tree_zoom_bar QToolButton { border: 1px solid transparent; border-radius: 3px; padding: 1px 5px; }"
    " #beam_tree_zoom_bar QToolButton:hover { background: #eeeeee; border-color: #c8c8c8; }"
    " #beam_tree_zoom_bar QToolButton:checked { background: #dbe8f7; border-color: #1f77b4; }"
)
BUTTONS = ("fit", "zoom_out", "zoom_in", "show_pruned")


class ZoomBar:
    """The bar (:attr:`widget`, a child of the tree's view), its key (:attr:`legend`) and its buttons by name
    (:attr:`buttons`: fit, zoom_out, zoom_in, show_pruned — the last one checkable)."""

    def __init__(self, view: QWidget) -> None:
        self.widget = QWidget(view)
        self.widget.setObjectName("beam_tree_zoom_bar")
        self.widget.setStyleSheet(BAR_STYLE)
        layout = QHBoxLayout(self.widget)
        layout.setContentsMargins(3, 2, 3, 2)
        layout.setSpacing(2)
        self.legend = QLabel(self.widget)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.legend)
        self.buttons: dict[str, QToolButton] = {}
        for key in BUTTONS:
            button = QToolButton(self.widget)
            button.setObjectName(f"beam_tree_{key}")
            button.setAutoRaise(True)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            layout.addWidget(button)
            self.buttons[key] = button
        self.buttons["show_pruned"].setCheckable(True)

    def retranslate(self) -> None:
        texts = {
            "fit": (tr("Fit"), tr("Fit the whole tree in view (or double-click empty space)")),
            "zoom_out": ("−", tr("Zoom out (Ctrl+wheel zooms around the cursor)")),
            "zoom_in": ("+", tr("Zoom in (Ctrl+wheel zooms around the cursor)")),
            "show_pruned": (tr("Show pruned"), tr("Draw every pruned continuation, not only their count")),
        }
        self.legend.setText(f"<b style='color:{ACCENT}'>━━</b> {html.escape(tr('best'))}")
        self.legend.setToolTip(
            tr(
                "The best hypothesis so far: the finished one with the highest ★, "
                "or while none has finished the most probable live prefix"
            )
        )
        for key, (text, tip) in texts.items():
            self.buttons[key].setText(text)
            self.buttons[key].setToolTip(tip)
        self.widget.adjustSize()

    def place(self, area: QRect) -> None:
        """Over the bottom-right corner of ``area`` (the view's viewport), above the tree."""
        size = self.widget.sizeHint()
        self.widget.setGeometry(area.right() - size.width() - 6, area.bottom() - size.height() - 6, *size.toTuple())
        self.widget.raise_()
