"""A variant trained beside its baseline, fairly: one task and data, the same seed, the same batches in the same
order (both draw them from one seeded stream over the same encoded pairs), the same initial weights for every
parameter whose name and shape they share (the variant's are copied from the baseline's before the first step),
and alternating steps on one thread, so that load on the machine hits both alike.

``PairedRun(variant, preset="tiny").train(steps)`` trains both; :meth:`PairedRun.measure` gives the experiment's
figure for each; :meth:`PairedRun.write` keeps each as an ordinary run folder (``metrics.jsonl``, ``model.ckpt``)
that the window can open or follow.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from model.core.transformer import Transformer
from model.data import DataSpec, encode_pairs, load_corpus
from model.data.text_batching import EncodedTexts
from model.data.tokenization import TokenizerSpec
from model.decoding.search import generate
from model.experiments.variants import Changes, Variant
from model.families.objectives import evaluate_text
from model.io.follow import ending_note
from model.io.snapshots import Compared
from model.session import Session
from model.training.config import train_config_for
from model.training.trainer import evaluate

RUNS = ("baseline", "variant")
LONGER = 6  # the longest held-out sentences of the "long_" figures are this many symbols longer than any trained on


def data_for(variant: Variant, task: str | None = None, seed: int = 0) -> DataSpec:
    """The data an experiment trains on: its task (or ``task``), sized so that a pair trains in about a minute."""
    task = task or variant.task
    if task.startswith("text-"):
        return DataSpec(task=task, n_train=2000, n_valid=100, n_test=100, seed=seed)
    return DataSpec(task=task, n_train=4000, n_valid=100, n_test=100, length=8, min_length=3, alphabet=8, seed=seed)


def _settings(variant: Variant, run: str) -> Changes:
    """The model and training settings of one run of the pair."""
    own = variant.changed if run == "variant" else variant.baseline
    return Changes({**variant.both.model, **own.model}, {**variant.both.train, **own.train})


class PairedRun:
    """The baseline and the variant of one experiment, trained side by side."""

    def __init__(
        self,
        variant: Variant,
        preset: str = "tiny",
        task: str | None = None,
        seed: int = 0,
        device: str = "cpu",
        data: DataSpec | None = None,
        eval_every: int = 0,
    ) -> None:
        self.variant = variant
        self.data = data or data_for(variant, task, seed)
        self.sessions: dict[str, Session] = {}
        corpus = load_corpus(self.data)
        for run in RUNS:
            changes = _settings(variant, run)
            model = {"arch": variant.arch, **changes.model}
            train = train_config_for(preset, eval_every=eval_every, seed=seed, **changes.train)
            shared = bool(model.get("shared_vocab", False))
            self.sessions[run] = Session._with_tokenizers(
                self.data, preset, train, TokenizerSpec("word"), shared, device, corpus, None, model
            )
        self.shared = share_initial_weights(self.sessions["baseline"].model, self.sessions["variant"].model)
        self.seconds = {run: 0.0 for run in RUNS}
        self.logs: dict[str, IO[str]] = {}

    @property
    def baseline(self) -> Session:
        return self.sessions["baseline"]

    @property
    def changed(self) -> Session:
        return self.sessions["variant"]

    def train(self, steps: int, every: Callable[[int], None] | None = None) -> None:
        """``steps`` updates of each run, taking turns (baseline, variant, baseline, …); ``every(step)`` after
        each pair of updates. A run that diverges stops there; the other goes on."""
        stopped: set[str] = set()
        for _ in range(steps):
            for run in RUNS:
                if run in stopped:
                    continue
                t0 = time.perf_counter()
                try:
                    done = self.sessions[run].train_steps(1)
                except ValueError:  # TrainingDiverged: the session went back to its last good step
                    stopped.add(run)
                    continue
                finally:
                    self.seconds[run] += time.perf_counter() - t0
                if run in self.logs:
                    for step in done:
                        self.logs[run].write(json.dumps(_plain(step.to_dict())) + "\n")
            if every is not None:
                every(self.baseline.step)

    # -- the figure that shows the effect ----------------------------------------------------------------------
    def measure(self, run: str) -> float:
        """The experiment's figure for one run (see :data:`model.experiments.variants.MEASURES`)."""
        session = self.sessions[run]
        how = self.variant.measure
        if how == "train_loss":
            losses = session.history.train["loss"]
            return float(np.mean(losses[-20:])) if losses else math.nan
        if how == "entropy":
            return attention_entropy(session)
        if how == "causal_loss":
            return causal_loss(session)
        if how in ("long_exact_match", "long_bleu"):
            return float(self._longer(session)[how.removeprefix("long_")])
        last = session.history.evals[-1] if session.history.evals else {}
        if last.get("step") == session.step and last.get("split") == "valid" and how in last:
            return float(last[how])  # evaluated at this very step already (eval_every): not twice
        found = session.evaluate("valid")
        return float(found[how])

    def outputs(self, sentences: int = 4) -> list[Compared]:
        """The same held-out sentences through both runs: each one's greedy output (a GPT continues the first half
        of a text; the reference is the rest)."""
        return [
            Compared(source, reference, output_of(self.baseline, source), output_of(self.changed, source))
            for source, reference in held_out(self.baseline, sentences)
        ]

    def _longer(self, session: Session) -> dict[str, Any]:
        """Greedy decoding of held-out sentences longer than any trained on."""
        d = self.data
        spec = dataclasses.replace(
            d, length=d.length + LONGER, min_length=d.length + 1, n_train=10, n_valid=100, seed=d.seed + 1
        )
        pairs = load_corpus(spec).split("valid")
        cfg = session.model_cfg
        encoded = encode_pairs(pairs, session.src_tok, session.tgt_tok, cfg.max_len, session.specials)
        refs = [t for _, t in pairs]
        lang = session.corpus.tgt_lang
        return evaluate(session.model, encoded, refs, session.tgt_tok, lang, session.train_cfg.label_smoothing)

    # -- run folders ---------------------------------------------------------------------------------------------
    def open_folders(self, out: Path) -> dict[str, Path]:
        """``out/baseline/`` and ``out/<variant name>/``, each with its step-0 checkpoint and a fresh metrics.jsonl
        written to as the runs train (a window may follow either from now on)."""
        folders = {"baseline": out / "baseline", "variant": out / self.variant.name}
        for run, folder in folders.items():
            folder.mkdir(parents=True, exist_ok=True)
            session = self.sessions[run]
            session.notes["experiment"] = {"name": self.variant.name, "run": run}
            session.save(folder / "model.ckpt")
            self.logs[run] = open(folder / "metrics.jsonl", "w", encoding="utf-8")  # noqa: SIM115 — closed in close
        return folders

    def close(self, folders: dict[str, Path], status: int = 0) -> None:
        """The final checkpoints (saying how the runs ended) and the logs closed."""
        for run, folder in folders.items():
            session = self.sessions[run]
            session.notes["ended"] = ending_note(session.step, status)
            session.save(folder / "model.ckpt")
            log = self.logs.pop(run, None)
            if log is not None:
                log.close()


