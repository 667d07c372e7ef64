"""The engine thread: the only code that touches the model, the optimizer and the data.

The window hands it commands (one frozen dataclass each, :mod:`explorer.commands`) through
:meth:`Engine.submit`, which queues them; the engine drains the queue between optimizer steps (or,
when not training, waits on it with a short timeout) and dispatches each command on its type
(:meth:`Engine._dispatch`). Of the commands that ask for a view of the model (inspect, explain,
positional), only the newest of each kind is served. Answers go back as typed Qt signals carrying
immutable snapshots — frozen dataclasses of numpy arrays and plain values, never tensors or
modules — and an answer to a request carries its request id, so that the window can drop answers
to requests it no longer cares about. A request that fails is answered by an ``engine_failed`` message
with its request id and changes nothing else: training goes on. Only a failure of a training step itself
pauses training (state ``error``; Resume continues). The thread keeps running either way.
"""

from __future__ import annotations

import gc
import math
import os
import queue
import random
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
from PySide6.QtCore import QThread, Signal

from explorer.commands import (
    LATEST_ONLY,
    ChangeData,
    ChangeTraining,
    Command,
    Decode,
    Explain,
    ExplainWorkedExample,
    FailOnPurpose,
    FillMask,
    Follow,
    Inspect,
    Load,
    NewModel,
    Pause,
    PauseAt,
    Positional,
    Resume,
    SampleSentence,
    Save,
    SetProbe,
    Shutdown,
    SplitName,
    Start,
    Step,
    Stop,
)
from explorer.i18n import N_, tr
from model.core.config import ModelConfig
from model.core.config import Positional as PositionalKind
from model.core.settings import SettingValue
from model.data import TASK_DESCRIPTIONS, DataSpec
from model.data.tokenization import Encoded, TokenizerSpec
from model.decoding.stepping import DecodeDriver, DecodeError
from model.io.follow import RunWatcher, run_ending
from model.io.snapshots import TRAIN_METRICS, FillMaskView, History, StepColumns
from model.training.config import TrainConfig, TrainingDiverged
from model.training.device import (
    ThreadGovernor,
    device_description,
    prepare_optimizers,
    resolve_device,
    start_helpers_behind,
    without_collector_pauses,
)

if TYPE_CHECKING:
    from model.io.snapshots import DecodeView
    from model.session import AttentionExplanation, Inspection, Session

# what ends following a run: the person makes, opens or trains a model of their own
ENDS_FOLLOWING = (NewModel, Load, Start, Resume, Step, ChangeData)
EngineState = Literal["idle", "training", "paused", "error"]
IDLE: Final = "idle"
TRAINING: Final = "training"
PAUSED: Final = "paused"
ERROR: Final = "error"
# Work a new model does not need for its first screen (describing its corpus, the first probe snapshot,
# loading what training needs) waits until no command has come for this long.
QUIET_S = 0.5
LIVE_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()
_LOADED = threading.Event()  # set once an engine thread has imported PyTorch and the engine


@dataclass(frozen=True)
class NewModelSpec:
    """Everything needed to build a model from scratch."""

    data: DataSpec
    preset: str
    model_overrides: Mapping[str, SettingValue]  # ModelConfig fields set in the form (over the preset's)
    train: TrainConfig
    tokenizer: TokenizerSpec
    shared_tokenizer: bool = False


# -- snapshots (engine → GUI) ------------------------------------------------------------------


@dataclass(frozen=True)
class EngineStatus:
    state: EngineState
    step: int
    run_id: int
    dirty: bool  # trained since the last save
    path: str | None  # file the session was loaded from / saved to
    device: str  # "CPU" or the GPU's name


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of the model on a held-out split; the scores a family does not have are NaN."""

    step: int
    split: Literal["valid", "test"]
    loss: float
    exact_match: float = math.nan  # encoder–decoder: share of sentences translated exactly as the reference, 0..1
    bleu: float = math.nan  # encoder–decoder: corpus BLEU, 0..100
    perplexity: float = math.nan  # decoder-only: e^(cross-entropy per token)
    mlm_accuracy: float = math.nan  # encoder-only: masked tokens predicted right, 0..1
    nsp_accuracy: float = math.nan  # encoder-only with next-sentence prediction, 0..1
    aux_loss: float = math.nan  # Mixture-of-Experts: the load-balancing loss
    expert_load: tuple[float, ...] = ()  # Mixture-of-Experts: each expert's share of the tokens

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Evaluation:
        split: Literal["valid", "test"] = "test" if record["split"] == "test" else "valid"
        scores = {k: float(record[k]) for k in EVAL_NUMBERS if k in record}
        load = tuple(float(x) for x in record.get("expert_load", ()))
        return cls(int(record["step"]), split, float(record["loss"]), expert_load=load, **scores)


EVAL_NUMBERS = ("exact_match", "bleu", "perplexity", "mlm_accuracy", "nsp_accuracy", "aux_loss")


@dataclass(frozen=True)
class MetricsBatch:
    run_id: int
    steps: StepColumns
    evals: tuple[Evaluation, ...]


@dataclass(frozen=True)
class ModelOrigin:
    """Where a model opened from a Hugging Face folder came from (the session's ``notes["origin"]``, which a
    checkpoint saved from it keeps)."""

    model_type: str  # config.json's model_type: marian, gpt2, bert
    name: str  # the model's name (config.json's _name_or_path, or the folder's name)
    folder: str  # the folder it was read from
    architectures: tuple[str, ...] = ()  # config.json's architectures (MarianMTModel…)

    @classmethod
    def of(cls, notes: Mapping[str, Any]) -> ModelOrigin | None:
        """The origin in a session's notes; None for a model made here (or notes that do not hold one)."""
        origin = notes.get("origin")
        if not isinstance(origin, Mapping) or not isinstance(origin.get("model_type"), str):
            return None
        listed = origin.get("architectures")
        architectures = tuple(str(a) for a in listed) if isinstance(listed, (list, tuple)) else ()
        return cls(
            str(origin["model_type"]), str(origin.get("name") or ""), str(origin.get("folder") or ""), architectures
        )


