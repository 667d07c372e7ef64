"""The engine thread: the only code that touches the model, the optimizer and the data.

The window hands it commands (one frozen dataclass each, :mod:`explorer.commands`) through
:meth:`Engine.submit`, which queues them; the engine drains the queue between optimizer steps (or,
when not training, waits on it with a short timeout) and dispatches each command on its type
(:meth:`Engine._dispatch`) to a handler of its concern: training (:mod:`explorer.engine_training`), looking
inside the model (:mod:`explorer.engine_views`), files (:mod:`explorer.engine_files`), following a run
(:mod:`explorer.engine_following`), all built on what they share (:mod:`explorer.engine_base`). Of the commands
that ask for a view of the model (inspect, explain, positional), only the newest of each kind is served. Answers go
back as typed Qt signals carrying immutable snapshots (:mod:`explorer.answers`) — frozen dataclasses of numpy
arrays and plain values, never tensors or modules — and an answer to a request carries its request id, so that the
window can drop answers to requests it no longer cares about. A request that fails is answered by an
``engine_failed`` message with its request id and changes nothing else: training goes on. Only a failure of a
training step itself pauses training (state ``error``; Resume continues). The thread keeps running either way.
"""

from __future__ import annotations

import os
import queue
import threading
import time

from explorer.answers import TRAINING, EngineFailure, EngineMessage
from explorer.commands import (
    LATEST_ONLY,
    Attribute,
    ChangeData,
    ChangeTraining,
    Command,
    Decode,
    DecodeLanes,
    Explain,
    ExplainWorkedExample,
    FailOnPurpose,
    FillMask,
    Follow,
    HeadImportanceOf,
    Inspect,
    Load,
    LogitLensOf,
    LookInside,
    NewModel,
    Pause,
    PauseAt,
    Positional,
    Resume,
    RunExperiment,
    SampleSentence,
    Save,
    SetAblation,
    SetInt8,
    SetProbe,
    Shutdown,
    Start,
    Step,
    Stop,
    WatchLens,
)
from explorer.engine_experiment import ExperimentHandlers
from explorer.engine_following import FollowingHandlers
from explorer.engine_interpret import InterpretHandlers
from explorer.engine_loading import LIVE_ENGINES, favour_the_window, load_engine, prepare_optimizers_aside
from explorer.engine_training import TrainingHandlers
from explorer.engine_views import ViewHandlers
from explorer.failures import failure_message
from explorer.window_quiet import settled
from model.training.device import ThreadGovernor, device_description, resolve_device, start_helpers_behind

# what ends following a run: the person makes, opens or trains a model of their own
ENDS_FOLLOWING = (NewModel, Load, Start, Resume, Step, ChangeData, RunExperiment)
# Work a new model does not need for its first screen (describing its corpus, the first probe snapshot,
# loading what training needs) waits until no command has come for this long.
QUIET_S = 0.5


