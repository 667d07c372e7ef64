"""What the engine thread sends the window: frozen dataclasses of numpy arrays and plain values, never tensors or
modules (see :mod:`explorer.worker`). An answer to a request carries the request's id; the rest describe the run (its
settings, metrics, corpus, probe) or the engine (its state, what it is opening, the run it follows).

Words for a person travel untranslated: a message id (an :class:`EngineMessage`, a stage of :data:`LOAD_STAGES`, a
task's description) that the window translates where it shows it; the engine thread never calls ``tr``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np

from explorer.commands import SplitName
from explorer.i18n import N_
from model.core.config import ModelConfig
from model.data import DataSpec
from model.data.stream import ProgressDetail
from model.data.tokenization import TokenizerSpec
from model.interpret.results import AblationDiff, Attribution, Head, HeadImportance, LensTable
from model.io.snapshots import (
    AttentionExplanation,
    Compared,
    DecodeView,
    FillMaskView,
    Inspection,
    LanesView,
    PositionalTables,
    StepColumns,
)
from model.training.config import TrainConfig

EngineState = Literal["idle", "training", "paused", "error"]
IDLE: Final = "idle"
TRAINING: Final = "training"
PAUSED: Final = "paused"
ERROR: Final = "error"


# -- words for a person, named on the engine thread and translated by the window ---------------------------------


@dataclass(frozen=True)
class EngineMessage:
    """A message for a person as the engine names it. ``text`` is a message id (the English text, marked with
    ``N_``) whose ``{name}`` places the window fills with ``fields`` once it has translated it; with
    ``translate=False`` it is the engine's own words (a data file's problem, a model's error), shown as they are."""

    text: str
    fields: tuple[tuple[str, str | EngineMessage], ...] = ()  # (name, value): a value may be a message itself
    translate: bool = True

    @classmethod
    def as_is(cls, words: str) -> EngineMessage:
        return cls(words, translate=False)

    def worded(self, translated: Callable[[str], str] = str) -> str:
        """The text with its fields filled in, every message id passed through ``translated`` (the window passes
        ``tr``; the default leaves the English)."""
        if not self.translate:
            return self.text
        text = translated(self.text)
        if not self.fields:
            return text
        return text.format(**{name: v if isinstance(v, str) else v.worded(translated) for name, v in self.fields})


@dataclass(frozen=True)
class EngineFailure:
    """A request the engine could not serve (``request_id``; 0: its own work, or a training step), and why."""

    request_id: int
    message: EngineMessage


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


@dataclass(frozen=True)
class LoadProgress:
    """How far the opening of a model has come, for the status bar (sent while a model folder is read)."""

    request_id: int  # the Load it belongs to
    name: str  # the folder's (or file's) name
    stage: str  # untranslated, one of LOAD_STAGES or DATA_STAGES: the window translates it
    fraction: float  # 0…1 (−1: how far is not known)
    detail: ProgressDetail | None = None  # a data file's: how far its reading has come, or its tokenizers' sample


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
class ScalarsLogged:
    """Scalars a followed run logged beyond the metrics the training plots draw (a TensorBoard tag, a Trainer's
    evaluation metric such as eval_bleu, a number a RunWriter loop logged): the new points of each tag."""

    folder: str  # the followed folder they come from (another folder: what was drawn before is dropped)
    reset: bool  # the run's scalars start again from these (a rewritten log): drop what was drawn for it
    tags: tuple[str, ...]  # each as the run named it ("train/loss", "eval_bleu")
    steps: tuple[np.ndarray, ...]  # per tag: the steps of its new points (int64, increasing)
    values: tuple[np.ndarray, ...]  # per tag: the values (float64)


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
    parameters: dict[str, int]  # per parameter group, by id (registry.GROUP_LABELS); the window names it
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
    experiment: ExperimentInfo | None = None  # a run of an experiment (RunExperiment): which, and its other run


@dataclass(frozen=True)
class ExperimentInfo:
    """The experiment a run belongs to: its variant (as model.experiments.VARIANTS says it, in both languages),
    which of the pair this run is, and the other run as the window draws it (its curves beside this one's)."""

    name: str
    title: str
    title_zh: str
    expect: str  # the prediction, said before the run
    expect_zh: str
    measure: str  # model.experiments.variants.MEASURES key
    predicted: Literal["lower", "higher", "same"]  # the variant's figure against the baseline's
    steps: int  # the updates each run trains for
    run: Literal["baseline", "variant"]  # this run
    run_ids: tuple[int, int]  # (baseline, variant)
    other: RunInfo | None = None  # the other run (None inside ``other`` itself)

    def titled(self, zh: bool) -> str:
        return self.title_zh if zh else self.title


@dataclass(frozen=True)
class ExperimentCompared:
    """Both runs of an experiment at one step: the experiment's figure for each, the probe sentence's attention
    in each (the same sentence, the same step) and the same held-out sentences' outputs."""

    run_ids: tuple[int, int]  # (baseline, variant)
    step: int
    measure: tuple[float, float]  # (baseline, variant)
    inspections: tuple[Inspection, Inspection] | None  # of the probe sentence; None: no probe
    outputs: tuple[Compared, ...]


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
class LanesStepped:
    """Decoding lanes on one cursor, as the Lanes panel shows them."""

    request_id: int
    view: LanesView


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
class Attributed:
    request_id: int
    attribution: Attribution
    ablated: tuple[Head, ...] = ()  # heads switched off while it was computed


@dataclass(frozen=True)
class LensReady:
    request_id: int
    table: LensTable
    ablated: tuple[Head, ...] = ()


@dataclass(frozen=True)
class AblationChanged:
    """The heads now switched off for every view, and what that changed for the sentence given (None: none)."""

    request_id: int
    heads: tuple[Head, ...]
    mode: str
    diff: AblationDiff | None


@dataclass(frozen=True)
class Int8Changed:
    """The int8 fast mode is now ``on`` (or off); on, how its greedy decodings of a few sentences compared with
    float32's: how many kept the same tokens, and the largest change of a chosen token's log-probability."""

    request_id: int
    on: bool
    sentences: int = 0
    same_tokens: int = 0
    max_logprob_change: float = 0.0


@dataclass(frozen=True)
class SweepProgress:
    """The head-importance sweep: ``done`` of ``total`` heads."""

    request_id: int
    done: int
    total: int


@dataclass(frozen=True)
class ImportanceReady:
    request_id: int
    importance: HeadImportance


@dataclass(frozen=True)
class ProbeSnapshot:
    """Attention of the probe sentence at one training step (attention over training)."""

    run_id: int
    step: int
    source: str
    target: str | None  # teacher-forced target; None: the model's own greedy output
    inspection: Inspection
    entropy: dict[str, np.ndarray]  # per kind: [layers, heads] mean attention entropy of the rows (nats)
    # per kind, per known head function that applies to it: [layers, heads] scores in [0, 1]
    # (model.interpret.head_functions; NaN where undefined, e.g. induction without a repeated token)
    functions: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