# What the engine says it is doing while it opens a model folder (Session.load's progress) or prepares a big data
# file read as a stream (Session.create's): the window translates it.
LOAD_STAGES = (N_("reading the tokenizers"), N_("reading the weights"), N_("building the model"), N_("ready"))
DATA_STAGES = (N_("reading"), N_("training the tokenizers"))


class RunFollowing:
    """The engine's record of a run it follows: the log so far, the probe snapshots not yet sent (engine thread
    only; what reaches the window are MetricsBatch, RunInfo, ProbeSnapshot and FollowStatus)."""

    def __init__(self, watcher: RunWatcher, request_id: int) -> None:
        self.watcher, self.request_id = watcher, request_id
        self.run_id = -1  # the run id its model was given in the window
        self.history = History()  # the log so far, as columns (a long run's log stays compact)
        self.probes: list[Path] = []
        self.polled = self.said = 0.0
        self.ended = ""  # how the run ended, as its final checkpoint says ("" while it runs)

    @property
    def last_step(self) -> int:
        steps = self.history.train["step"]
        return int(steps[-1]) if steps else 0

    def take(self, records: list[dict[str, Any]], reset: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Keep the log's new lines (all of them again after a reset); → the new training steps and evaluations."""
        steps = [step for step in map(_step_record, (r for r in records if "split" not in r)) if step is not None]
        evals = [r for r in records if "split" in r and isinstance(r.get("loss"), (int, float))]
        if reset:
            self.history = History()
        for step in steps:
            self.history.add_step(step)
        self.history.evals.extend(evals)
        return steps, evals

    def steps(self) -> StepColumns:
        return StepColumns.from_history(self.history.train)

    def evaluations(self) -> tuple[Evaluation, ...]:
        return tuple(Evaluation.of(e) for e in self.history.evals)


def _step_record(record: dict[str, Any]) -> dict[str, Any] | None:
    """A training line of a metrics log with every number the plots take (a dense model's log has no aux_loss);
    None for a line without them."""
    out = {"aux_loss": 0.0, "expert_load": record.get("expert_load", []), "time": math.nan}
    for key in TRAIN_METRICS:
        value = record.get(key, out.get(key))
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        out[key] = float(value)
    return out


def data_cache_dir() -> Path:
    """Where the window keeps what it learnt of big data files read as streams (their scans, their token ids)."""
    from PySide6.QtCore import QStandardPaths

    return Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.CacheLocation)) / "data-cache"


@dataclass(frozen=True)
class LoadProgress:
    """How far the opening of a model has come, for the status bar (sent while a model folder is read)."""

    request_id: int  # the Load it belongs to
    name: str  # the folder's (or file's) name
    stage: str  # untranslated, one of LOAD_STAGES or DATA_STAGES: the window translates it
    fraction: float  # 0…1 (−1: how far is not known)
    detail: str = ""  # a data file's: megabytes read, rate, time left (numbers and units)


@dataclass(frozen=True)
class FollowStatus:
    """The run the window follows (see :class:`explorer.commands.Follow`), for the status bar."""

    folder: str  # "" when the window follows no run (any more)
    step: int = 0  # the newest step in its log
    idle_s: float = 0.0  # seconds since anything in the folder changed
    waiting: bool = False  # no checkpoint read yet: the plots show the log, the panels wait for a model
    bad_lines: int = 0  # lines of the log that were not JSON records
    skipped_probes: int = 0  # probe snapshots that could not be read
    problem: str = ""  # the last thing in the folder that could not be read, and why
    ended: str = ""  # "finished", "interrupted" or "failed": the trainer's final checkpoint says so ("" while it runs)


@dataclass(frozen=True)
class RunInfo:
    """What a run is, for the run list and the model/data panels."""

    run_id: int
    label: str  # short description: task, preset, norm, positions, smoothing
    preset: str
    model_config: ModelConfig
    train_config: TrainConfig
    data: DataSpec
    tokenizer: TokenizerSpec
    vocab_sizes: tuple[int, int]  # source, target pieces
    parameters: dict[str, int]  # per component
    total_parameters: int
    active_parameters: int  # those one token passes through (with experts: k of each layer's N)
    schedule: np.ndarray  # learning rate for steps 1..len, drawn ahead of time
    src_pieces: tuple[str, ...]  # display text of every source id
    tgt_pieces: tuple[str, ...]  # display text of every target id (the GUI names decoded ids with it)
    src_words: tuple[str, ...]  # the source vocabulary's whole words (completion of what a person types)
    history_steps: StepColumns  # metrics already in the session (e.g. from a checkpoint)
    history_evals: tuple[Evaluation, ...]
    origin: int = 0  # id of the request that created this run (a load, a new model); 0: a settings update
    weights_step: int = 0  # the training step of the model's weights (a followed run's grow as the trainer saves)
    model_origin: ModelOrigin | None = None  # the Hugging Face model it was opened from; None: made here
    mask_token: str | None = None  # an encoder-only model's own mask piece (<mask>, BERT's [MASK]); None: no masks