class Engine(TrainingHandlers, ViewHandlers, InterpretHandlers, FollowingHandlers, ExperimentHandlers):
    """Owns one :class:`~model.session.Session` and runs it on its own thread: the loop, the queue of commands and
    the one dispatch (the handlers and the signals are those of the classes it is made of)."""

    def __init__(
        self, device: str = "auto", threads: int | None = None, parent=None, wait_for_window: bool = False
    ) -> None:
        super().__init__(parent)
        # At launch the engine's first work (importing PyTorch, ~1–2 s of the GIL) waits until the window has
        # painted (see release); the window would otherwise share the GIL with it and show later.
        self._released = threading.Event()
        if not wait_for_window:
            self._released.set()
        self._queue: queue.Queue[Command] = queue.Queue()
        self._device_name = device
        self._threads = threads  # None: as many as the cores other programs leave free (ThreadGovernor)
        self._governor: ThreadGovernor | None = None
        self._stop = False
        LIVE_ENGINES.add(self)

    # -- the window's side -----------------------------------------------------------------------------
    def submit(self, command: Command) -> int:
        """Queue a command (see :mod:`explorer.commands`); returns its request id (answers carry it)."""
        self._queue.put(command)
        return command.request_id

    def cancel_sweep(self) -> None:
        """Stop the head-importance sweep after the head it is on (any thread); what it found so far comes back."""
        self._sweep_cancel.set()

    def release(self) -> None:
        """Let an engine made with ``wait_for_window`` begin (the window is on screen)."""
        self._released.set()

    def shutdown(self, autosave_path: str | None = None, timeout_ms: int = 2000) -> bool:
        """Stop within one step, save unsaved work to ``autosave_path``, and join the thread."""
        self._stop = True
        self._sweep_cancel.set()
        self._released.set()
        self._queue.put(Shutdown(autosave=autosave_path))
        return self.wait(timeout_ms)

    # -- the engine thread: the loop and the one dispatch ----------------------------------------------------
    def run(self) -> None:
        self._released.wait(timeout=5.0)  # never forever: a window that failed to paint still gets its engine
        favour_the_window()
        load_engine()
        import torch

        start_helpers_behind(self._threads or max(1, os.cpu_count() or 1))  # on the thread that computes
        try:
            device = resolve_device(self._device_name)
            self.device_label = device_description(device)
        except ValueError as exc:
            self.failure_named.emit(EngineFailure(0, EngineMessage.as_is(str(exc))))
            self._device_name, device = "cpu", torch.device("cpu")
            self.device_label = "CPU"
        self._device = device
        if self._threads is None and device.type == "cpu":
            self._governor = ThreadGovernor()
        self._publish_status()
        quiet_since = time.perf_counter()
        while True:
            try:
                commands = self._take_commands()
                for command in commands:
                    if isinstance(command, Shutdown):
                        self._do_shutdown(command.autosave)
                        return
                    self._handle(command)
                if self._governor is not None:  # (idle too: training starts with the threads that fit)
                    self._governor.apply()
                if self._state == TRAINING and not self._stop:
                    self._train_guarded()
                else:
                    self._flush_metrics(force=True)
                if self._follow is not None:
                    self._poll_run()
                quiet_since = time.perf_counter() if commands else quiet_since
                quiet = time.perf_counter() - quiet_since
                if self._later and quiet > QUIET_S:
                    if settled(self.window_quiet):  # (its Python beside the window's drawing made both wait)
                        self._later.pop(0)()
                elif self.session is None and quiet > 6 * QUIET_S:  # no model yet (--new): the person is choosing
                    prepare_optimizers_aside()  # settings; get ready for their Start (nothing is done twice)
            except Exception as exc:  # noqa: BLE001 — everything becomes a message, the thread lives on
                self._fail(0, exc)

    def _take_commands(self) -> list[Command]:
        commands: list[Command] = []
        try:
            if self._state == TRAINING and not self._stop:
                commands.append(self._queue.get_nowait())
            else:
                commands.append(self._queue.get(timeout=0.05))
            while True:
                commands.append(self._queue.get_nowait())
        except queue.Empty:
            pass
        # keep only the newest of each view request; controls stay in order
        newest: dict[type[Command], int] = {}
        for i, c in enumerate(commands):
            if isinstance(c, LATEST_ONLY):
                newest[type(c)] = i
        return [c for i, c in enumerate(commands) if not isinstance(c, LATEST_ONLY) or newest[type(c)] == i]

    def _handle(self, c: Command) -> None:
        try:
            with self._ablated_for(c):  # the heads the person switched off, for the views of the model
                self._dispatch(c)
        except Exception as exc:  # noqa: BLE001
            self._fail(c.request_id, exc)

    def _dispatch(self, c: Command) -> None:  # noqa: C901 — one line per command
        """The one place a command meets its handler."""
        if self._follow is not None and isinstance(c, ENDS_FOLLOWING):
            self._unfollow()  # what the person does wins: the model is theirs from here on
        match c:
            case Follow():
                self._start_following(c)
            case NewModel():
                self._new(c)
            case RunExperiment() | LookInside():
                self._experiment(c)
            case Load():
                self._load(c)
            case Save():
                self._save(c)
            case Start():
                self._start()
            case Resume():
                self._resume()
            case Pause():
                self._pause()
            case Stop():
                self._stop_training()
            case Step():
                self._step(c)
            case ChangeTraining():
                self._change_training(c)
            case ChangeData():
                self._change_data(c)
            case PauseAt():
                self._set_pause_at(c)
            case Inspect():
                self._inspect(c)
            case Explain():
                self._explain(c)
            case ExplainWorkedExample():
                self._explain_worked_example(c)
            case Positional():
                self._positional(c)
            case Decode():
                self._decode(c)
            case DecodeLanes():
                self._decode_lanes(c)
            case SetInt8():
                self._set_int8(c)
            case SetProbe():
                self._set_probe(c)
            case SampleSentence():
                self._sample_sentence(c)
            case FillMask():
                self._fill_mask(c)
            case Attribute() | LogitLensOf() | WatchLens() | SetAblation() | HeadImportanceOf():
                self._interpret(c)
            case FailOnPurpose(in_training=True):
                self._fail_next_step = c.message
            case FailOnPurpose():
                raise RuntimeError(c.message)
            case _:
                raise TypeError(f"the engine has no handler for {type(c).__name__}")

    def _fail(self, request_id: int, exc: Exception) -> None:
        """A request (or the engine's own work beside training) failed: answer it with a message a person can
        act on. Training, if it runs, goes on as it was: only :meth:`_training_failed` stops it."""
        self.failure_named.emit(EngineFailure(request_id, failure_message(exc, training=False)))
        self._publish_status()
