"""How fast the engine learns, from scratch, on this machine's CPU (or, with --device, a GPU).

    python -m bench.learning --task copy      # tiny preset; goal: >= 99% exact match on held-out sequences in 60 s
    python -m bench.learning --task grammar   # small preset; goal: >= 95% exact match on the held-out-combination
                                              # test split within 5 min
    python -m bench.learning --task hsk       # small preset, 10 min: valid and train BLEU (no goal yet)

Training time is counted alone; evaluations pause the clock. Each evaluation
greedy-decodes the held-out split and prints exact match and BLEU (sacrebleu).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass

import torch

from model.data import DataSpec
from model.data.tokenization import TokenizerSpec
from model.session import Session
from model.training.trainer import train_config_for


@dataclass(frozen=True)
class LearningRun:
    data: DataSpec  # the task trained on
    preset: str  # the model size
    budget: float  # seconds of training
    every: float  # seconds of training between evaluations
    split: str  # the split evaluated
    goal: float | None  # exact match to reach within the budget; None: no goal yet


RUNS = {
    "copy": LearningRun(DataSpec(task="copy"), "tiny", budget=60, every=5, split="test", goal=0.99),
    "grammar": LearningRun(DataSpec(task="grammar-en-zh"), "small", budget=300, every=30, split="test", goal=0.95),
    "hsk": LearningRun(DataSpec(task="hsk-en-zh"), "small", budget=600, every=60, split="valid", goal=None),
}


def run(
    name: str,
    threads: int,
    device: str = "cpu",
    budget: float | None = None,
    every: float | None = None,
    stop_at_goal: bool = False,
) -> float | None:
    """Train task ``name`` from scratch for its time budget; → seconds of training when the goal was reached."""
    spec = RUNS[name]
    spec = dataclasses.replace(spec, budget=budget or spec.budget, every=every or spec.every)
    torch.set_num_threads(threads)
    session = Session.create(
        spec.data,
        spec.preset,
        train_config_for(spec.preset, eval_every=0),
        TokenizerSpec("word"),
        device=device,
    )
    cfg = session.model_cfg
    print(
        f"== {name}: {spec.data.task}, {spec.preset} preset ({session.model.num_parameters():,} parameters, "
        f"d_model {cfg.d_model}, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers), word tokenizer "
        f"({session.src_tok.vocab_size}/{session.tgt_tok.vocab_size}), {threads} threads, "
        f"{len(session.corpus.train)} training pairs, on {session.device}",
        flush=True,
    )
    trained, reached = 0.0, None
    next_eval = spec.every
    while trained < spec.budget:
        t0 = time.perf_counter()
        session.train_steps(10)
        trained += time.perf_counter() - t0
        if trained >= next_eval or trained >= spec.budget:
            next_eval += spec.every
            ev = session.evaluate(spec.split)
            loss = sum(session.history.train["loss"][-10:]) / 10
            print(
                f"  {trained:6.1f} s  step {session.step:5d}  train loss {loss:.3f}  {spec.split}: "
                f"exact match {ev['exact_match']:.3f}  BLEU {ev['bleu']:.1f}",
                flush=True,
            )
            if spec.goal is not None and reached is None and ev["exact_match"] >= spec.goal:
                reached = trained
                if stop_at_goal:
                    break
    final = session.evaluate(spec.split)
    print(
        f"  after {trained:.0f} s of training ({session.step} steps): {spec.split} exact match "
        f"{final['exact_match']:.3f}, BLEU {final['bleu']:.1f}"
    )
    if spec.goal is not None:
        verdict = f"reached {spec.goal:.0%} at {reached:.1f} s" if reached else f"did not reach {spec.goal:.0%}"
        print(f"  goal {spec.goal:.0%} within {spec.budget} s: {verdict}")
    if name == "hsk":
        sample = session.evaluate("train", max_sentences=len(session.corpus.valid))
        print(
            f"  train BLEU (first {sample['sentences']} training sentences): {sample['bleu']:.1f}, "
            f"exact match {sample['exact_match']:.3f}"
        )
        for src, ref in session.corpus.valid[:5]:
            print(f"    {src}  →  {session.translate(src).text}   (reference: {ref})")
    return reached


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", choices=[*RUNS, "all"], default="all")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu (the published figures), cuda, …")
    args = ap.parse_args()
    for name in RUNS if args.task == "all" else [args.task]:
        run(name, args.threads, args.device)


if __name__ == "__main__":
    main()
