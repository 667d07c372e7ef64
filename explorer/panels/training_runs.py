"""The training panel's run list: the runs trained in this window, ticked to overlay their curves."""

from __future__ import annotations

import math
from collections.abc import Mapping

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QFont, QTextLayout, QTextOption
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from explorer.answers import RunInfo
from explorer.i18n import language, tr

MAX_RUNS = 12  # runs kept in the run list for overlays


def laid_out_height(text: str, font: QFont, width: int) -> float:
    """The height of ``text`` wrapped into ``width`` pixels, line by line as it is drawn (a line with Chinese
    characters takes the taller line height of the font they come from)."""
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    layout.beginLayout()
    height = 0.0
    while (line := layout.createLine()).isValid():
        line.setLineWidth(width)
        height += line.height()
    layout.endLayout()
    return height


class WrappedRuns(QStyledItemDelegate):
    """The run list's rows as tall as their wrapped text (the list's own estimate counts lines of the Latin
    font's height, and a second line in Chinese would be cut to "…")."""

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:  # noqa: N802 — Qt's name
        hint = super().sizeHint(option, index)
        view = option.widget
        if view is None or not isinstance(view, QListWidget):
            return hint
        item = QStyleOptionViewItem(option)
        self.initStyleOption(item, index)
        item.rect = QRect(0, 0, view.viewport().width(), hint.height())
        text = view.style().subElementRect(QStyle.SubElement.SE_ItemViewItemText, item, view)
        margin = view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1
        needed = laid_out_height(item.text, item.font, text.width() - 2 * margin)
        return QSize(hint.width(), max(hint.height(), math.ceil(needed) + 4))


class RunList(QListWidget):
    """The runs, newest first, each with a tick box: the current run in bold, earlier ones ticked to compare
    their curves with it. Each row holds its run id (``Qt.ItemDataRole.UserRole``)."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("run_list")
        # each run's description whole: wrapped onto a second line rather than cut (a narrow column on a laptop)
        self.setWordWrap(True)
        self.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setItemDelegate(WrappedRuns(self))
        self.setMaximumHeight(4 * self.fontMetrics().lineSpacing() + 8)

    def add_run(self, run_id: int) -> list[int]:
        """A new run at the top, ticked; the earlier ones unticked and not bold. Returns the runs that left the
        list to keep it bounded (see :meth:`_forget_old_runs`)."""
        item = QListWidgetItem()
        item.setData(Qt.ItemDataRole.UserRole, run_id)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked)
        self.blockSignals(True)
        for i in range(self.count()):  # earlier runs: unticked, not bold
            other = self.item(i)
            f = other.font()
            f.setBold(False)
            other.setFont(f)
            other.setCheckState(Qt.CheckState.Unchecked)
        self.insertItem(0, item)
        forgotten = self._forget_old_runs()
        self.blockSignals(False)
        return forgotten

    def _forget_old_runs(self) -> list[int]:
        """Keep the list (and the curves kept for overlays) bounded: beyond MAX_RUNS the oldest
        unticked runs go. A run whose curves matter is ticked, or saved in its checkpoint."""
        forgotten: list[int] = []
        for i in range(self.count() - 1, 0, -1):
            if self.count() <= MAX_RUNS:
                break
            item = self.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                continue
            forgotten.append(item.data(Qt.ItemDataRole.UserRole))
            self.takeItem(i)
        return forgotten

    def label_runs(self, runs: Mapping[int, RunInfo]) -> None:
        """Each row: "Run" (in the language shown), its id and its run's description (a run of an experiment:
        which of the pair it is first)."""
        for i in range(self.count()):
            item = self.item(i)
            rid = item.data(Qt.ItemDataRole.UserRole)
            info = runs[rid]
            e = info.experiment
            which = ""
            if e is not None:
                title = e.titled(language.code == "zh")
                which = (tr("baseline") if e.run == "baseline" else tr("variant: {title}").format(title=title)) + " · "
            item.setText(f"{tr('Run')} {rid}: {which}{info.label}")

    def tick(self, run_id: int) -> None:
        """Tick ``run_id`` (its curves drawn), if it is in the list."""
        for i in range(self.count()):
            if self.item(i).data(Qt.ItemDataRole.UserRole) == run_id:
                self.item(i).setCheckState(Qt.CheckState.Checked)

    def make_bold(self, run_id: int) -> None:
        for i in range(self.count()):
            item = self.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == run_id:
                f = item.font()
                f.setBold(True)
                item.setFont(f)

    def ticked(self) -> set[int]:
        """The runs whose curves are drawn."""
        return {
            self.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.count())
            if self.item(i).checkState() == Qt.CheckState.Checked
        }
