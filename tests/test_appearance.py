"""Light and dark themes and presenter mode's larger type (explorer/appearance.py): the palette, the plots that
follow it, and every text of a plot in the interface's font."""

import pytest

pytest.importorskip("pytestqt")

import pyqtgraph as pg  # noqa: E402
from PySide6.QtCore import QEvent  # noqa: E402
from PySide6.QtGui import QPalette  # noqa: E402
from PySide6.QtWidgets import QApplication, QTabWidget, QVBoxLayout, QWidget  # noqa: E402

from explorer.appearance import (  # noqa: E402
    PRESENTER_SCALE,
    TabsMeasuredAgain,
    apply_theme,
    dark_palette,
    foreground,
    measure_tabs_again,
    set_presenter_font,
)
from explorer.i18n import language  # noqa: E402

R = QPalette.ColorRole


@pytest.fixture(autouse=True)
def _english_light():
    app = QApplication.instance()
    font = app.font() if app is not None else None
    yield
    language.set("en")
    app = QApplication.instance()
    if app is not None:
        app.setPalette(app.style().standardPalette())
        pg.setConfigOption("foreground", foreground())
        if font is not None:
            app.setFont(font)


@pytest.fixture
def plotted(qtbot):
    """A widget holding a titled plot with an axis label and a legend, and a tab widget."""
    root = QWidget()
    qtbot.addWidget(root)
    layout = QVBoxLayout(root)
    plot = pg.PlotWidget()
    layout.addWidget(plot)
    item = plot.getPlotItem()
    item.setTitle("Loss")
    item.setLabel("left", "loss")
    item.addLegend()
    item.plot([1, 2], [3, 4], name="train")
    tabs = QTabWidget()
    tabs.addTab(QWidget(), "Map")
    layout.addWidget(tabs)
    return root, item


def test_the_dark_palette_is_light_text_on_dark(qtbot):
    p = dark_palette()
    for role in (R.Window, R.Base, R.Button):
        assert p.color(role).lightness() < 80, role
    for role in (R.Text, R.WindowText, R.ButtonText):
        assert p.color(role).lightness() > 180, role
        disabled = p.color(QPalette.ColorGroup.Disabled, role)
        assert p.color(R.Base).lightness() < disabled.lightness() < p.color(role).lightness()  # dimmed, readable


def test_a_theme_reaches_the_plots_drawn_and_those_drawn_later(plotted):
    root, item = plotted
    apply_theme("dark", root)
    text = QApplication.palette().color(R.WindowText)
    assert text.lightness() > 180 and foreground() == text
    assert item.getAxis("left").textPen().color() == text and item.getAxis("bottom").pen().color() == text
    assert item.legend.opts["labelTextColor"] == text and item.titleLabel.opts["color"] == text
    assert pg.mkPen(pg.getConfigOption("foreground")).color() == text  # plots made later
    apply_theme("light", root)
    assert QApplication.palette().color(R.Window) == QApplication.style().standardPalette().color(R.Window)
    assert item.getAxis("left").textPen().color() == QApplication.palette().color(R.WindowText)


def test_presenter_mode_makes_every_text_of_a_plot_larger_and_back(plotted):
    root, item = plotted
    base = QApplication.font()
    size = base.pointSizeF()

    def sizes() -> list[float]:
        axis = item.getAxis("left")
        legend = item.legend
        return [
            QApplication.font().pointSizeF(),
            axis.style["tickFont"].pointSizeF(),
            axis.label.font().pointSizeF(),
            float(legend.opts["labelTextSize"].removesuffix("pt")),
            float(item.titleLabel.opts["size"].removesuffix("pt")),
        ]

    set_presenter_font(root, True, base)
    assert sizes() == pytest.approx([size * PRESENTER_SCALE] * 5)
    set_presenter_font(root, False, base)
    assert sizes() == pytest.approx([size] * 5)


def test_the_tab_bars_are_watched_by_one_watcher_that_takes_nothing(plotted):
    root, _ = plotted
    measure_tabs_again(root)
    measure_tabs_again(root)
    [watcher] = root.findChildren(TabsMeasuredAgain)
    bar = root.findChild(QTabWidget).tabBar()
    assert watcher.eventFilter(bar, QEvent(QEvent.Type.FontChange)) is False  # the bar still gets the change


def test_dark_theme(make_window):
    window = make_window()
    window.set_theme("dark")
    palette = QApplication.palette()
    assert palette.color(QPalette.Window).lightness() < 80 and palette.color(QPalette.Text).lightness() > 180
    axis = window.training.plots["loss_plot"].plot.getPlotItem().getAxis("left")
    assert axis.textPen().color().lightness() > 180  # the plots follow
    assert window.settings.value("theme") == "dark"
    window.set_theme("light")
    assert QApplication.palette().color(QPalette.Window).lightness() > 180
