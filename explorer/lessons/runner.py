"""A lesson running in the window: a bar above the panels shows the slide's text (and its question, then the answer),
and each slide sets its scene — the model it names (opened, or an experiment trained in the window beside its
baseline), the sentence, the view, the decoding mode and the steps shown, the attention layer and head.

Next (▶, or → / PageDown on a clicker in presenter mode) reveals a slide's answer first, then goes on; Back goes
back a slide. A student opens the same file (*File → Open a lesson…*) and steps through it at a desk. *File → Add
this view to a lesson…* appends the window's current scene as a new slide to a lesson file.

Route: :meth:`LessonRunner.open` → :func:`explorer.lessons.lesson.read_lesson`; a slide's model through the
window's own :meth:`~explorer.main_window.MainWindow.open_checkpoint` / ``follow_run`` (an experiment:
:meth:`explorer.model_files.ModelFiles.run_experiment`, both runs in the engine; a later slide of the same experiment
looks inside the run it names); the scene through
:meth:`explorer.presenter.Presenter.apply`, once every panel has taken the model (the window calls
:meth:`LessonRunner.on_run` last).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QInputDialog, QLabel, QPushButton, QVBoxLayout, QWidget

from explorer.i18n import language, tr
from explorer.lessons.lesson import Lesson, LessonError, Slide, append_slide, read_lesson, resolve_model
from explorer.widgets import named
from explorer.widgets.wrapped_label import WrappedLabel

if TYPE_CHECKING:
    from explorer.answers import RunInfo
    from explorer.panels.decoding import DecodingPanel
    from explorer.panels.experiment import ExperimentPanel
    from explorer.panels.lanes import LanesPanel
    from explorer.presenter import Presenter
    from explorer.worker import Engine
    from model.io.snapshots import DecodeView

LETTERS = "ABCDEFGH"
ANSWER = "#2e7d32"


class ExperimentStarter(Protocol):
    """What runs an experiment in the window (:class:`explorer.model_files.ModelFiles`)."""

    def run_experiment(self, name: str, steps: int | None = None) -> None: ...


class LessonWindow(Protocol):
    """What a lesson uses of the main window (:class:`explorer.main_window.MainWindow`)."""

    engine: Engine
    decoding: DecodingPanel
    lanes: LanesPanel
    experiment: ExperimentPanel
    files: ExperimentStarter
    presenter: Presenter
    data_dir: Path

    def show_message(self, text: str, level: str = "info", actions=None) -> None: ...
    def note(self, text: str, ms: int = 0, tip: str = "") -> None: ...
    def open_checkpoint(self, path: str | None = None, confirm: bool = True) -> None: ...
    def open_model_folder(self, path: str | None = None) -> None: ...
    def follow_run(self, path: str | None = None) -> None: ...
    def window(self) -> QWidget: ...


class LessonBar(QWidget):
    """The slide on screen: the lesson and slide number, the text, a question's choices and, revealed, its answer."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("lesson_bar")
        self.where = named(QLabel(), "lesson_where")
        self.text = named(WrappedLabel(), "lesson_text")  # (wrapped: measured no narrower than a short line)
        self.question = named(WrappedLabel(), "lesson_question")
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        self.question.setTextFormat(Qt.TextFormat.RichText)
        self.back_button = named(QPushButton(), "lesson_back_button")
        self.next_button = named(QPushButton(), "lesson_next_button")
        self.close_button = named(QPushButton(), "lesson_close_button")
        for button in (self.back_button, self.next_button, self.close_button):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys stay the presenter's
        row = QHBoxLayout()
        row.addWidget(self.where, 1)
        for button in (self.back_button, self.next_button, self.close_button):
            row.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addLayout(row)
        layout.addWidget(self.text)
        layout.addWidget(self.question)
        self.hide()


