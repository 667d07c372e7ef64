"""Decoding speed: cached against recomputing greedy, and beam search against greedy.

- Greedy decoding of 128 tokens with the key/value cache against re-running the
  decoder over the whole prefix at every step (encoder run once in both).
  Goal: cached ≥ 4× faster.
- Beam search (beam 5) against greedy for the same sentence and output length.
  Goal: beam ≤ 2.5× the time of greedy.

The model is the small preset with random weights and EOS made unreachable, so
every run produces exactly 128 tokens and the comparisons do equal work.

- With ``--before``, the same cached greedy decoding by the engine of the commit
  before the families arrived (498864f^, read from git into a package of its own),
  interleaved with this one in the same process. Goal: per token at or below it.

    python -m bench.decoding [--repeats 15] [--threads 2] [--before]
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

from bench.common import interleaved_medians, report
from model.core.config import ModelConfig
from model.core.transformer import Transformer
from model.decoding.search import beam_search, greedy_decode

TOKENS = 128
BEFORE_FAMILIES = "498864f^"  # the engine as it was before the decoder-only and encoder-only families


def make_model(preset: str, device: str = "cpu") -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig.preset(preset, src_vocab_size=1000, tgt_vocab_size=1000)
    model = Transformer(cfg).to(device).eval()
    with torch.no_grad():
        model.generator.bias[cfg.eos_id] = -1e4  # never ends early: equal work in every run
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--preset", default="small")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--before", action="store_true", help=f"also the engine of {BEFORE_FAMILIES}, interleaved")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    med = compare(args.preset, args.device, args.repeats, args.before)
    print(f"{args.preset} preset, {TOKENS} output tokens, source length 20, {args.device}, {args.threads} threads")
    report(
        "decoding",
        med,
        [
            ("cache speed-up (goal >= 4)", "greedy, recomputing the prefix", "greedy, cached"),
            ("beam 5 / greedy (goal <= 2.5)", "beam search, beam 5", "greedy, cached"),
        ],
    )
    per_step = med["greedy, cached"] / TOKENS
    print(f"  cached step: {per_step * 1e3:.3f} ms per token")
    if args.before:
        before = med["greedy, cached, before the families"] / TOKENS
        ratio = per_step / before
        print(f"  before the families ({BEFORE_FAMILIES}): {before * 1e3:.3f} ms per token; now / then {ratio:.2f}")
        print(f"  (recomputing, then: {med['greedy, recomputing, before the families'] * 1e3:.1f} ms)")
    if args.device == "cpu":
        trained_model(args.repeats)


def compare(preset: str, device: str, repeats: int, before: bool = False) -> dict[str, float]:
    """Medians of cached greedy, recomputing greedy and beam 5, each producing exactly TOKENS tokens.
    Each decoder step reads its result back (to stop at EOS), so GPU timings include the waiting."""
    model = make_model(preset, device)
    src = torch.randint(3, 1000, (1, 20), device=device)
    assert len(greedy_decode(model, src, TOKENS)[0]) == TOKENS
    runs = {
        "greedy, cached": lambda: greedy_decode(model, src, TOKENS),
        "greedy, recomputing the prefix": lambda: greedy_decode(model, src, TOKENS, use_cache=False),
        "beam search, beam 5": lambda: beam_search(model, src[0], 5, TOKENS),
    }
    if before:
        runs.update(_before_families(preset, device, src))
    return interleaved_medians(runs, repeats=repeats)


def _before_families(preset: str, device: str, src: torch.Tensor) -> dict[str, Callable[[], object]]:
    """The engine of BEFORE_FAMILIES as the package ``oldmodel`` (its ``model/`` from git, imports renamed),
    its model of the same preset and seed, and its cached and recomputing greedy decoding."""
    tar = subprocess.run(["git", "archive", BEFORE_FAMILIES, "model"], check=True, capture_output=True).stdout
    root = Path(tempfile.mkdtemp(prefix="before-families-"))
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(root, filter="data")
    (root / "model").rename(root / "oldmodel")
    for path in (root / "oldmodel").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"\b(from|import) model\b", r"\1 oldmodel", text)
        path.write_text(text.replace('"model.', '"oldmodel.'), encoding="utf-8")
    sys.path.insert(0, str(root))
    config = importlib.import_module("oldmodel.config")
    transformer = importlib.import_module("oldmodel.transformer")
    decoding = importlib.import_module("oldmodel.decoding")
    torch.manual_seed(0)
    cfg = config.ModelConfig.preset(preset, src_vocab_size=1000, tgt_vocab_size=1000)
    old = transformer.Transformer(cfg).to(device).eval()
    with torch.no_grad():
        old.generator.bias[cfg.eos_id] = -1e4
    assert len(decoding.greedy_decode(old, src, TOKENS)[0]) == TOKENS
    return {
        "greedy, cached, before the families": lambda: decoding.greedy_decode(old, src, TOKENS),
        "greedy, recomputing, before the families": lambda: decoding.greedy_decode(old, src, TOKENS, use_cache=False),
    }


def trained_model(repeats: int) -> None:
    """The same comparison on the bundled trained model and real sentences, where beams end on their own."""
    from model.session import Session
    from resources import default_model

    path = default_model()
    if path is None:
        return
    session = Session.load(path, device="cpu")
    sentences = [s for s, _ in session.corpus.test[:20]]
    sources = [torch.tensor(session._source(s)[1]) for s in sentences]
    lengths = [session.default_max_len(len(s)) for s in sources]

    def greedy_all():
        for src, n in zip(sources, lengths):
            greedy_decode(session.model, src, n)

    def beam_all():
        for src, n in zip(sources, lengths):
            beam_search(session.model, src, 5, n)

    med = interleaved_medians(
        {"greedy, 20 test sentences": greedy_all, "beam 5, 20 test sentences": beam_all}, repeats=max(3, repeats // 3)
    )
    report(
        "decoding with the bundled trained model (grammar-en-zh, small preset)",
        med,
        [("beam 5 / greedy (goal <= 2.5)", "beam 5, 20 test sentences", "greedy, 20 test sentences")],
    )


if __name__ == "__main__":
    main()
