"""Exporting what a view shows (explorer/widgets/export.py): numbers as CSV (with their token labels) or NPY, tables
as CSV, pictures of a scene or a widget as PNG or SVG, and the ⤓ button that asks where."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QRectF, Qt  # noqa: E402
from PySide6.QtGui import QColor, QImage  # noqa: E402
from PySide6.QtWidgets import QGraphicsScene, QLabel, QWidget  # noqa: E402

from explorer.widgets import export  # noqa: E402
from explorer.widgets.export import (  # noqa: E402
    export_button,
    render_scene,
    render_widget,
    titled_view,
    write_numbers,
    write_rows,
)


def read_csv(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_a_matrix_is_written_with_its_token_labels(tmp_path):
    values = np.array([[0.25, 0.75], [1 / 3, 2 / 3]])
    write_numbers(tmp_path / "m.csv", values, row_labels=["我", "x,y"], col_labels=["<bos>", "a"])
    rows = read_csv(tmp_path / "m.csv")
    assert rows[0] == ["", "<bos>", "a"] and [r[0] for r in rows[1:]] == ["我", "x,y"]
    assert np.array([[float(x) for x in r[1:]] for r in rows[1:]]).tolist() == values.tolist()  # every digit kept
    write_numbers(tmp_path / "plain.csv", values)
    assert [[float(x) for x in r] for r in read_csv(tmp_path / "plain.csv")] == values.tolist()
    write_numbers(tmp_path / "cols.csv", values, col_labels=["a", "b"])
    assert read_csv(tmp_path / "cols.csv")[0] == ["a", "b"]


def test_a_vector_is_a_column_and_more_dimensions_are_rows_of_the_rest(tmp_path):
    write_numbers(tmp_path / "v.csv", np.array([1.0, 2.0, 3.0]))
    assert read_csv(tmp_path / "v.csv") == [["1.0"], ["2.0"], ["3.0"]]
    cube = np.arange(12, dtype=float).reshape(2, 3, 2)
    write_numbers(tmp_path / "c.csv", cube)
    assert [[float(x) for x in r] for r in read_csv(tmp_path / "c.csv")] == cube.reshape(2, 6).tolist()


def test_numbers_as_npy_keep_their_shape_and_other_files_are_refused(tmp_path):
    cube = np.random.default_rng(0).random((2, 3, 4))
    write_numbers(tmp_path / "c.npy", cube)
    assert np.array_equal(np.load(tmp_path / "c.npy"), cube)
    write_numbers(tmp_path / "d.NPY", cube)  # the name the person typed, not d.NPY.npy
    assert np.array_equal(np.load(tmp_path / "d.NPY"), cube) and not (tmp_path / "d.NPY.npy").exists()
    with pytest.raises(ValueError, match=r"\.txt: use \.csv or \.npy"):
        write_numbers(tmp_path / "c.txt", cube)
    with pytest.raises(ValueError, match="a file without extension"):
        write_numbers(tmp_path / "c", cube)


def test_a_table_is_written_as_csv(tmp_path):
    write_rows(tmp_path / "t.csv", ["run", "label"], [[1, "copy · tiny"], [2, 'say "hi", then go']])
    assert read_csv(tmp_path / "t.csv") == [["run", "label"], ["1", "copy · tiny"], ["2", 'say "hi", then go']]


def test_a_scene_region_as_png_at_twice_its_size_and_as_svg(qtbot, tmp_path):
    scene = QGraphicsScene()
    scene.addRect(QRectF(0, 0, 100, 50), Qt.PenStyle.NoPen, QColor("red"))
    render_scene(scene, QRectF(0, 0, 100, 50), tmp_path / "s.png")
    image = QImage(str(tmp_path / "s.png"))
    assert (image.width(), image.height()) == (200, 100)
    assert image.pixelColor(100, 50).name() == "#ff0000"
    render_scene(scene, QRectF(-50, 0, 100, 50), tmp_path / "half.png", scale=1.0)
    assert QImage(str(tmp_path / "half.png")).pixelColor(10, 25).name() == "#ffffff"  # outside the rectangle: white
    render_scene(scene, QRectF(0, 0, 100, 50), tmp_path / "s.svg", title="attention")
    root = ET.parse(tmp_path / "s.svg").getroot()
    assert root.tag.endswith("svg") and root.get("viewBox") == "0 0 100 50"
    assert any(e.tag.endswith("title") and e.text == "attention" for e in root.iter())
    with pytest.raises(ValueError, match="use .png or .svg"):
        render_scene(scene, QRectF(0, 0, 100, 50), tmp_path / "s.jpg")


def test_a_widget_as_png_and_svg(qtbot, tmp_path):
    label = QLabel("Parameters: 1,234")
    qtbot.addWidget(label)
    label.resize(160, 30)
    render_widget(label, tmp_path / "w.png")
    image = QImage(str(tmp_path / "w.png"))
    assert (image.width(), image.height()) == (160 * image.devicePixelRatio(), 30 * image.devicePixelRatio())
    render_widget(label, tmp_path / "w.svg")
    assert ET.parse(tmp_path / "w.svg").getroot().get("viewBox") == "0 0 160 30"
    with pytest.raises(ValueError, match="use .png or .svg"):
        render_widget(label, tmp_path / "w.pdf")


class Window(QWidget):
    """A top-level widget that shows messages, as the main window does."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[tuple[str, str]] = []

    def show_message(self, text: str, level: str = "info") -> None:
        self.messages.append((text, level))


def test_the_export_button_asks_where_and_says_when_it_failed(qtbot, tmp_path, monkeypatch):
    window = Window()
    qtbot.addWidget(window)
    written, asked = [], []

    def write(path: str) -> None:
        if path.endswith(".svg"):
            raise OSError("disk full")
        written.append(path)

    button = export_button(window, "attention-map", write, formats=("PNG", "SVG"))
    assert [a.text() for a in button.menu().actions()] == ["PNG…", "SVG…"]

    def save_dialog(owner, title, suggested, filter_):
        asked.append((suggested, filter_))
        return str(tmp_path / suggested), ""

    monkeypatch.setattr(export.QFileDialog, "getSaveFileName", save_dialog)
    png, svg = button.menu().actions()
    png.trigger()
    assert asked == [("attention-map.png", "PNG (*.png)")] and written == [str(tmp_path / "attention-map.png")]
    svg.trigger()
    assert window.messages == [("Export failed: disk full", "error")]
    monkeypatch.setattr(export.QFileDialog, "getSaveFileName", lambda *a: ("", ""))  # the person cancelled
    png.trigger()
    assert len(written) == 1


def test_a_titled_view_is_a_plain_text_title_and_the_button_above_the_body(qtbot):
    owner, body = QWidget(), QLabel("body")
    qtbot.addWidget(owner)
    title, button = titled_view(owner, body, "map", lambda path: None, ("PNG",))
    title.setText("<b>not bold</b>")
    assert title.textFormat() == Qt.TextFormat.PlainText and title.wordWrap()
    assert body.parent() is owner and button.parent() is owner
    assert owner.layout().itemAt(1).widget() is body  # under the title row
