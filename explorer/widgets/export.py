"""Exporting what a view shows: PNG and SVG pictures, CSV and NPY numbers."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QPoint, QRectF, QSize, Qt
from PySide6.QtGui import QImage, QPainter, QRegion
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QFileDialog, QGraphicsScene, QHBoxLayout, QLabel, QMenu, QToolButton, QVBoxLayout, QWidget

from explorer.i18n import tr


def render_scene(scene: QGraphicsScene, source: QRectF, path: str | Path, title: str = "", scale: float = 2.0) -> None:
    """Write a region of a graphics scene as SVG (vector, by Qt's generator) or PNG (``scale`` × pixels).

    (pyqtgraph 0.14's own SVG exporter fails on the path syntax that current Qt
    writes — pyqtgraph issue #3485 — so scenes are rendered straight into a
    QSvgGenerator instead.)
    """
    path = Path(path)
    w, h = max(1.0, source.width()), max(1.0, source.height())
    device: QSvgGenerator | QImage
    if path.suffix.lower() == ".svg":
        device = QSvgGenerator()
        device.setFileName(str(path))
        device.setSize(QSize(int(w), int(h)))
        device.setViewBox(QRectF(0, 0, w, h))
        device.setTitle(title)
        target = QRectF(0, 0, w, h)
    elif path.suffix.lower() == ".png":
        device = QImage(int(w * scale), int(h * scale), QImage.Format.Format_ARGB32)
        device.fill(0xFFFFFFFF)
        target = QRectF(0, 0, w * scale, h * scale)
    else:
        raise ValueError(f"cannot export a picture to {path.suffix or 'a file without extension'}: use .png or .svg")
    painter = QPainter(device)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    try:
        scene.render(painter, target, source)
    finally:
        painter.end()
    if isinstance(device, QImage) and not device.save(str(path)):
        raise OSError(f"could not write {path}")


def render_widget(widget: QWidget, path: str | Path) -> None:
    """A whole widget (tables, labels…) as SVG or PNG, the way it is drawn on screen."""
    path = Path(path)
    size = widget.size()
    if path.suffix.lower() == ".png":
        if not widget.grab().save(str(path)):
            raise OSError(f"could not write {path}")
        return
    if path.suffix.lower() != ".svg":
        raise ValueError(f"cannot export a picture to {path.suffix or 'a file without extension'}: use .png or .svg")
    device = QSvgGenerator()
    device.setFileName(str(path))
    device.setSize(size)
    device.setViewBox(QRectF(0, 0, size.width(), size.height()))
    painter = QPainter(device)
    try:
        widget.render(painter, QPoint(0, 0), QRegion(), QWidget.RenderFlag.DrawChildren)
    finally:
        painter.end()


def write_rows(path: str | Path, header: list[str], rows: list[list]) -> None:
    """A table as CSV."""
    with Path(path).open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def write_numbers(
    path: str | Path,
    values: np.ndarray,
    row_labels: list[str] | None = None,
    col_labels: list[str] | None = None,
) -> None:
    """A matrix as CSV (with token labels, when given) or NPY."""
    path = Path(path)
    values = np.asarray(values)
    if path.suffix.lower() == ".npy":
        with path.open("wb") as f:  # to the name given: np.save(name) adds ".npy" to "a.NPY"
            np.save(f, values)
        return
    if path.suffix.lower() != ".csv":
        raise ValueError(f"cannot export numbers to {path.suffix or 'a file without extension'}: use .csv or .npy")
    matrix = values.reshape(values.shape[0], -1) if values.ndim > 1 else values[:, None]
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        if col_labels is not None:
            w.writerow(["", *col_labels] if row_labels is not None else col_labels)
        for i, row in enumerate(matrix):
            cells = [repr(float(x)) for x in row]
            w.writerow([row_labels[i], *cells] if row_labels is not None else cells)


def titled_view(
    owner: QWidget, body: QWidget, name: str, export: Callable[[str], None], formats, footer: QWidget | None = None
) -> tuple[QLabel, QToolButton]:
    """Lay ``owner`` out as a bold title and a ⤓ export button above ``body`` (and ``footer``)."""
    title = QLabel()
    title.setTextFormat(Qt.TextFormat.PlainText)  # titles may quote tokens or file names: never markup
    title.setStyleSheet("font-weight: 600")
    title.setWordWrap(True)  # a long title must not set the panel's minimum width
    button = export_button(owner, name, export, formats)
    head = QHBoxLayout()
    head.setContentsMargins(4, 0, 0, 0)
    head.addWidget(title, 1)
    head.addWidget(button)
    layout = QVBoxLayout(owner)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(0)
    layout.addLayout(head)
    layout.addWidget(body, 1)
    if footer is not None:
        layout.addWidget(footer)
    return title, button


def export_button(owner: QWidget, name: str, export: Callable[[str], None], formats=("PNG", "SVG", "CSV", "NPY")):
    """A small ⤓ button offering the given formats; ``export(path)`` does the writing."""
    button = QToolButton(owner)
    button.setText("⤓")
    button.setAutoRaise(True)
    button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
    button.setToolTip(tr("Export: the picture (PNG, SVG) or the numbers (CSV, NPY)"))
    menu = QMenu(button)

    def ask(fmt: str) -> None:
        path, _ = QFileDialog.getSaveFileName(owner, tr("Export"), f"{name}.{fmt.lower()}", f"{fmt} (*.{fmt.lower()})")
        if path:
            try:
                export(path)
            except (OSError, ValueError) as exc:
                window = owner.window()
                if hasattr(window, "show_message"):
                    window.show_message(f"{tr('Export failed')}: {exc}", "error")

    def asker(fmt: str) -> Callable[[], None]:
        return lambda: ask(fmt)

    for fmt in formats:
        menu.addAction(f"{fmt}…", asker(fmt))
    button.setMenu(menu)
    return button
