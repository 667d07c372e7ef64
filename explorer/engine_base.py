"""What every group of the engine's handlers shares: the signals it answers on, the run it holds (the session, its
id, its state) and what it says about that run — its status, its description, its corpus, its metrics and the
probe sentence's attention.

The engine (:class:`explorer.worker.Engine`) adds the loop and the one dispatch; the handlers of each concern build
on this class: training (:mod:`explorer.engine_training`), looking inside the model (:mod:`explorer.engine_views`),
files (:mod:`explorer.engine_files`) and following a run (:mod:`explorer.engine_following`). Everything here runs on
the engine thread, but for :meth:`EngineBase._on_failure_named`, which words a failure on the window's.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QThread, Signal

from explorer.answers import (
    IDLE,
    AblationChanged,
    Attributed,
    CorpusSummary,
    DecodeStepped,
    EngineFailure,
    EngineMessage,
    EngineState,
    EngineStatus,
    Evaluation,
    ExperimentCompared,
    Explained,
    FollowStatus,
    ImportanceReady,
    InspectionReady,
    Int8Changed,
    LanesStepped,
    LensReady,
    LoadProgress,
    MaskFilled,
    MetricsBatch,
    ModelOrigin,
    PiecesOf,
    PositionalReady,
    ProbeSnapshot,
    RunData,
    RunInfo,
    ScalarsLogged,
    SentenceSampled,
    SweepProgress,
)
from explorer.failures import NO_MODEL, RefusedRequest, failure_text
from explorer.pieces import shown_pieces
from model.data import TASK_DESCRIPTIONS, DataSpec
from model.data.tokenization import Encoded
from model.decoding.lanes import LanesDriver
from model.decoding.stepping import DecodeDriver
from model.interpret.head_functions import head_functions
from model.interpret.results import Attribution, Head
from model.io.snapshots import StepColumns

if TYPE_CHECKING:
    import torch

    from explorer.run_following import RunFollowing
    from model.data.stream import Progress as DataProgress
    from model.data.stream import ProgressDetail
    from model.experiments.paired import PairedRun
    from model.session import Session


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
    fills_masks = "fill_mask" in s.model_cfg.family.decoding
    return s.src_tok.id_to_token(mask_id) if fills_masks and mask_id is not None else None


def run_info_of(s: Session, run_id: int, follow: RunFollowing | None = None) -> RunInfo:
    """What the window is told about ``s``'s model as run ``run_id`` (a followed run's history is its log)."""
    t = s.train_cfg
    horizon = max(2 * s.step, 5 * t.warmup_steps, 2000, t.total_steps if t.schedule == "cosine" else 0)
    tgt_pieces = _vocabulary(s.tgt_tok, "pieces", lambda: _token_pieces(s.tgt_tok))
    shown_pieces(tgt_pieces)  # as the views write them, worked out here rather than on the window's thread
    return RunInfo(
        run_id=run_id,
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
        # a Trainer's (or a loop's) checkpoint folder: its schedule is the Trainer's, which only the log shows
        schedule=_frozen(np.empty(0) if follow and follow.watcher.checkpoint_path.is_dir() else s.lr_schedule(horizon)),
        src_pieces=_vocabulary(s.src_tok, "pieces", lambda: _token_pieces(s.src_tok)),
        tgt_pieces=tgt_pieces,
        src_words=_vocabulary(s.src_tok, "words", s.source_words),
        history_steps=follow.steps() if follow else StepColumns.from_history(s.history.train),
        history_evals=follow.evaluations() if follow else tuple(Evaluation.of(e) for e in s.history.evals),
        model_origin=ModelOrigin.of(s.notes),
        weights_step=s.step,
        mask_token=_mask_token(s),
    )


# tokenizer's id → (the tokenizer, its tables by name): the last few tokenizers' pieces and whole words
_VOCABULARIES: dict[int, tuple[Any, dict[str, tuple[str, ...]]]] = {}


def _vocabulary(tok: Any, table: str, build: Callable[[], tuple[str, ...]]) -> tuple[str, ...]:
    """``tok``'s ``table`` ("pieces", "words"), built once per tokenizer: for 65,001 pieces that is ~0.5 s of Python
    that the window's thread would wait behind. The tokenizer does not change while a session lives, and a followed
    run's checkpoints share theirs (:func:`model.hf.tokenizers.load_folder_tokenizers`): a new checkpoint sends the
    same tuples again, which the window sees it has drawn already."""
    entry = _VOCABULARIES.get(id(tok))
    if entry is None or entry[0] is not tok:
        entry = _VOCABULARIES[id(tok)] = (tok, {})
        while len(_VOCABULARIES) > 4:  # two sessions' two sides (an experiment's)
            del _VOCABULARIES[next(iter(_VOCABULARIES))]
    if table not in entry[1]:
        entry[1][table] = build()
    return entry[1][table]


def _token_pieces(tok: Any) -> tuple[str, ...]:
    """Every id's piece as shown, in slices that let the GIL go between them (the window's thread otherwise waits
    up to the 5 ms switch interval for it at each of its calls into Qt)."""
    pieces: list[str] = []
    for start in range(0, tok.vocab_size, 4096):
        pieces.extend(map(tok.display_token, range(start, min(start + 4096, tok.vocab_size))))
        time.sleep(0)
    return tuple(pieces)


def _pieces(encoded: Encoded) -> PiecesOf:
    unknown = set(encoded.unknown)  # the spans of the pieces the vocabulary lacks
    return PiecesOf(tuple(encoded.tokens), frozenset(i for i, span in enumerate(encoded.spans) if span in unknown))


def run_label(s: Session) -> str:
    c, t = s.model_cfg, s.train_cfg
    family = c.family.labels.get("badge", "")  # "GPT · ", "BERT · "; the translator has none
    experts = f" · {c.n_experts} experts top-{c.experts_top_k}" if c.moe else ""
    return (
        f"{family}{s.data_spec.name} · {s.preset} · {c.norm}-LN · {c.positional}{experts} · "
        f"ls {t.label_smoothing:g} · {t.schedule}"
    )


class EngineBase(QThread):
    """The engine's signals, the run it holds, and what it says about the run (see the module's docstring)."""

    status_changed = Signal(EngineStatus)
    metrics_logged = Signal(MetricsBatch)
    run_described = Signal(RunInfo)  # a new run (new model, checkpoint, reset) or new settings of one
    data_described = Signal(RunData)  # the corpus of the current run
    inspection_ready = Signal(InspectionReady)
    decode_stepped = Signal(DecodeStepped)
    lanes_stepped = Signal(LanesStepped)  # decoding lanes on one cursor
    probe_recorded = Signal(ProbeSnapshot)  # the probe sentence's attention at one step
    explained = Signal(Explained)
    paused_at = Signal(int, float)  # the auto-pause fired: step, loss
    positional_ready = Signal(PositionalReady)
    sentence_sampled = Signal(SentenceSampled)
    mask_filled = Signal(MaskFilled)  # an encoder-only model's predictions for masked positions
    saved = Signal(int, str)  # request id, path
    engine_failed = Signal(int, str)  # request id, message a person can act on (in the interface language)
    failure_named = Signal(EngineFailure)  # the same failure as the engine thread names it (untranslated)
    load_progressed = Signal(LoadProgress)  # a model folder being opened: what is being read, how far
    follow_changed = Signal(FollowStatus)  # the run being followed: how fresh it is (about once a second)
    scalars_logged = Signal(ScalarsLogged)  # a followed run's own scalars (TensorBoard tags, Trainer metrics)
    attributed = Signal(Attributed)  # how much each input token contributed to each output token
    lens_ready = Signal(LensReady)  # what each layer would predict
    ablation_changed = Signal(AblationChanged)  # the heads switched off for every view, and what that changed
    int8_changed = Signal(Int8Changed)  # the int8 fast mode of decoding on or off, and how far it differs
    sweep_progressed = Signal(SweepProgress)  # the head-importance sweep, head by head
    importance_ready = Signal(ImportanceReady)  # Δloss / Δaccuracy per head
    experiment_compared = Signal(ExperimentCompared)  # an experiment's two runs side by side at one step

    _device: torch.device  # where the model runs (set as the engine thread begins)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.session: Session | None = None  # engine thread only
        self._state: EngineState = IDLE
        self._run_id = 0
        self._path: str | None = None
        self._steps_left = 0  # "step N": updates still to do before pausing
        self._pending_steps: list[dict[str, float]] = []
        self._pending_evals: list[dict[str, Any]] = []
        self._last_flush = 0.0
        self._decoder: DecodeDriver | None = None
        self._lanes: LanesDriver | None = None  # decoding lanes (DecodeLanes)
        self._lens_watched = False  # the Why? panel shows the logit lens: decoding steps keep what it reads
        self._ablation: tuple[Head, ...] = ()  # heads switched off for every view of the model (never training)
        self._ablation_mode = "zero"
        self._attributions: dict[tuple, tuple[tuple[int, ...], Attribution]] = {}  # the last prefix explained
        self._sweep_cancel = threading.Event()  # set from the window's thread: stop the head-importance sweep
        self._rng = random.Random()  # random sentences of the corpus
        self._later: list[Callable[[], None]] = []  # done once commands stop coming (see explorer.worker.QUIET_S)
        self._probe_step = -1  # step of the last probe snapshot
        self._probe: dict[str, Any] = {"source": None, "target": None, "every": 50}
        self._pause_at: dict[str, float | None] = {"step": None, "loss": None}  # presenter's auto-pause
        self.device_label = "…"
        self._follow: RunFollowing | None = None  # a run another process writes (Follow)
        self._fail_next_step: str | None = None  # FailOnPurpose(in_training=True): the next step fails
        self._pair: PairedRun | None = None  # an experiment (RunExperiment): the variant and its baseline
        self._pair_ids: dict[str, int] = {}  # their run ids, by "baseline" / "variant"
        self._pair_stopped: set[str] = set()  # a run of the pair that diverged
        self._companion_pending: dict[int, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}  # steps, evals
        # this object lives on the window's thread: a failure named on the engine thread is worded there
        self.failure_named.connect(self._on_failure_named)

    def _on_failure_named(self, failure: EngineFailure) -> None:
        """(The window's thread.) A failure in the interface language, for whoever listens to ``engine_failed``."""
        self.engine_failed.emit(failure.request_id, failure_text(failure.message))

    def _publish_status(self) -> None:
        s = self.session
        self.status_changed.emit(
            EngineStatus(self._state, s.step if s else 0, self._run_id, self._unsaved(s), self._path, self.device_label)
        )

    def _in_pair(self, s: Session | None) -> bool:
        """``s`` is a run of the experiment open now (RunExperiment)."""
        return self._pair is not None and any(s is run for run in self._pair.sessions.values())

    def _unsaved(self, s: Session | None) -> bool:
        """Trained since it was saved, and not an experiment's run (one click makes that again exactly: the same
        seed, initial weights and batches), so replacing it asks first."""
        return bool(s and s.dirty) and not self._in_pair(s)

    def _need_session(self) -> Session:
        if self.session is None:
            raise RefusedRequest(EngineMessage(NO_MODEL))
        return self.session

    def _run_info(self, s: Session) -> RunInfo:
        return run_info_of(s, self._run_id, self._follow)

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
        for run_id, (records, evals) in self._companion_pending.items():  # an experiment's other run
            if records or evals:
                batch = MetricsBatch(run_id, StepColumns.of(records), tuple(map(Evaluation.of, evals)))
                self.metrics_logged.emit(batch)
        self._companion_pending = {}
        self._publish_status()

    def _data_progress(self, request_id: int, data: DataSpec) -> DataProgress:
        """How reading a big data file (a stream) goes, for the status bar: called on this thread."""
        name = Path(data.path).name if data.path else data.name

        def report(stage: str, fraction: float | None, detail: ProgressDetail) -> None:
            self.load_progressed.emit(
                LoadProgress(request_id, name, stage, -1.0 if fraction is None else fraction, detail)
            )

        return report

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
            ProbeSnapshot(
                self._run_id, s.step, probe["source"], probe["target"], inspection, entropy, head_functions(inspection)
            )
        )
        self._compare()

    def _train_companion(self) -> None:
        """One update of an experiment's run not shown (:class:`explorer.engine_experiment.ExperimentHandlers`)."""

    def _compare(self) -> None:
        """An experiment's two runs compared at this step (:class:`explorer.engine_experiment.ExperimentHandlers`)."""