def share_initial_weights(baseline: Transformer, variant: Transformer) -> list[str]:
    """Copy the baseline's value of every parameter and buffer the variant has under the same name and shape;
    → their names. A change of shape leaves the variant's own seeded initialisation there; so does a name that
    is another name's tensor in the variant only (a tied output layer is its embedding: the embedding's value is
    copied, once)."""
    theirs, mine = baseline.state_dict(), variant.state_dict()
    seen: dict[int, str] = {}  # storage → the first name of the variant holding it
    same: dict[str, torch.Tensor] = {}
    for name, tensor in mine.items():
        first = seen.setdefault(tensor.data_ptr(), name)
        if name in theirs and theirs[name].shape == tensor.shape:
            if first == name or torch.equal(theirs[name], theirs[first]):  # an alias only where both alias
                same[name] = theirs[name]
    with torch.no_grad():
        for name, value in same.items():
            mine[name].copy_(value)
    return sorted(same)


def attention_entropy(session: Session, sentences: int = 20) -> float:
    """Mean entropy (bits) of every attention row of every head and layer, over held-out sentences: how spread
    the model's attention is (0: each row on one position)."""
    pairs = session.corpus.split("valid")[:sentences]
    if not pairs and session.model_cfg.single_stream:
        pairs = [(t, "") for t in session.corpus.texts("valid")[:sentences]]
    rows: list[float] = []
    for source, target in pairs:
        found = session.inspect(source, target or None)
        for maps in (found.encoder, found.decoder_self, found.cross):
            if maps.size:
                p = np.clip(maps.astype(np.float64), 1e-12, 1.0)
                rows.extend((-(p * np.log2(p)).sum(-1) * (maps.sum(-1) > 0.5)).reshape(-1).tolist())
    return float(np.mean(rows)) if rows else math.nan


def held_out(session: Session, sentences: int) -> list[tuple[str, str]]:
    """The first ``sentences`` validation pairs; a decoder-only model's texts cut in half (prompt, the rest)."""
    if not session.model_cfg.single_stream:
        return [(s, t) for s, t in session.corpus.split("valid")[:sentences]]
    halves = []
    for text in session.corpus.texts("valid")[:sentences]:
        words = text.split()
        cut = max(1, len(words) // 2)
        halves.append((" ".join(words[:cut]), " ".join(words[cut:])))
    return halves


def output_of(session: Session, source: str) -> str:
    """The run's greedy output for ``source`` (a decoder-only model: the continuation of the prompt)."""
    if "generate" in session.model_cfg.family.decoding:
        ids = session.src_tok.encode_ids(source)
        new = generate(session.model, ids, 16)
        return session.tgt_tok.decode(t for t in new if t != session.model_cfg.eos_id)
    return session.translate(source, with_reference=False).text


def causal_loss(session: Session) -> float:
    """The held-out loss of a decoder-only model when it may not look ahead (the mask that generation obeys,
    whatever the model was trained with): its own weights in a model with the causal mask."""
    model = session.model
    causal = Transformer(dataclasses.replace(model.cfg, causal=True)).to(model.device)
    causal.load_state_dict(model.state_dict())
    data = session.encoded("valid")
    assert isinstance(data, EncodedTexts)  # a decoder-only model's data are texts
    loss = evaluate_text(causal, data, session.text_kind, 0.0, **session.text_options())["loss"]
    assert isinstance(loss, float)
    return loss


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    """A step record as metrics.jsonl keeps it (a dense model writes no expert statistics)."""
    return {k: v for k, v in record.items() if k not in ("aux_loss", "expert_load")}
