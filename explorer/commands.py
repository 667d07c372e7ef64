"""What the window asks of the engine: one frozen dataclass per command.

A panel (or the main window) makes a command and hands it to :meth:`explorer.worker.Engine.submit`,
which returns the command's ``request_id``; the engine thread dispatches on the command's type
(``Engine._handle``), and every answer it sends carries that id. Go-to-definition on a command's
class leads to its handler. Plain data only: no Qt, no PyTorch.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from model.core.settings import SettingValue
    from model.data import DataSpec
    from model.data.tokenization import TokenizerSpec
    from model.io.snapshots import DecodeSettings
    from model.training.config import TrainConfig

_ids = itertools.count(1)


def next_request_id() -> int:
    return next(_ids)


@dataclass(frozen=True)
class Command:
    request_id: int = field(default_factory=next_request_id, kw_only=True)


# -- models ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NewModelSpec:
    """Everything needed to build a model from scratch."""

    data: DataSpec
    preset: str
    model_overrides: Mapping[str, SettingValue]  # ModelConfig fields set in the form (over the preset's)
    train: TrainConfig
    tokenizer: TokenizerSpec
    shared_tokenizer: bool = False


@dataclass(frozen=True)
class NewModel(Command):
    """Build a fresh model. ``if_no_model``: the program's own start-up plan, dropped once a model exists."""

    spec: NewModelSpec
    if_no_model: bool = False


LoadKind = Literal["file", "autosave", "bundled"]


@dataclass(frozen=True)
class Load(Command):
    """Open a checkpoint: a person's file (Save writes back to it), an autosave or the bundled model; or a
    Hugging Face model folder (Marian opus-mt, GPT-2, BERT), whose progress the engine reports as it reads it."""

    path: str
    kind: LoadKind = "file"
    if_no_model: bool = False


@dataclass(frozen=True)
class Save(Command):
    path: str


@dataclass(frozen=True)
class Follow(Command):
    """Show a training run that another process writes into ``folder`` (``python -m model.train … --out``, torchrun
    on a cluster with the folder shared or synced): its metrics live, its newest checkpoint as the model, its probe
    snapshots. The engine never writes into the folder; what the person does next (a new model, opening one,
    training) ends the following."""

    folder: str
    probe: str = ""  # the sentence whose attention is computed at each checkpoint of a run that writes no probes


# -- training --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunExperiment(Command):
    """Train a bundled experiment's variant beside its baseline (:mod:`model.experiments`): both are built from the
    same seed and initial weights, train in turns on the same batches, and the variant is the model shown."""

    variant: str  # a name of model.experiments.VARIANTS
    preset: str = "tiny"
    steps: int | None = None  # updates of each run (None: the experiment's own, then it pauses)


@dataclass(frozen=True)
class LookInside(Command):
    """Show the other run of the experiment in every panel (both keep training)."""

    run: Literal["baseline", "variant"]


@dataclass(frozen=True)
class Start(Command):
    pass


@dataclass(frozen=True)
class Resume(Command):
    """Continue after a pause or an error; an unfinished Step N keeps counting."""


@dataclass(frozen=True)
class Pause(Command):
    pass


@dataclass(frozen=True)
class Stop(Command):
    pass


@dataclass(frozen=True)
class Step(Command):
    """Train ``n`` updates, then pause."""

    n: int = 1


@dataclass(frozen=True)
class ChangeTraining(Command):
    """New training settings for the current model (learning rate, batch size…); its weights stay."""

    train: TrainConfig


@dataclass(frozen=True)
class ChangeData(Command):
    """Train the current model on other data, keeping its weights and tokenizers (a model opened from a
    Hugging Face folder learns the person's own pairs or a bundled task with the vocabulary it came with)."""

    data: DataSpec


@dataclass(frozen=True)
class PauseAt(Command):
    """Pause by itself once the step reaches ``step`` or the loss falls to ``loss`` (None: off)."""

    step: int | None = None
    loss: float | None = None


# -- looking inside ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Inspect(Command):
    """Teacher-forced attention of a source sentence and a target (None: the model's own output)."""

    source: str
    target: str | None = None


AttentionKind = Literal["encoder", "decoder_self", "cross"]


@dataclass(frozen=True)
class Explain(Command):
    """Spell out one head's attention on the model's own numbers."""

    source: str
    target_ids: tuple[int, ...] | None
    kind: AttentionKind
    layer: int
    head: int


@dataclass(frozen=True)
class ExplainWorkedExample(Command):
    """The worked example (Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]]), spelled out with the
    engine's own code."""