@dataclass(frozen=True)
class CorpusSummary:
    """Sizes, languages and the load report of a run's corpus; or why it could not be read."""

    name: str
    description: str = ""  # untranslated: the window translates it
    train: int = 0
    valid: int = 0
    test: int = 0
    src_lang: str = ""
    tgt_lang: str = ""
    report: str = ""  # bad lines skipped and the like (may quote the file)
    truncated: int = 0  # training pairs longer than the model accepts, cut
    error: str | None = None  # the corpus could not be read (e.g. a moved file)


@dataclass(frozen=True)
class PiecesOf:
    """A sentence as its tokenizer split it: the pieces, and which of them are unknown (``<unk>``)."""

    pieces: tuple[str, ...]
    unknown: frozenset[int]  # indexes of pieces whose id is the unknown id


@dataclass(frozen=True)
class RunData:
    """A run's corpus, described once the first screen is done (reading and encoding it takes a second)."""

    run_id: int
    corpus: CorpusSummary
    samples: tuple[tuple[PiecesOf, PiecesOf], ...]  # training pairs: source, target


@dataclass(frozen=True)
class PositionalTables:
    """What the positional-encoding lab shows of the current model."""

    kind: PositionalKind
    d_model: int
    max_len: int
    head_dim: int
    step: int  # training step of the weights
    source: np.ndarray | None = None  # learned tables [max_len, d_model]; None for the other kinds
    target: np.ndarray | None = None
    t5_encoder: np.ndarray | None = None  # T5: the learned bias [buckets, heads] of the encoder's self-attention
    t5_decoder: np.ndarray | None = None  # … and of the decoder's (None where the model has no such stack)


# -- answers to requests (each carries the id of the request it answers) ----------------------------


@dataclass(frozen=True)
class InspectionReady:
    request_id: int
    inspection: Inspection


@dataclass(frozen=True)
class Explained:
    request_id: int
    explanation: AttentionExplanation


@dataclass(frozen=True)
class DecodeStepped:
    request_id: int
    view: DecodeView


@dataclass(frozen=True)
class MaskFilled:
    request_id: int
    view: FillMaskView


@dataclass(frozen=True)
class SentenceSampled:
    """A random sentence of the run's corpus (:class:`~explorer.commands.SampleSentence`), or why there is none."""

    request_id: int
    run_id: int
    asked: SplitName  # the split asked for
    split: SplitName | None = None  # where it came from: the one asked for, or the next one with sentences
    source: str = ""
    reference: str | None = None
    error: str | None = None  # the corpus could not be read


@dataclass(frozen=True)
class PositionalReady:
    request_id: int
    tables: PositionalTables


@dataclass(frozen=True)
class ProbeSnapshot:
    """Attention of the probe sentence at one training step (attention over training)."""

    run_id: int
    step: int
    source: str
    target: str | None  # teacher-forced target; None: the model's own greedy output
    inspection: Any  # model.session.Inspection
    entropy: dict[str, np.ndarray]  # per kind: [layers, heads] mean attention entropy of the rows (nats)


def attention_entropy(maps: np.ndarray) -> np.ndarray:
    """Mean over query rows of −Σ p log p, per layer and head. ``maps [L, H, Lq, Lk]`` → ``[L, H]``."""
    if 0 in maps.shape[2:]:  # a kind this model's family lacks (no rows or no keys): zeros, not a warning
        return _frozen(np.zeros(maps.shape[:2]))
    p = np.clip(maps, 1e-12, 1.0)
    return _frozen((-(maps * np.log(p)).sum(-1)).mean(-1))


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    a.setflags(write=False)
    return a


def _mask_token(s: Session) -> str | None:
    """The piece an encoder-only model reads as a hidden word, as a person types it (``<mask>`` is read as it too)."""
    mask_id = s.src_tok.mask_id
    return s.src_tok.id_to_token(mask_id) if s.model_cfg.arch == "encoder_only" and mask_id is not None else None


def _pieces(encoded: Encoded) -> PiecesOf:
    unknown = set(encoded.unknown)  # the spans of the pieces the vocabulary lacks
    return PiecesOf(tuple(encoded.tokens), frozenset(i for i, span in enumerate(encoded.spans) if span in unknown))


# What a DecodeError's code means, in words a person can act on (the engine names the problem, the window says it)
DECODE_ERRORS = {
    "no_sentence": N_("Type a sentence and press Enter to start decoding."),
}


def decode_error_message(error: Exception) -> str:
    """What a person reads about a request the engine refused: a DecodeError in the interface language, any
    other error as the engine worded it."""
    if isinstance(error, DecodeError) and error.code in DECODE_ERRORS:
        return tr(DECODE_ERRORS[error.code])
    return str(error)


def load_engine() -> None:
    """Import PyTorch and the engine (most of a launch's work), taking what the imports made, which
    lives as long as the program, out of the garbage collector's walks (see
    :func:`model.training.device.without_collector_pauses`). The engine thread does this first, after the
    window is on screen; the window's own modules do not import PyTorch."""
    with without_collector_pauses():
        import model.session  # noqa: F401 — torch, the model, data batching, training
    _LOADED.set()


