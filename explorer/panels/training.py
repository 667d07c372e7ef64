"""Training panel: what to train, with which settings, and live curves of how it goes.

Route: every button sends its command (``Start``, ``Step``, ``Pause``, ``Resume``, ``Stop``,
``PauseAt``; ``NewModel`` and ``ChangeTraining`` when the settings need them) through the engine
client (:meth:`TrainingPanel.attach`; ``Engine._dispatch`` in explorer/worker.py, then ``Session``).
When that would replace the current model the window's ``confirm_replace``, given to ``attach``,
asks about unsaved work first. Answers: the engine's ``status_changed`` and ``metrics_logged``,
and for a followed run ``scalars_logged`` and ``follow_changed`` (connected in ``attach``), and
``run_described`` (through the main window, which decides whether the form is refilled).

Its pieces: the settings column (explorer/panels/training_settings.py), the controls
(training_controls.py), the run list (training_runs.py), the plots and their redraw timer
(training_plots.py) with a followed run's own scalars (training_scalars.py), and what it shows as
plain values (training_state.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from explorer.answers import ERROR, PAUSED, TRAINING, EngineStatus, FollowStatus, MetricsBatch, RunInfo, ScalarsLogged
from explorer.commands import (
    ChangeData,
    ChangeTraining,
    Command,
    NewModel,
    NewModelSpec,
    Pause,
    PauseAt,
    Resume,
    Start,
    Step,
    Stop,
)
from explorer.engine_client import EngineClient
from explorer.i18n import tr
from explorer.panels.settings_form import SettingsForm, needs_new_model, only_the_data_differs
from explorer.panels.training_controls import TrainingControls
from explorer.panels.training_plots import OPTIONAL_PLOTS, PLOTS, TrainingPlots, columns_for
from explorer.panels.training_runs import MAX_RUNS, RunList
from explorer.panels.training_settings import SettingsArea
from explorer.panels.training_state import TrainingViewState, smoothing_at
from explorer.widgets import named
from model.data import DataError

__all__ = ["MAX_RUNS", "ConfirmReplace", "TrainingPanel"]

ConfirmReplace = Callable[[Callable[[], object], str, bool], None]


def _replace_without_asking(then: Callable[[], object], question: str, always_ask: bool) -> None:
    """Until the window gives the panel its question dialog: go ahead."""
    then()


class TrainingPanel(QWidget):
    """Settings, Start/Pause/Stop/Reset/Step, the run list and the live plots (six, and the experts' load
    for a Mixture-of-Experts model)."""

    # the main window answers these (it owns the engine and the dialogs)
    scratch_requested = Signal()  # a fresh model with these settings, training at once
    acted = Signal()  # the person pressed a control (the program's own start-up plans yield to it)

    PLOTS = PLOTS
    OPTIONAL_PLOTS = OPTIONAL_PLOTS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.client: EngineClient | None = None  # set by attach; without it the panel sends nothing
        self.confirm_replace: ConfirmReplace = _replace_without_asking
        self.setObjectName("training_panel")
        self.status = EngineStatus("idle", 0, 0, False, None, "")
        self.runs: dict[int, RunInfo] = {}
        self.current: RunInfo | None = None
        self.state = TrainingViewState()
        self._valid = True  # the settings form can make a model
        self.form = SettingsForm()
        self.form.validity_changed.connect(self._on_validity)
        # the family and the experts are chosen in the form; the panel names them for its users
        self.arch_combo = self.form.arch_combo
        self.experts_spin = self.form.experts_spin
        self.experts_top_k_spin = self.form.experts_top_k_spin
        self._create_controls()
        self._create_plots()
        self._lay_out()
        self.retranslate()
        self._update_buttons()

    def _create_controls(self) -> None:
        """The controls and the run list, named on the panel as the window and its tests know them."""
        self.controls = c = TrainingControls()
        self.start_button, self.pause_button, self.stop_button = c.start_button, c.pause_button, c.stop_button
        self.reset_button, self.step_button, self.step_n_button = c.reset_button, c.step_button, c.step_n_button
        self.scratch_button, self.step_n = c.scratch_button, c.step_n
        self.pause_at_step, self.pause_at_loss = c.pause_at_step, c.pause_at_loss
        self.smooth_slider, self.log_check = c.smooth_slider, c.log_check
        self.run_list = RunList()
        self.runs_label = QLabel()
        self.runs_label.setWordWrap(True)
        self._connect_controls()

    def _connect_controls(self) -> None:
        self.scratch_button.clicked.connect(self.scratch_requested)
        self.start_button.clicked.connect(lambda: self._on_start("start"))
        self.step_button.clicked.connect(lambda: self._on_start("step", 1))
        self.step_n_button.clicked.connect(lambda: self._on_start("step", self.step_n.value()))
        self.pause_button.clicked.connect(self._on_pause)
        self.stop_button.clicked.connect(lambda: self._send(Stop()))
        self.reset_button.clicked.connect(self._on_reset)
        for w in (self.pause_at_step, self.pause_at_loss):
            w.valueChanged.connect(self._on_pause_at)
        self.smooth_slider.valueChanged.connect(self._on_smoothing)
        self.log_check.toggled.connect(self._on_log)
        self.run_list.itemChanged.connect(self._on_run_toggled)

    def _create_plots(self) -> None:
        """The plots, named on the panel as the window and its tests know them."""
        self.live_plots = TrainingPlots(self)
        self.plots = self.live_plots.plots
        self.expert_load_plot = self.live_plots.expert_load_plot
        self.scalars_plot = self.live_plots.scalars  # a followed run's own scalars (shown once it logged some)
        self.step_marker, self.probe_marker = self.live_plots.step_marker, self.live_plots.probe_marker
        self.timer = self.live_plots.timer  # the redraw timer: one plot with new data per tick

    def _lay_out(self) -> None:
        """The settings form on the left (scrolling), the controls and the plots on the right."""
        right = named(QWidget(), "training_controls")
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(4, 0, 0, 0)
        right_layout.addLayout(self.controls.rows[0])  # Start, Pause, Stop, Reset
        self.run_controls = QWidget()  # the other rows and the run list: presenter mode gives them to the plots
        controls = QVBoxLayout(self.run_controls)
        controls.setContentsMargins(0, 0, 0, 0)
        for row in self.controls.rows[1:]:
            controls.addLayout(row)
        runs_row = QHBoxLayout()
        runs_row.addWidget(self.runs_label, 1)
        runs_row.addWidget(self.scratch_button)  # a new run, from the settings on the left
        controls.addLayout(runs_row)
        controls.addWidget(self.run_list)
        right_layout.addWidget(self.run_controls)
        self.plot_scroll = self.live_plots.make_area(columns_for(self.width()))
        right_layout.addWidget(self.plot_scroll, 1)
        scroll = self.settings_area = SettingsArea(self.form)
        self.form.installEventFilter(scroll)
        splitter = QSplitter()
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(scroll)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(splitter)

    def retranslate(self) -> None:
        self.controls.retranslate()
        self.runs_label.setText(tr("Runs (tick earlier runs to compare them with the current one)"))
        self.form.retranslate()
        self.live_plots.retranslate()
        self.run_list.label_runs(self.runs)
        self._update_buttons()

    # -- commands --------------------------------------------------------------------------------
    def _on_start(self, kind: str, n: int = 0) -> None:
        if kind == "start" and self.status.state in (PAUSED, ERROR):
            self._send(Resume())
            return
        try:
            spec = self.form.spec()
        except (ValueError, DataError) as exc:
            self.form.error_label.setText(str(exc))
            self.form.error_label.show()
            return
        self._train(spec, n if kind == "step" else 0)

    def _train(self, spec: NewModelSpec, steps: int) -> None:
        """Start (``steps`` 0) or train ``steps`` updates, with a new model when the settings need one."""
        self.acted.emit()
        info = self.current

        def go() -> None:
            self._send(Step(n=steps) if steps else Start())

        def build_and_go() -> None:
            self._send(NewModel(spec))
            go()

        if info is not None and info.model_origin is not None and only_the_data_differs(spec, info):
            self._send(ChangeData(spec.data))  # an opened model learns the new data with its own vocabulary
        elif info is None or needs_new_model(spec, info):
            if info is not None and info.model_origin is not None:
                question = tr(
                    "These settings need a new model: the opened model {name} will be replaced by one "
                    "with fresh weights."
                ).format(name=info.model_origin.name)
                self.confirm_replace(build_and_go, question, True)
            elif info is not None and self.status.step > 0:
                question = tr("These settings need a new model. The current model (step {step}) will be replaced.")
                self.confirm_replace(build_and_go, question.format(step=self.status.step), True)
            else:
                build_and_go()
            return
        if spec.train != info.train_config:
            self._send(ChangeTraining(spec.train))
        go()

    def _on_pause(self) -> None:
        self._send(Resume() if self.status.state in (PAUSED, ERROR) else Pause())

    def _on_reset(self) -> None:
        try:
            spec = self.form.spec()
        except (ValueError, DataError) as exc:
            self.form.error_label.setText(str(exc))
            return
        self.acted.emit()
        question = tr("Reset starts a new model with fresh weights. The current model (step {step}) will be replaced.")
        opened = self.current is not None and self.current.model_origin is not None  # never lost without asking
        self.confirm_replace(
            lambda: self._send(NewModel(spec)), question.format(step=self.status.step), self.status.step > 0 or opened
        )

    def _on_pause_at(self) -> None:
        step, loss = self.pause_at_step.value(), self.pause_at_loss.value()
        self._send(PauseAt(step=step or None, loss=loss or None))

    def set_presenting(self, on: bool) -> None:
        """Presenter mode: the settings form, the rows of controls below Start · Pause · Stop · Reset and the run list
        are hidden: the plots get the panel."""
        self.state = replace(self.state, presenting=on)
        self.settings_area.setVisible(not on)
        self.run_controls.setVisible(not on)

    def set_state(self, state: TrainingViewState) -> None:
        """Show ``state`` (presenter mode, scenes and lessons set the state, never the widgets)."""
        self.smooth_slider.setValue(state.slider_value)
        self.log_check.setChecked(state.log_scale)
        self.set_presenting(state.presenting)

    def _on_validity(self, ok: bool) -> None:
        self._valid = ok
        self._update_buttons()

    def _update_buttons(self) -> None:
        self.controls.update_buttons(self.status.state, self._valid, self.current is not None)

    # -- the route to the engine -------------------------------------------------------------------
    def attach(self, client: EngineClient, confirm_replace: ConfirmReplace) -> None:
        """Send through ``client``; ``confirm_replace(then, question, always_ask)`` runs ``then`` once the
        current model may be replaced (the window asks about unsaved work first)."""
        self.client, self.confirm_replace = client, confirm_replace
        client.engine.status_changed.connect(self.on_status)
        client.engine.metrics_logged.connect(self.on_metrics)
        client.engine.scalars_logged.connect(self.on_scalars)
        client.engine.follow_changed.connect(self.on_follow)

    def _send(self, command: Command) -> None:
        self.acted.emit()
        if self.client is not None:
            self.client.send(command)

    # -- engine events ------------------------------------------------------------------------------
    def on_status(self, status: EngineStatus) -> None:
        self.status = status
        self.live_plots.set_step(status.step, training=status.state == TRAINING)
        self._update_buttons()

    def on_run(self, info: RunInfo, fill_form: bool = True) -> None:
        """A new run, or new settings of the current one; ``fill_form=False`` keeps the person's edits."""
        new = info.run_id not in self.runs
        other = info.experiment.other if info.experiment is not None else None
        if other is not None and other.run_id not in self.runs:  # an experiment: its other run, drawn beside
            self._add_run(other)
        # newer weights of the run shown (a followed run's checkpoint): its settings are the form's and the plots'
        # already, and are not filled in again (a person's edits stay; 5 ms of the window's time a checkpoint)
        was = self.current
        unchanged = was is not None and was.run_id == info.run_id and _same_settings(was, info)
        self.runs[info.run_id] = info
        self.current = info
        if fill_form and not unchanged:
            self.form.show_run(info)
        if not unchanged:
            self.live_plots.show_family(info, columns_for(self.width()))
        self.live_plots.show_history(info, again=new or self.live_plots.rolled_back(info))
        if new:
            self.live_plots.new_run()  # the scalars of a run no longer followed go, as its curves are unticked
            self._add_run(info)
        if other is not None:
            self.run_list.tick(other.run_id)  # both runs of the experiment, overlaid
        self.run_list.label_runs(self.runs)
        self.run_list.make_bold(info.run_id)
        self._on_run_toggled()
        self._update_buttons()

    def _add_run(self, info: RunInfo) -> None:
        """A run at the top of the run list, its curves from its history (the oldest unticked runs leave)."""
        self.runs[info.run_id] = info
        if info is not self.current:
            self.live_plots.show_history(info, again=True)
        for run in self.run_list.add_run(info.run_id):
            self.runs.pop(run, None)
            self.live_plots.forget(run)

    def set_probe_marker(self, step: int) -> None:
        """The step of the attention snapshot looked at, marked on the loss plot (-1: none)."""
        self.live_plots.set_probe_marker(step)

    def on_metrics(self, batch: MetricsBatch) -> None:
        if len(batch.steps):
            self.live_plots.add_steps(batch.run_id, batch.steps)
        self.live_plots.add_evals(batch.run_id, batch.evals)

    def on_scalars(self, batch: ScalarsLogged) -> None:
        """A followed run's own scalars (TensorBoard tags, a Trainer's metrics), drawn under their tags."""
        self.live_plots.add_scalars(batch)

    def on_follow(self, status: FollowStatus) -> None:
        """The run followed (``folder`` "": none any more; its scalars stay until another run replaces them)."""
        self.live_plots.follow_folder(status.folder)

    # -- view --------------------------------------------------------------------------------------
    def _on_run_toggled(self, *_: Any) -> None:
        current = self.current.run_id if self.current else 0
        names = {  # an experiment's runs: "baseline" and "variant" in the legends rather than their numbers
            rid: tr(info.experiment.run) for rid, info in self.runs.items() if info.experiment is not None
        }
        self.live_plots.set_runs(current, self.run_list.ticked(), names)

    def _on_smoothing(self, value: int) -> None:
        self.state = replace(self.state, smoothing=smoothing_at(value))
        self.controls.show_smoothing(value)
        self.live_plots.set_smoothing(smoothing_at(value))

    def _on_log(self, on: bool) -> None:
        self.state = replace(self.state, log_scale=on)
        self.live_plots.set_log(on)

    def resizeEvent(self, event) -> None:  # noqa: N802 — narrow panels get two columns of plots
        super().resizeEvent(event)
        self.live_plots.arrange(columns_for(self.width()))

    def set_on_screen(self, on: bool) -> None:
        """Told by the dock: behind another tab the plots keep their data but are not redrawn."""
        self.live_plots.set_on_screen(on)

    def redraw(self) -> None:
        """Redraw every plot now (exports and tests)."""
        self.live_plots.redraw()

    def drawing(self) -> bool:
        return self.live_plots.drawing()


def _same_settings(a: RunInfo, b: RunInfo) -> bool:
    settings = (a.model_config, a.train_config, a.data, a.tokenizer)
    return settings == (b.model_config, b.train_config, b.data, b.tokenizer)
