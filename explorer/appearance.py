"""Light and dark themes, and presenter mode's larger fonts."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication, QGraphicsView, QWidget

THEMES = ("light", "dark")


def dark_palette() -> QPalette:
    p = QPalette()
    R = QPalette.ColorRole
    colours = {
        R.Window: "#2b2d30", R.WindowText: "#e6e6e6", R.Base: "#1f2023",
        R.AlternateBase: "#2b2d30", R.ToolTipBase: "#3c3f41", R.ToolTipText: "#e6e6e6",
        R.Text: "#e6e6e6", R.Button: "#3a3d41", R.ButtonText: "#e6e6e6",
        R.BrightText: "#ff6b6b", R.Link: "#6aa9ff", R.Highlight: "#3d6fb6",
        R.HighlightedText: "#ffffff", R.PlaceholderText: "#8a8a8a",
    }  # fmt: skip
    for role, colour in colours.items():
        p.setColor(role, QColor(colour))
    for role in (R.Text, R.ButtonText, R.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor("#777777"))
    return p


def foreground() -> QColor:
    return QApplication.palette().color(QPalette.ColorRole.WindowText)


def legend_brush():
    """A legend box in the window's own colour, slightly see-through."""
    colour = QColor(QApplication.palette().color(QPalette.ColorRole.Window))
    colour.setAlpha(200)
    return pg.mkBrush(colour)


def apply_theme(name: str, root: QWidget | None = None) -> None:
    """Switch the application's palette, and restyle the plots under ``root`` to match."""
    # setPalette and style are static: they act on the running QApplication
    QApplication.setPalette(dark_palette() if name == "dark" else QApplication.style().standardPalette())
    fg = foreground()
    pg.setConfigOption("foreground", fg)
    if root is not None:
        restyle_plots(root, fg)


def _plot_items(root: QWidget):
    for view in root.findChildren(pg.GraphicsView):
        for item in view.scene().items():
            if isinstance(item, pg.PlotItem):
                yield item


def restyle_plots(root: QWidget, fg: QColor, tick_font: QFont | None = None) -> None:
    """Axes, their labels, titles and legends under ``root`` in ``fg`` (and ``tick_font``). Plots made later
    take ``fg`` from pyqtgraph's "foreground" option, which :func:`apply_theme` sets."""
    for view in root.findChildren(QGraphicsView):
        # pyqtgraph caches each view's background, painted in the palette it was first drawn with: without
        # this, a map keeps the old theme's backdrop behind axis labels drawn in the new theme's colour
        view.resetCachedContent()
        view.viewport().update()
    for item in _plot_items(root):
        item.titleLabel.setAttr("color", fg)
        if item.titleLabel.text:  # an empty title stays hidden (setText would give it a height)
            item.titleLabel.setText(item.titleLabel.text)
        for name in ("left", "bottom", "right", "top"):
            axis = item.getAxis(name)
            axis.setPen(fg)
            axis.setTextPen(fg)
            if tick_font is not None:
                axis.setStyle(tickFont=tick_font)
                axis.label.setFont(tick_font)
        if item.legend is not None:
            item.legend.setLabelTextColor(fg)
            item.legend.setBrush(legend_brush())


def set_presenter_font(root: QWidget, on: bool, base: QFont) -> None:
    """Presenter mode: everything about 40% larger, plot ticks included."""
    font = QFont(base)
    if on:
        font.setPointSizeF(base.pointSizeF() * 1.4)
    QApplication.setFont(font)  # static: the running application's default font
    restyle_plots(root, foreground(), font)
