"""Light and dark themes, and presenter mode's larger fonts."""

from __future__ import annotations

from functools import partial

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication, QGraphicsView, QTabBar, QWidget

THEMES = ("light", "dark")
PRESENTER_SCALE = 1.4  # presenter mode's type over the normal size


def dark_palette() -> QPalette:
    p = QPalette()
    R = QPalette.ColorRole
    colours = {
        R.Window: "#2b2d30",
        R.WindowText: "#e6e6e6",
        R.Base: "#1f2023",
        R.AlternateBase: "#2b2d30",
        R.ToolTipBase: "#3c3f41",
        R.ToolTipText: "#e6e6e6",
        R.Text: "#e6e6e6",
        R.Button: "#3a3d41",
        R.ButtonText: "#e6e6e6",
        R.BrightText: "#ff6b6b",
        R.Link: "#6aa9ff",
        R.Highlight: "#3d6fb6",
        R.HighlightedText: "#ffffff",
        R.PlaceholderText: "#8a8a8a",
    }
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


def restyle_plots(root: QWidget, fg: QColor) -> None:
    """Axes, their labels, titles and legends under ``root`` in ``fg``, and their text in the interface's font (see
    :func:`set_plot_font`). Plots made later take ``fg`` from pyqtgraph's "foreground" option, which
    :func:`apply_theme` sets."""
    for view in root.findChildren(QGraphicsView):
        # pyqtgraph caches each view's background, painted in the palette it was first drawn with: without
        # this, a map keeps the old theme's backdrop behind axis labels drawn in the new theme's colour
        view.resetCachedContent()
        view.viewport().update()
    for item in _plot_items(root):
        item.titleLabel.setAttr("color", fg)
        for name in ("left", "bottom", "right", "top"):
            axis = item.getAxis(name)
            axis.setPen(fg)
            axis.setTextPen(fg)
        if item.legend is not None:
            item.legend.setLabelTextColor(fg)
            item.legend.setBrush(legend_brush())
    for view in root.findChildren(pg.GraphicsView):
        set_plot_font(view, QApplication.font())


def set_plot_font(view: pg.GraphicsView, font: QFont) -> None:
    """Every text pyqtgraph draws in ``view`` — axis ticks and axis labels, plot titles, legends — in ``font``, the
    interface's (presenter mode's larger type included). pyqtgraph keeps sizes of its own (legends 9 pt, titles
    11 pt, axes the painter's font), and a widget's font follows the application's only some events later: this
    sets them all from the one font, at once."""
    font = QFont(font)
    size = f"{font.pointSizeF():g}pt"
    for item in view.scene().items():
        if isinstance(item, pg.AxisItem):
            if item.label is not None:
                item.label.setFont(font)
            item.setStyle(tickFont=font)  # lays the axis out again, its label's new height included
        elif isinstance(item, pg.LegendItem):
            item.setLabelTextSize(size)
            for _, label in item.items:
                label.setText(label.text)  # (setLabelTextSize keeps the size for later; this draws it)
            item.updateSize()
        elif isinstance(item, pg.PlotItem) and item.titleLabel.text:
            item.titleLabel.setText(item.titleLabel.text, size=size)


def refresh_style_sheets(root: QWidget) -> None:
    """Widgets with a style sheet of their own keep the font they had when it was applied (Qt resolves it then):
    applied again, they take the interface's new font like every other widget."""
    for widget in [root, *root.findChildren(QWidget)]:
        sheet = widget.styleSheet()
        if sheet:
            widget.setStyleSheet(sheet)


class TabsMeasuredAgain(QObject):
    """A tab bar hidden when its font changes (behind another panel, or off screen in presenter mode) marks its tabs
    to be measured again, but Qt lays the tabs out anew only when someone asks the bar for its size: shown later, it
    kept the old sizes and cut its text in the new type ("Maɼ", "ention over train"). Watching the bar, this asks it
    once the change is in."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 — Qt's name
        if event.type() == QEvent.Type.FontChange and isinstance(watched, QTabBar):
            QTimer.singleShot(0, watched, partial(self._measure, watched))  # after the bar has taken the change in
        return False

    @staticmethod
    def _measure(bar: QTabBar) -> None:
        bar.sizeHint()  # lays the tabs out in the new font
        bar.updateGeometry()  # and its tab widget places it again


def measure_tabs_again(root: QWidget) -> None:
    """Every tab bar under ``root`` measures its tabs again when its font changes (see :class:`TabsMeasuredAgain`)."""
    watcher = root.findChild(TabsMeasuredAgain)
    if watcher is None:
        watcher = TabsMeasuredAgain(root)
    for bar in root.findChildren(QTabBar):
        bar.installEventFilter(watcher)  # (once: installing it again only moves it to the front)


def set_presenter_font(root: QWidget, on: bool, base: QFont) -> None:
    """Presenter mode: every text about 40% larger — widgets, and the plots' ticks, labels, titles and legends."""
    font = QFont(base)
    if on:
        font.setPointSizeF(base.pointSizeF() * PRESENTER_SCALE)
    measure_tabs_again(root)  # before the change, which may reach them at once
    QApplication.setFont(font)  # static: the running application's default font
    # Qt hands the new font to each widget on a posted event; delivered now, every widget has it when this returns
    # (a layout made before they arrive is measured in the old type: see Presenter._leave)
    QApplication.sendPostedEvents(None, QEvent.Type.ApplicationFontChange)
    refresh_style_sheets(root)
    restyle_plots(root, foreground())