def favour_the_window() -> None:
    """Called by the engine thread as it begins: the interpreter hands the GIL to a waiting thread after 1 ms
    instead of 5, so that the window's thread, taking the GIL back from a training engine, never waits long.

    The engine thread keeps the ordinary CPU priority. A lowered one (nice +10, as before) let a single busy
    program elsewhere starve training (0.25–0.41 steps/s against the command line's 4.9–5.1) and, holding the
    GIL while it waited for a core, made the window wait too (a 16 ms timer once 1.9 s late). What keeps the
    window smooth instead: this interval, collections kept off the long-lived objects, PyTorch's helper threads
    (which hold no GIL) started at the lower priority (:func:`model.training.device.start_helpers_behind`), and as many
    threads as the cores other programs leave free (:class:`model.training.device.ThreadGovernor`).
    """
    sys.setswitchinterval(0.001)


def _prepare_optimizers_aside() -> None:
    """:func:`prepare_optimizers` (1–4 s of imports) on a thread of its own, once: the engine thread stays free
    for what the person asks meanwhile — closing the window waited for these imports to end (2.4–5.0 s)."""
    global _preparing
    if _preparing is None:
        _preparing = threading.Thread(target=prepare_optimizers, name="prepare-optimizers", daemon=True)
        _preparing.start()


_preparing: threading.Thread | None = None


def engine_loaded() -> bool:
    """Whether the window can use PyTorch-backed code now without waiting for an engine thread that is
    still importing it (Python makes a second importer wait for the first)."""
    return _LOADED.is_set() or not any(e.isRunning() for e in list(LIVE_ENGINES))


def run_label(s: Session) -> str:
    c, t = s.model_cfg, s.train_cfg
    family = {"decoder_only": "GPT · ", "encoder_only": "BERT · "}.get(c.arch, "")
    experts = f" · {c.n_experts} experts top-{c.experts_top_k}" if c.moe else ""
    return (
        f"{family}{s.data_spec.name} · {s.preset} · {c.norm}-LN · {c.positional}{experts} · "
        f"ls {t.label_smoothing:g} · {t.schedule}"
    )