class LessonRunner(QObject):
    """One lesson at a time, stepped slide by slide in a main window."""

    def __init__(self, window: LessonWindow, bar: LessonBar) -> None:
        super().__init__(window.window())
        self.window, self.bar = window, bar
        self.lesson: Lesson | None = None
        self.index = 0
        self.revealed = False
        self.model = ""  # the model the lesson opened last ("" none yet)
        self.pending: Slide | None = None  # a slide whose scene waits for its model
        self.run_id = self.opened_from = -1  # the run shown now; the one shown when a model was asked for
        self.steps_pending = 0  # decoding steps to show once the sentence's first view arrives
        self.experiment_steps: int | None = None  # updates of an experiment's runs (None: the experiment's own)
        self.wanted_run = ""  # the run of an experiment the slide shows ("baseline" / "variant"; "" none)
        bar.back_button.clicked.connect(self.back)
        bar.next_button.clicked.connect(self.next)
        bar.close_button.clicked.connect(self.close)
        window.decoding.view_shown.connect(self._on_view)
        window.engine.engine_failed.connect(self._on_failed)
        self.retranslate()

    @property
    def running(self) -> bool:
        return self.lesson is not None

    @property
    def slide(self) -> Slide | None:
        return None if self.lesson is None else self.lesson.slides[self.index]

    # -- opening and stepping -------------------------------------------------------------------------------------
    def open(self, path: str | Path) -> bool:
        """Open the lesson in ``path`` at its first slide; a lesson that cannot be read is said, and nothing else
        changes. → whether it opened."""
        try:
            self.lesson = read_lesson(path)
        except LessonError as exc:
            problems = "; ".join(exc.problems)
            self.window.show_message(
                tr("This lesson cannot be opened: {problems}").format(problems=problems), "warning"
            )
            return False
        self.index, self.model = 0, ""
        self.bar.show()
        self.show_slide()
        return True

    def next(self) -> None:
        """Reveal the slide's answer, or go on to the next slide."""
        slide = self.slide
        if slide is None:
            return
        if slide.question is not None and not self.revealed:
            self.revealed = True
            self._draw()
        elif self.lesson is not None and self.index + 1 < len(self.lesson.slides):
            self.index += 1
            self.show_slide()

    def back(self) -> None:
        if self.lesson is not None and self.index > 0:
            self.index -= 1
            self.show_slide()

    def close(self) -> None:
        self.lesson, self.pending = None, None
        self.bar.hide()

    def show_slide(self) -> None:
        """The slide's text at once; its scene now, or when the model it names has arrived."""
        slide = self.slide
        if slide is None:
            return
        self.revealed = False
        self._draw()
        model = self._model_of(self.index)
        if model != self.model:
            self.model = model
            self.pending = slide
            self._open_model(model)
        else:
            self._set_scene(slide)

    def _model_of(self, index: int) -> str:
        """The model in force at slide ``index``: the last one named up to it."""
        assert self.lesson is not None
        return next((s.model for s in reversed(self.lesson.slides[: index + 1]) if s.model), "")

    def ask_open(self) -> None:
        """File → Open a lesson…: a file chosen from the bundled lessons' folder (or anywhere)."""
        from explorer.lessons import BUNDLED

        path, _ = QFileDialog.getOpenFileName(
            self.window.window(), tr("Open a lesson"), str(BUNDLED), tr("Lessons (*.toml *.json)")
        )
        if path:
            self.open(path)

    def ask_add_slide(self) -> None:
        """File → Add this view to a lesson…: the window's scene (view, sentence, decoding, attention head, step)
        appended as a new slide, with the text typed for it (English, then Chinese)."""
        text, ok = QInputDialog.getMultiLineText(
            self.window.window(), tr("Add this view to a lesson"), tr("The slide's text:")
        )
        if not ok:
            return
        text_zh, ok = QInputDialog.getMultiLineText(
            self.window.window(), tr("Add this view to a lesson"), tr("The slide's text in Chinese:"), text
        )
        if not ok:
            return
        path, _ = QFileDialog.getSaveFileName(
            self.window.window(),
            tr("Add this view to a lesson"),
            str(self.window.data_dir / "my-lesson.toml"),
            tr("Lessons (*.toml *.json)"),
            options=QFileDialog.Option.DontConfirmOverwrite,  # the slide is added to the lesson, nothing replaced
        )
        if path:
            self.add_slide(path, text, text_zh)

    def add_slide(self, path: str | Path, text: str, text_zh: str) -> Slide:
        """Append the window's current scene to the lesson in ``path`` as a slide saying ``text``."""
        p = self.window.presenter
        scene = p.current_scene("")
        step = self.window.decoding.view_state().step
        slide = Slide(text.strip(), text_zh.strip(), scene, model="", steps=step if scene.sentence else 0)
        append_slide(path, slide)
        self.window.note(tr("Slide added to {path}").format(path=Path(path).name), 4000)
        return slide

    # -- models -----------------------------------------------------------------------------------------------------
    def _open_model(self, model: str) -> None:
        self.opened_from = self.run_id  # the model asked for arrives as another run
        self.wanted_run = ""
        assert self.lesson is not None and self.lesson.path is not None
        try:
            found = resolve_model(model, self.lesson.path.parent)
        except ValueError as exc:
            self.window.show_message(str(exc), "warning")
            self.pending = None
            return
        if isinstance(found, tuple):
            self._run_experiment(*found)
        elif found.is_dir() and (found / "metrics.jsonl").exists():
            self.window.follow_run(str(found))
        elif found.is_dir():
            self.window.open_model_folder(str(found))
        else:
            self.window.open_checkpoint(str(found))

    def _run_experiment(self, name: str, run: str) -> None:
        """Train the experiment in the window beside its baseline (a slide of the experiment already shown looks
        inside the run it names instead) and show the run asked for."""
        self.wanted_run = run
        shown = self.window.experiment.experiment
        if shown is None or shown.name != name:
            self.window.files.run_experiment(name, self.experiment_steps)  # the variant arrives first: see on_run
        elif shown.run != run:
            self.window.experiment.look_inside(run)
        else:
            slide, self.pending = self.pending, None
            if slide is not None:
                self._set_scene(slide)

    def _on_failed(self, request_id: int, message: str) -> None:
        """The engine refused a request: a slide waiting for an experiment waits no longer (the message bar says
        why)."""
        if self.pending is not None and self.wanted_run:
            self.pending, self.wanted_run = None, ""

    def on_run(self, info: RunInfo) -> None:
        """A model arrived and every panel has taken it (the window calls this last): the scene that waited for
        it is set, after the panels' own requests for the new model (a random sentence asked for by the decoding
        panel is dropped when the slide's sentence is decoded)."""
        self.run_id = info.run_id
        if (
            info.run_id == self.opened_from
        ):  # news of the run shown before (a followed run's end): not the model asked for
            return
        e = info.experiment
        if self.pending is not None and e is not None and self.wanted_run and e.run != self.wanted_run:
            self.window.experiment.look_inside(self.wanted_run)  # (the experiment shows its variant first)
            return
        slide, self.pending = self.pending, None
        if slide is not None and slide is self.slide:
            self._set_scene(slide)

    # -- the scene --------------------------------------------------------------------------------------------------
    def _set_scene(self, slide: Slide) -> None:
        lanes = slide.scene.view == "lanes"
        self.steps_pending = slide.steps if slide.scene.sentence and not lanes else 0
        self.window.presenter.apply(slide.scene)
        if lanes and slide.steps:
            self.window.lanes.advance(slide.steps)

    def _on_view(self, view: DecodeView) -> None:
        """The sentence's first view: on to the slide's step."""
        if self.steps_pending and view.position == 0:
            steps, self.steps_pending = self.steps_pending, 0
            d = self.window.decoding
            d.show_view_state(replace(d.view_state(), step=steps))

    # -- drawing ----------------------------------------------------------------------------------------------------
    def retranslate(self) -> None:
        self.bar.back_button.setText(tr("◀ Slide"))
        self.bar.close_button.setText(tr("Close the lesson"))
        self._draw()

    def _draw(self) -> None:
        lesson, slide = self.lesson, self.slide
        if lesson is None or slide is None:
            return
        zh = language.code == "zh"
        title = lesson.title_in("zh" if zh else "en")
        self.bar.where.setText(
            tr("{title} — slide {n} of {total}").format(title=title, n=self.index + 1, total=len(lesson.slides))
        )
        self.bar.text.setText(slide.said("zh" if zh else "en"))
        q = slide.question
        self.bar.question.setVisible(q is not None)
        last = self.index + 1 == len(lesson.slides)
        asking = q is not None and not self.revealed
        self.bar.next_button.setText(tr("Show the answer") if asking else tr("Slide ▶"))
        self.bar.next_button.setEnabled(asking or not last)
        self.bar.back_button.setEnabled(self.index > 0)
        if q is not None:
            self.bar.question.setText(_question_html(q, zh, self.revealed))


def _question_html(q, zh: bool, revealed: bool) -> str:
    from html import escape

    ask = q.ask_zh if zh and q.ask_zh else q.ask
    choices = q.choices_zh if zh and q.choices_zh else q.choices
    parts = [f"<b>{escape(ask)}</b><br>"]
    for i, choice in enumerate(choices):
        text = f"{LETTERS[i]}. {escape(choice)}"
        if revealed and i == q.answer:
            text = f'<span style="color:{ANSWER}; font-weight:bold">✓ {text}</span>'
        parts.append(text)
    html = "&nbsp;&nbsp;&nbsp;".join(parts[1:])
    why = (q.why_zh if zh and q.why_zh else q.why) if revealed else ""
    return parts[0] + html + (f"<br>{escape(why)}" if why else "")
