"""Attribution, head importance and the logit lens: what asking the model "why" costs, as ratios to what it does anyway.

- Integrated gradients (64 steps, Gauss–Legendre: Captum's rule) for one target token of a 20-token copy-task
  sentence, against one training step of the same model at batch 64 (``Session.train_steps(1)``: batching,
  forward, loss, backward, Adam). Goal: ≤ 1.5×. Beside it, the same with the engine's default ``refine``: a row
  that does not add up within 1% is integrated again adaptively (what the window and ``Session.attribute`` do).
- The head-importance sweep (each head of each attention kind ablated alone, ``ablation.head_importance``) on 100
  held-out sentences, against one teacher-forced evaluation pass over the same sentences (``ablation.scores``
  with nothing ablated, timed between the sweep's heads). Goal: ≤ 1.2 × the number of heads.
- A step-through decoding as the window drives it (start, then a step and its view at a time to the end) with the
  logit lens watched (each step reads it out of its own decoder call, each view carries the focus's table),
  against the same unwatched. Goal: ≤ 1.10×. Beside it, ``Session.logit_lens`` (a teacher-forced pass of its
  own, what the window asks for a prefix not being stepped through) against ``Session.inspect``, a plain
  teacher-forced pass and the lens's read-out alone.

The model is the small preset on the copy task (random weights after the few training steps timed); each
comparison is timed side by side, interleaved, medians taken. The last lines are the figures with their goals.

    python -m bench.interpret [--repeats 10] [--threads 2] [--quick]
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from bench.common import figure, interleaved_medians, quick_arguments, report
from model.data import DataSpec
from model.data.tokenization import TokenizerSpec
from model.decoding.stepping import DecodeDriver
from model.interpret import ablation, attribution, lens
from model.io.snapshots import DecodeSettings
from model.session import Session
from model.training.trainer import train_config_for

IG, TRAIN = "integrated gradients, one target", "training step"
IG_REFINED = "the same, adaptive where it must"
SWEEP, EVAL = "head-importance sweep", "evaluation pass"
LENS, INSPECT, PASS, READ_OUT = "Session.logit_lens", "Session.inspect", "teacher-forced pass", "lens read-out alone"
STEPS_LENS, STEPS_PLAIN = "step-through with the lens watched", "step-through unwatched"


@dataclass(frozen=True)
class Sizes:
    """What the three comparisons measure; ``--quick`` shrinks every size (for the tests)."""

    preset: str = "small"
    length: int = 20  # tokens of the explained sentence (and of every copy-task sentence)
    batch: int = 64
    steps: int = 64  # integration steps
    sentences: int = 100
    repeats: int = 10
    warmup: int = 2


QUICK = Sizes(preset="tiny", length=8, batch=8, steps=8, sentences=16, repeats=2, warmup=1)


def make_session(sizes: Sizes) -> Session:
    torch.manual_seed(0)
    data = DataSpec(
        task="copy", length=sizes.length, min_length=sizes.length, n_train=2000, n_valid=sizes.sentences, n_test=10
    )
    train = train_config_for(sizes.preset, eval_every=0, batch_size=sizes.batch)
    return Session.create(data, sizes.preset, train, TokenizerSpec("word"), device="cpu")


def first_sentence(session: Session) -> str:
    """The first held-out source sentence (``length`` tokens)."""
    return session.corpus.valid[0][0]


def compare_attribution(session: Session, sizes: Sizes) -> dict[str, float]:
    """Integrated gradients for the middle target token of one sentence, against one training step."""
    sentence = first_sentence(session)
    readout = session.readout(sentence, sentence)  # the copy: the target is the sentence itself
    row = len(readout.targets) // 2

    def explain(refine: bool) -> None:
        session.model.eval()
        attribution.integrated_gradients(session.model, readout, sizes.steps, rows=[row], refine=refine)

    runs = {IG: lambda: explain(False), IG_REFINED: lambda: explain(True), TRAIN: lambda: session.train_steps(1)}
    return interleaved_medians(runs, repeats=sizes.repeats, warmup=sizes.warmup)


def heads_of(session: Session) -> int:
    model = session.model
    layers = {"encoder": len(model.encoder_layers), "decoder": len(model.decoder_layers)}
    return sum(layers["encoder" if k == "encoder" else "decoder"] for k in ablation.kinds_of(model)) * model.cfg.n_heads


def compare_importance(session: Session, sizes: Sizes) -> dict[str, float]:
    """The sweep over every head against one evaluation pass, both on the first ``sentences`` held-out pairs.

    A sweep takes seconds, long enough for other work on the machine to come and go, so the plain evaluation
    passes are timed inside it: one between each two heads (through the sweep's progress callback, taken out of
    the sweep's time), and both meet the same load. Medians over the repeated sweeps."""
    model = session.model
    model.eval()
    batches = ablation.first_batches(session.encoded("valid"), sizes.sentences, "", {})
    ablation.scores(model, batches)  # warm-up
    sweeps, passes = [], []
    for _ in range(max(1, sizes.repeats // 3)):
        between: list[float] = []

        def plain_pass(done: int, total: int, between: list[float] = between) -> bool:
            t0 = time.perf_counter()
            ablation.scores(model, batches)
            between.append(time.perf_counter() - t0)
            return True

        t0 = time.perf_counter()
        ablation.head_importance(model, batches, progress=plain_pass)
        sweeps.append(time.perf_counter() - t0 - sum(between))
        passes.append(statistics.mean(between))
    return {SWEEP: statistics.median(sweeps), EVAL: statistics.median(passes)}


def compare_lens(session: Session, sizes: Sizes) -> dict[str, float]:
    """The logit lens against inspecting the same sentence and target; a plain pass and the read-out beside."""
    sentence = first_sentence(session)
    session.model.eval()
    readout = session.readout(sentence, sentence)
    streams = torch.randn(len(session.model.decoder_layers), len(readout.rows), session.model_cfg.d_model)

    @torch.inference_mode()
    def plain() -> None:
        session.model(*readout.inputs)

    @torch.inference_mode()
    def read_out() -> None:
        lens.read_out(session.model, streams).float().softmax(-1)

    runs = {
        LENS: lambda: session.logit_lens(sentence, sentence),
        INSPECT: lambda: session.inspect(sentence, sentence),
        PASS: plain,
        READ_OUT: read_out,
        STEPS_LENS: lambda: stepped(session, sentence, True),
        STEPS_PLAIN: lambda: stepped(session, sentence, False),
    }
    return interleaved_medians(runs, repeats=sizes.repeats * 5, warmup=sizes.warmup)


def stepped(session: Session, sentence: str, watched: bool) -> None:
    """A step-through decoding as the window drives it: start, then a step and its view at a time to the end,
    with the logit lens watched or not."""
    driver = DecodeDriver(session, lens=watched)
    view = driver.start(DecodeSettings(sentence))
    while not view.at_end:
        view = driver.act("step")


def figures(
    sizes: Sizes, heads: int, ig: dict[str, float], imp: dict[str, float], lens_: dict[str, float]
) -> list[str]:
    """The three figures, each with its goal and whether it holds."""
    ig_ratio = ig[IG] / ig[TRAIN]
    per_head = imp[SWEEP] / (heads * imp[EVAL])
    lens_ratio = lens_[STEPS_LENS] / lens_[STEPS_PLAIN]
    return [
        figure(
            f"integrated gradients ({sizes.steps} steps), one target of one {sizes.length}-token sentence / one "
            f"training step at batch {sizes.batch}, {sizes.preset}",
            ig_ratio,
            "goal ≤ 1.5×",
            ig_ratio <= 1.5,
        ),
        figure(
            f"head-importance sweep of {heads} heads on {sizes.sentences} sentences / ({heads} × one evaluation "
            f"pass), {sizes.preset}",
            per_head,
            "goal ≤ 1.2×",
            per_head <= 1.2,
        ),
        figure(
            f"step-through decoding of a {sizes.length}-token sentence with the logit lens watched / unwatched, "
            f"{sizes.preset}",
            lens_ratio,
            "goal ≤ 1.1×",
            lens_ratio <= 1.1,
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    args = quick_arguments(__doc__.splitlines()[0], Sizes.repeats, argv)
    sizes = QUICK if args.quick else Sizes(repeats=args.repeats)
    session = make_session(sizes)
    heads = heads_of(session)
    cfg = session.model_cfg
    print(
        f"{sizes.preset} preset (d_model {cfg.d_model}, {cfg.n_heads} heads, {cfg.n_encoder_layers}+"
        f"{cfg.n_decoder_layers} layers, {heads} heads in all), copy task of {sizes.length}-token sentences; cpu, "
        f"{args.threads} threads, {sizes.repeats} repeats"
    )
    ig = compare_attribution(session, sizes)
    report(
        "integrated gradients against a training step",
        ig,
        [("IG / training step (goal ≤ 1.5)", IG, TRAIN), ("adaptive IG / training step", IG_REFINED, TRAIN)],
    )
    imp = compare_importance(session, sizes)
    report(
        "head importance against an evaluation pass", imp, [(f"sweep / pass (goal ≤ {1.2 * heads:.1f})", SWEEP, EVAL)]
    )
    seen = compare_lens(session, sizes)
    report(
        "logit lens against inspecting",
        seen,
        [
            ("step-through watched / unwatched (goal ≤ 1.1)", STEPS_LENS, STEPS_PLAIN),
            ("lens / inspect", LENS, INSPECT),
            ("lens / plain pass", LENS, PASS),
            ("read-out / pass", READ_OUT, PASS),
        ],
    )
    print("== figures")
    for line in figures(sizes, heads, ig, imp, seen):
        print(line)


if __name__ == "__main__":
    main()