class Engine(QThread):
    """Owns one :class:`~model.session.Session` and runs it on its own thread."""

    status_changed = Signal(EngineStatus)
    metrics_logged = Signal(MetricsBatch)
    run_described = Signal(RunInfo)  # a new run (new model, checkpoint, reset) or new settings of one
    data_described = Signal(RunData)  # the corpus of the current run
    inspection_ready = Signal(InspectionReady)
    decode_stepped = Signal(DecodeStepped)
    probe_recorded = Signal(ProbeSnapshot)  # the probe sentence's attention at one step
    explained = Signal(Explained)
    paused_at = Signal(int, float)  # the auto-pause fired: step, loss
    positional_ready = Signal(PositionalReady)
    sentence_sampled = Signal(SentenceSampled)
    mask_filled = Signal(MaskFilled)  # an encoder-only model's predictions for masked positions
    saved = Signal(int, str)  # request id, path
    engine_failed = Signal(int, str)  # request id, message a person can act on
    load_progressed = Signal(LoadProgress)  # a model folder being opened: what is being read, how far
    follow_changed = Signal(FollowStatus)  # the run being followed: how fresh it is (about once a second)

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
        self.session: Session | None = None  # engine thread only
        self._state: EngineState = IDLE
        self._run_id = 0
        self._path: str | None = None
        self._steps_left = 0  # "step N": updates still to do before pausing
        self._pending_steps: list[dict[str, float]] = []
        self._pending_evals: list[dict[str, Any]] = []
        self._last_flush = 0.0
        self._stop = False
        self._decoder: DecodeDriver | None = None
        self._rng = random.Random()  # random sentences of the corpus
        self._later: list[Callable[[], None]] = []  # done once commands stop coming (see QUIET_S)
        self._probe_step = -1  # step of the last probe snapshot
        self._probe: dict[str, Any] = {"source": None, "target": None, "every": 50}
        self._pause_at: dict[str, float | None] = {"step": None, "loss": None}  # presenter's auto-pause
        self.device_label = "…"
        self._follow: RunFollowing | None = None  # a run another process writes (Follow)
        self._fail_next_step: str | None = None  # FailOnPurpose(in_training=True): the next step fails
        LIVE_ENGINES.add(self)

    # -- GUI side ----------------------------------------------------------------------------
    def submit(self, command: Command) -> int:
        """Queue a command (see :mod:`explorer.commands`); returns its request id (answers carry it)."""
        self._queue.put(command)
        return command.request_id

    def release(self) -> None:
        """Let an engine made with ``wait_for_window`` begin (the window is on screen)."""
        self._released.set()

    def shutdown(self, autosave_path: str | None = None, timeout_ms: int = 2000) -> bool:
        """Stop within one step, save unsaved work to ``autosave_path``, and join the thread."""
        self._stop = True
        self._released.set()
        self._queue.put(Shutdown(autosave=autosave_path))
        return self.wait(timeout_ms)

    # -- engine thread -------------------------------------------------------------------------
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
            self.engine_failed.emit(0, str(exc))
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
                    self._later.pop(0)()
                elif self.session is None and quiet > 6 * QUIET_S:  # no model yet (--new): the person is choosing
                    _prepare_optimizers_aside()  # settings; get ready for their Start (nothing is done twice)
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
            case SetProbe():
                self._set_probe(c)
            case SampleSentence():
                self._sample_sentence(c)
            case FillMask():
                self._fill_mask(c)
            case FailOnPurpose(in_training=True):
                self._fail_next_step = c.message
            case FailOnPurpose():
                raise RuntimeError(c.message)
            case _:
                raise TypeError(f"the engine has no handler for {type(c).__name__}")

    def _fail(self, request_id: int, exc: Exception) -> None:
        """A request (or the engine's own work beside training) failed: answer it with a message a person can
        act on. Training, if it runs, goes on as it was: only :meth:`_training_failed` stops it."""
        self.engine_failed.emit(request_id, self._failure_message(exc, training=False))
        self._publish_status()

    def _train_guarded(self) -> None:
        """One training step; a failure of training itself pauses it (state ``error``: Resume continues)."""
        try:
            if self._fail_next_step is not None:
                message, self._fail_next_step = self._fail_next_step, None
                raise RuntimeError(message)
            self._train_one()
        except Exception as exc:  # noqa: BLE001 — becomes a message; the weights stay those of the last step
            self._training_failed(exc)

    def _training_failed(self, exc: Exception) -> None:
        message = self._failure_message(exc, training=True)
        self._state = ERROR
        self._steps_left = 0
        if self.session is not None:
            self.session.pause_clock()
        self._flush_metrics(force=True)
        if isinstance(exc, TrainingDiverged) and self.session is not None:
            self.run_described.emit(self._run_info(self.session))  # rolled back: the history up to the kept step
        self.engine_failed.emit(0, message)
        self._publish_status()

    @staticmethod
    def _failure_message(exc: Exception, training: bool) -> str:
        """The project's own errors as they are worded; anything else named, with what became of the work.
        The traceback goes to the standard error stream, for a developer, never into the window."""
        if isinstance(exc, TrainingDiverged) or (isinstance(exc, (ValueError, OSError)) and not training):
            return decode_error_message(exc)
        if isinstance(exc, (ValueError, OSError)):  # training stopped on a problem it names (a data file gone…)
            return tr("{error} Training is paused and nothing was lost; Resume continues.").format(error=exc)
        traceback.print_exception(exc, file=sys.stderr)
        if training:
            text = N_("Unexpected error: {error}. Training is paused and nothing was lost; you can save your work.")
        else:
            text = N_(
                "Unexpected error: {error}. This request was not carried out; training and your work are as they were."
            )
        return tr(text).format(error=f"{type(exc).__name__}: {exc}")

    def _publish_status(self) -> None:
        s = self.session
        self.status_changed.emit(
            EngineStatus(
                self._state, s.step if s else 0, self._run_id, bool(s and s.dirty), self._path, self.device_label
            )
        )

    # -- training -----------------------------------------------------------------------------
    def _need_session(self) -> Session:
        if self.session is None:
            raise ValueError(tr("There is no model yet: choose a task and press Start, or open a checkpoint."))
        return self.session

    def _train_one(self) -> None:
        session = self._need_session()
        for record in session.train_steps(1):
            (self._pending_evals if "split" in record else self._pending_steps).append(record)
        every = self._probe["every"]
        if every and session.step % every == 0:
            self._record_probe()
        at_step, at_loss = self._pause_at["step"], self._pause_at["loss"]
        loss = session.history.train["loss"][-1]
        if (at_step is not None and session.step >= at_step) or (at_loss is not None and loss <= at_loss):
            self._pause_at = {"step": None, "loss": None}  # once: Resume trains on
            self._state = PAUSED
            session.pause_clock()
            self._flush_metrics(force=True)
            self.paused_at.emit(session.step, loss)
            self._publish_status()
            return
        if self._steps_left:
            self._steps_left -= 1
            if self._steps_left == 0:
                self._state = PAUSED
                session.pause_clock()
                self._flush_metrics(force=True)
                self._publish_status()
                return
        self._flush_metrics()

    def _flush_metrics(self, force: bool = False) -> None:
        """Send buffered metrics at most every 50 ms (the GUI redraws at 25 Hz anyway)."""
        now = time.perf_counter()
        if not (self._pending_steps or self._pending_evals) or (not force and now - self._last_flush < 0.05):
            return
        self._last_flush = now
        steps = StepColumns.of(self._pending_steps)
        self.metrics_logged.emit(
            MetricsBatch(self._run_id, steps, tuple(Evaluation.of(e) for e in self._pending_evals))
        )
        self._pending_steps, self._pending_evals = [], []
        self._publish_status()

    def _new(self, c: NewModel) -> None:
        if c.if_no_model and self.session is not None:
            return  # the program's own start-up plan: the person's model came first
        spec = c.spec  # (the old model trains on if the new one cannot be made; _install makes the engine idle)
        from model.session import Session

        report = self._data_progress(c.request_id, spec.data)
        with without_collector_pauses():  # the corpus, tokenizers and weights live as long as the run
            session = Session.create(
                spec.data,
                spec.preset,
                spec.train,
                spec.tokenizer,
                spec.shared_tokenizer,
                self._device.type,
                data_cache=data_cache_dir(),
                progress=report,
                **spec.model_overrides,
            )
        self._install(session, path=None, origin=c.request_id)
        self._first_probe()  # a new model has its corpus in memory already: the timeline starts at step 0

    def _data_progress(self, request_id: int, data: DataSpec) -> Callable[[str, float | None, str], None]:
        """How reading a big data file (a stream) goes, for the status bar: called on this thread."""
        name = Path(data.path).name if data.path else data.name

        def report(stage: str, fraction: float | None, detail: str) -> None:
            self.load_progressed.emit(
                LoadProgress(request_id, name, stage, -1.0 if fraction is None else fraction, detail)
            )

        return report

    def _install(self, session: Session, path: str | None, origin: int = 0) -> None:
        session.data_cache = session.data_cache or data_cache_dir()
        self._flush_metrics(force=True)  # the old run's last steps belong to the old run
        # the model, its data and tokenizers live long: keep them out of the collector's full walks, which
        # a fast-training model triggers often and which hold the GIL (the window's too) while they walk
        gc.freeze()
        self.session, self._path = session, path
        self._run_id += 1
        self._state = IDLE
        self._decoder = None
        self._probe_step = -1
        self.run_described.emit(replace(self._run_info(session), origin=origin))
        self._publish_status()
        # after the first screen (the panels' requests for the new model come first):
        self._later = [self._describe_data, self._first_probe, _prepare_optimizers_aside]

    def _first_probe(self) -> None:
        if self.session is not None and self._probe_step < 0:  # nothing recorded for this run yet
            self._default_probe(self.session)
            self._record_probe()

    def _default_probe(self, session: Session) -> None:
        """Unless the person chose one, probe with the first test sentence and its reference."""
        if self._probe.get("chosen"):
            return
        try:
            pairs = session.corpus.test or session.corpus.valid
        except Exception:  # noqa: BLE001 — no data (a moved file): no default probe
            pairs = []
        # a single-stream model reads the text alone (a decoder-only one without a continuation: "")
        target = "" if session.model_cfg.single_stream else (pairs[0][1] if pairs else None)
        self._probe.update(source=pairs[0][0] if pairs else None, target=target)

    def _record_probe(self) -> None:
        s, probe = self.session, self._probe
        if s is None or not probe.get("source"):
            return
        try:
            inspection = s.inspect(probe["source"], probe["target"])
        except ValueError:
            return  # an empty or unusable probe sentence: nothing to record
        entropy = {name: attention_entropy(getattr(inspection, name)) for name in ("encoder", "decoder_self", "cross")}
        self._probe_step = s.step
        self.probe_recorded.emit(
            ProbeSnapshot(self._run_id, s.step, probe["source"], probe["target"], inspection, entropy)
        )

    def _set_probe(self, c: SetProbe) -> None:
        """Choose the probe sentence (and target) and how often it is re-run while training."""
        source = c.source.strip()
        before = (self._probe["source"], self._probe["target"])
        self._probe.update(source=source or None, target=c.target.strip() or None, every=c.every, chosen=bool(source))
        if not source and self.session is not None:
            self._default_probe(self.session)
        if (self._probe["source"], self._probe["target"]) != before:  # a new sentence starts a new timeline
            self._record_probe()

    def _explain(self, c: Explain) -> None:
        """Spell out one head."""
        target = None if c.target_ids is None else list(c.target_ids)
        explanation = self._need_session().explain_attention(c.source, target, c.kind, c.layer, c.head)
        self.explained.emit(Explained(c.request_id, explanation))

    def _explain_worked_example(self, c: ExplainWorkedExample) -> None:
        from model.session import notes_example

        self.explained.emit(Explained(c.request_id, notes_example()))

    def _positional(self, c: Positional) -> None:
        t = self._need_session().positional_tables()
        tables = PositionalTables(
            t["kind"],
            t["d_model"],
            t["max_len"],
            t["head_dim"],
            t["step"],
            t.get("source"),
            t.get("target"),
            t.get("t5_encoder"),
            t.get("t5_decoder"),
        )
        self.positional_ready.emit(PositionalReady(c.request_id, tables))

    def _describe_data(self) -> None:
        s = self.session
        if s is None:
            return
        try:
            corpus = s.corpus
            info = CorpusSummary(
                s.data_spec.name,
                TASK_DESCRIPTIONS.get(s.data_spec.task or "", "your file"),
                corpus.n_train,
                len(corpus.valid),
                len(corpus.test),
                corpus.src_lang,
                corpus.tgt_lang,
                corpus.report.summary() if corpus.report else "",
                s.chunk_encoder().truncated if corpus.stream else s.encoded("train").truncated,
            )
            samples = tuple(
                (_pieces(s.src_tok.encode(src)), _pieces(s.tgt_tok.encode(tgt))) for src, tgt in corpus.train[:40]
            )
        except Exception as exc:  # noqa: BLE001 — a moved data file must not stop the model from opening
            info, samples = CorpusSummary(s.data_spec.name, error=str(exc)), ()
        self.data_described.emit(RunData(self._run_id, info, samples))

    def _run_info(self, s: Session) -> RunInfo:
        t, f = s.train_cfg, self._follow  # a followed run's history is its log
        horizon = max(2 * s.step, 5 * t.warmup_steps, 2000, t.total_steps if t.schedule == "cosine" else 0)
        return RunInfo(
            run_id=self._run_id,
            label=run_label(s),
            preset=s.preset,
            model_config=s.model_cfg,
            train_config=s.train_cfg,
            data=s.data_spec,
            tokenizer=s.tokenizer_spec,
            vocab_sizes=(s.src_tok.vocab_size, s.tgt_tok.vocab_size),
            parameters=s.model.parameter_breakdown(),
            total_parameters=s.model.num_parameters(),
            active_parameters=s.model.active_parameters(),
            schedule=_frozen(s.lr_schedule(horizon)),
            src_pieces=tuple(s.src_tok.display_token(i) for i in range(s.src_tok.vocab_size)),
            tgt_pieces=tuple(s.tgt_tok.display_token(i) for i in range(s.tgt_tok.vocab_size)),
            src_words=s.source_words(),
            history_steps=f.steps() if f else StepColumns.from_history(s.history.train),
            history_evals=f.evaluations() if f else tuple(Evaluation.of(e) for e in s.history.evals),
            model_origin=ModelOrigin.of(s.notes),
            weights_step=s.step,
            mask_token=_mask_token(s),
        )

    def _start(self) -> None:
        self._need_session()
        self._steps_left = 0
        self._state = TRAINING
        self._publish_status()

    def _resume(self) -> None:
        """Continue after a pause or an error; an unfinished Step N keeps counting."""
        self._need_session()
        self._state = TRAINING
        self._publish_status()

    def _pause(self) -> None:
        if self._state in (TRAINING, ERROR) and self.session is not None:
            self._state = PAUSED
            self.session.pause_clock()
            self._flush_metrics(force=True)
        self._publish_status()

    def _stop_training(self) -> None:
        self._steps_left = 0
        self._state = IDLE
        if self.session is not None:
            self.session.pause_clock()
        self._flush_metrics(force=True)
        self._publish_status()

    def _set_pause_at(self, c: PauseAt) -> None:
        """Pause by itself at a step or a loss; checked here, so that a bad value never reaches a training step."""
        finite = isinstance(c.loss, (int, float)) and math.isfinite(c.loss)
        if not (c.step is None or isinstance(c.step, int)) or not (c.loss is None or finite):
            raise ValueError(f"pause at: a whole step number and a finite loss are needed (got {c.step!r}, {c.loss!r})")
        self._pause_at = {"step": c.step, "loss": c.loss}

    def _step(self, c: Step) -> None:
        self._need_session()
        self._steps_left = max(1, c.n)
        self._state = TRAINING
        self._publish_status()

    def _change_training(self, c: ChangeTraining) -> None:
        """Change training settings of the current model (learning rate, batch size…)."""
        s = self._need_session()
        changes = {
            f.name: getattr(c.train, f.name)
            for f in fields(c.train)
            if getattr(c.train, f.name) != getattr(s.train_cfg, f.name)
        }
        if changes:
            s.with_train_config(**changes)
        self.run_described.emit(self._run_info(s))  # same run id: the schedule and label update
        self._publish_status()

    def _change_data(self, c: ChangeData) -> None:
        """Train the current model on other data; its weights, tokenizers and optimizer state stay."""
        s = self._need_session()
        from model.data import load_corpus
        from model.session import check_family

        check_family(s.model_cfg.arch, c.data, s.train_cfg)
        corpus = load_corpus(c.data, s.data_cache, self._data_progress(c.request_id, c.data))  # a DataError first
        s.with_data(c.data, corpus)
        self.run_described.emit(self._run_info(s))  # same run id: the label and the data rows update
        self._describe_data()
        if not self._probe.get("chosen"):  # the default probe is a sentence of the data: the new data's
            self._default_probe(s)
            self._record_probe()
        self._publish_status()

    def _load(self, c: Load) -> None:
        """Open a checkpoint: a person's file (it becomes the file Save writes), an autosave or the
        bundled model (neither of which Save may overwrite)."""
        if c.if_no_model and self.session is not None:
            return  # the program's own start-up plan: the person's model came first
        path, kind = c.path, c.kind
        from model.session import Session

        name = Path(path).name

        def report(stage: str, fraction: float) -> None:  # called on this thread while a model folder is read
            self.load_progressed.emit(LoadProgress(c.request_id, name, stage, fraction))

        session = Session.load(path, device=self._device.type, progress=report)  # raises before anything changes
        # restored work is not yet saved anywhere the person chose: dirty from the first status on
        session.dirty = kind == "autosave"
        self._install(session, path=path if kind == "file" else None, origin=c.request_id)

    def _save(self, c: Save) -> None:
        s = self._need_session()
        path = c.path
        try:
            s.save(path)
        except OSError as exc:
            text = tr("{path} could not be saved ({why}); choose another folder or name, and save again.")
            raise OSError(text.format(path=path, why=exc.strerror or exc)) from exc
        self._path = path
        self._publish_status()  # first, so the window's state is current when "saved" arrives
        self.saved.emit(c.request_id, path)

    def _inspect(self, c: Inspect) -> None:
        s = self._need_session()
        self.inspection_ready.emit(InspectionReady(c.request_id, s.inspect(c.source, c.target)))

    def _decode(self, c: Decode) -> None:
        """Step-through decoding: action start (with settings), step, back, run, reset, goto, show."""
        session = self._need_session()
        if self._decoder is None:  # _install drops the driver of an old session
            self._decoder = DecodeDriver(session)
        if c.action == "start":
            if c.settings is None:
                raise ValueError("a decoding start needs its settings")
            view = self._decoder.start(c.settings)
        else:
            view = self._decoder.act(c.action, c.position)
        self.decode_stepped.emit(DecodeStepped(c.request_id, view))

    def _fill_mask(self, c: FillMask) -> None:
        s = self._need_session()
        self.mask_filled.emit(MaskFilled(c.request_id, s.fill_mask(c.text, c.mask_positions, c.top_k)))

    def _sample_sentence(self, c: SampleSentence) -> None:
        """A random source sentence of the asked split (or the next one with sentences), with its reference; a
        corpus that cannot be read (a moved file) is said in the answer, for the panel that asked."""
        s = self._need_session()
        try:
            source, reference, split = s.sample_source(c.split, self._rng)
        except (ValueError, OSError) as exc:  # DataError is a ValueError
            self.sentence_sampled.emit(SentenceSampled(c.request_id, self._run_id, c.split, error=str(exc)))
            return
        self.sentence_sampled.emit(SentenceSampled(c.request_id, self._run_id, c.split, split, source, reference))

    # -- following a run another process writes ---------------------------------------------------------------
    def _start_following(self, c: Follow) -> None:
        following = RunFollowing(RunWatcher(Path(c.folder)), c.request_id)  # RunFolderError: not a run
        self._state = IDLE
        self._follow = following
        self._poll_run(force=True)

    def _unfollow(self) -> None:
        self._follow = None
        self.follow_changed.emit(FollowStatus(""))

    def _poll_run(self, force: bool = False) -> None:
        """Take in what the followed run wrote since the last look (four times a second)."""
        f = self._follow
        assert f is not None
        now = time.monotonic()
        if not force and now - f.polled < 0.25:
            return
        f.polled = now
        poll = f.watcher.poll()
        fresh_steps, fresh_evals = f.take(poll.records, poll.reset)
        if f.ended and (poll.reset or any(step["step"] > self._weights_step() for step in fresh_steps)):
            f.ended = ""  # resumed: it runs again
        installed = poll.checkpoint and self._read_followed_checkpoint(f)  # a new run: its history is the log
        if self.session is None or installed:
            pass
        elif poll.reset:  # a rewritten log (a resume dropped lines): drawn anew
            self.run_described.emit(self._run_info(self.session))
        elif fresh_steps or fresh_evals:
            self.metrics_logged.emit(
                MetricsBatch(self._run_id, StepColumns.of(fresh_steps), tuple(map(Evaluation.of, fresh_evals)))
            )
        f.probes.extend(poll.probes)
        if self.session is not None:
            self._emit_followed_probes(f)
        if force or now - f.said > 1.0:
            f.said = now
            self.follow_changed.emit(
                FollowStatus(
                    str(f.watcher.folder),
                    f.last_step,
                    now - f.watcher.last_change,
                    self.session is None,
                    f.watcher.tail.bad,
                    f.watcher.skipped_probes,
                    f.watcher.problem,
                    f.ended,
                )
            )

    def _read_followed_checkpoint(self, f: RunFollowing) -> bool:
        """The run's checkpoint is new or was replaced: its model becomes the one every panel shows. → whether it
        was installed as a new run (whose history, the log so far, the window then draws whole)."""
        from model.io.checkpoint import CheckpointError
        from model.session import Session

        try:
            session = Session.load(f.watcher.checkpoint_path, device=self._device.type)
        except (CheckpointError, OSError, ValueError, EOFError, RuntimeError):
            f.watcher.retry_checkpoint()  # being copied by a sync tool, say: read it at the next look
            return False
        f.ended = run_ending(session.notes, session.step)  # the trainer's last save says that the run ended
        if self.session is None or f.run_id != self._run_id:
            self._install(session, path=None, origin=f.request_id)  # a new run in the plots: the log so far
            f.run_id = self._run_id
            # (the probes are the trainer's; torch's optimizer imports, 1–4 s, are read aside: polling goes on)
            self._later = [self._describe_data, _prepare_optimizers_aside]
            return True
        session.data_cache = self.session.data_cache  # the same run, newer weights: the panels ask again as they need
        self.session = session
        if self._decoder is not None:  # the sentence being stepped through stays, at its step, on the new weights
            self._decoder.session = session
        self.run_described.emit(self._run_info(session))
        self._publish_status()
        return False

    def _weights_step(self) -> int:
        return self.session.step if self.session is not None else 0

    def _emit_followed_probes(self, f: RunFollowing) -> None:
        while f.probes:
            inspection = f.watcher.read_probe(f.probes.pop(0))
            if inspection is None:
                continue  # thinned out by the trainer meanwhile, or damaged (counted, said in the status bar)
            entropy = {k: attention_entropy(getattr(inspection, k)) for k in ("encoder", "decoder_self", "cross")}
            target = None if not inspection.teacher_forced else "".join(inspection.out_tokens[:-1])
            self.probe_recorded.emit(
                ProbeSnapshot(self._run_id, inspection.step, inspection.source, target, inspection, entropy)
            )

    def _do_shutdown(self, autosave: str | None) -> None:
        """Stop; unsaved work goes to ``autosave`` (never over an autosave nobody has answered for)."""
        self._state = IDLE
        s = self.session
        if s is not None:
            s.pause_clock()
            self._flush_metrics(force=True)
            if autosave and s.dirty:
                path = Path(autosave)
                if path.exists():
                    path = path.with_name(f"{path.stem}-{time.strftime('%Y%m%d-%H%M%S')}{path.suffix}")
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    s.save(path)
                except OSError as exc:  # the window is closing: say it where it can still be read
                    print(f"Transformer Explorer: could not write the autosave file {path}: {exc}", file=sys.stderr)
        LIVE_ENGINES.discard(self)
