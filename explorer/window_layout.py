"""The main window's panels as they first come (and as *View → Reset layout* brings them back)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow

LEFT = ("decoding", "training", "model", "data")
RIGHT = ("attention", "positional", "map", "why", "lanes", "experiment")


def default_layout(window: QMainWindow, docks: dict[str, QDockWidget], side_by_side: bool) -> None:
    """The decoding views beside the attention map (``side_by_side``); training, model and data tabbed behind the
    decoding panel, the positional lab, the model map, the Why panel, the lanes and the experiment behind the
    attention map. On a screen narrower than both side by side need, everything shares one area as tabs."""
    for dock in docks.values():
        dock.setFloating(False)
        dock.show()
    window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, docks["decoding"])
    if side_by_side:
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, docks["attention"])
        window.resizeDocks([docks["decoding"], docks["attention"]], [52, 48], Qt.Orientation.Horizontal)
    else:
        window.tabifyDockWidget(docks["decoding"], docks["attention"])
    for group in (LEFT, RIGHT):
        present = [key for key in group if key in docks]
        for before, key in zip(present, present[1:]):
            window.tabifyDockWidget(docks[before], docks[key])
    docks["attention"].raise_()
    docks["decoding"].raise_()