@dataclass(frozen=True)
class Positional(Command):
    """The current model's positional encoding: its kind, sizes and a learned table."""


DecodeAction = Literal["start", "step", "back", "run", "reset", "goto", "show"]


@dataclass(frozen=True)
class Decode(Command):
    """Step-through decoding: ``start`` a sentence (with ``settings``), then step, back, run, reset, goto, show."""

    action: DecodeAction
    settings: DecodeSettings | None = None
    position: int | None = None


@dataclass(frozen=True)
class DecodeLanes(Command):
    """Decoding lanes: ``start`` the sentence several ways at once (one ``settings`` per lane: greedy, beam,
    sampling with a seed…), then step, back, run, reset or show them all on one cursor."""

    action: Literal["start", "step", "back", "run", "reset", "show"]
    settings: tuple[DecodeSettings, ...] = ()


@dataclass(frozen=True)
class FillMask(Command):
    """An encoder-only model's predictions for the masked positions of ``text``: where ``<mask>`` is typed,
    and at the input positions ``mask_positions`` (1 = the first piece after ``<bos>``)."""

    text: str
    mask_positions: tuple[int, ...] = ()
    top_k: int = 5


# -- why the model says what it says (model/interpret) -------------------------------------------------------------
AttributionMethod = Literal["integrated_gradients", "gradient_x_input", "attention_rollout"]


@dataclass(frozen=True)
class Attribute(Command):
    """How much each source token (and each output token read before) contributed to each target token of
    ``source`` → ``target_ids`` (None: the model's own output); ``contrast_id``: why the last target rather than it."""

    source: str
    method: AttributionMethod = "integrated_gradients"
    target_ids: tuple[int, ...] | None = None
    contrast_id: int | None = None
    steps: int = 64


@dataclass(frozen=True)
class LogitLensOf(Command):
    """What each layer would predict for ``source`` → ``target_ids`` (None: the model's own output)."""

    source: str
    target_ids: tuple[int, ...] | None = None
    top_k: int = 5


@dataclass(frozen=True)
class WatchLens(Command):
    """The logit lens is looked at (``on``), or no longer: while it is, each step of a step-through decoding keeps
    what the lens reads, and every decoding view carries its current step's lens (no pass of its own)."""

    on: bool


@dataclass(frozen=True)
class SetInt8(Command):
    """The int8 fast mode of decoding on or off (a translation model, on the CPU): the answer says how far its
    decodings differ from float32's."""

    on: bool


HeadKind = Literal["encoder", "decoder", "cross"]


@dataclass(frozen=True)
class SetAblation(Command):
    """Switch ``heads`` — (kind, layer, head), 0-based — off for every view of the model from now on (training is
    never ablated); none: all on again. ``source``: the sentence whose output is compared before and after."""

    heads: tuple[tuple[HeadKind, int, int], ...] = ()
    mode: Literal["zero", "mean"] = "zero"
    source: str = ""


@dataclass(frozen=True)
class HeadImportanceOf(Command):
    """Ablate each head in turn on ``sentences`` held-out sentences: Δloss and Δaccuracy per head (progress as it
    goes; :meth:`explorer.worker.Engine.cancel_sweep` stops it)."""

    sentences: int = 100
    mode: Literal["zero", "mean"] = "zero"


@dataclass(frozen=True)
class SetProbe(Command):
    """The probe sentence (and target) of attention over training, and how often it is re-run (0: never).
    An empty source goes back to the default probe (the first test sentence)."""

    source: str = ""
    target: str = ""
    every: int = 50


SplitName = Literal["train", "valid", "test"]


@dataclass(frozen=True)
class SampleSentence(Command):
    """A random source sentence of the current corpus's ``split`` (test: never trained on), with its
    reference; from the next split that has sentences (valid, then train) when that one is empty."""

    split: SplitName = "test"


# -- the engine itself -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FailOnPurpose(Command):
    """Fail on purpose (the tests check that the window survives an engine error): as a request that fails, or
    with ``in_training``, as the next training step failing."""

    message: str = "a deliberate failure"
    in_training: bool = False


@dataclass(frozen=True)
class Shutdown(Command):
    """Stop after the current step; unsaved work goes to ``autosave``."""

    autosave: str | None = None


# A newer request of one of these kinds replaces an older one still queued: only the newest view is shown.
LATEST_ONLY: tuple[type[Command], ...] = (Inspect, Explain, Positional, FillMask, Attribute, LogitLensOf)
