"""Opening a real-size Hugging Face model folder, and decoding with it.

A folder shaped as ``Helsinki-NLP/opus-mt-en-zh`` (Marian: d_model 512, 6 + 6 layers, 8 heads, FFN 2048,
SiLU, a shared vocabulary of 65,001 tokens: 77.9 M parameters, 312 MB of float32 weights) is written with
random weights, both as ``pytorch_model.bin`` and as ``model.safetensors``, with SentencePiece tokenizers
trained on the HSK sentences (nothing is downloaded). Measured side by side, interleaved, medians taken:

- opening the folder (config, tokenizers, weights read and checked, model built: ``Session.load(FOLDER)``)
  against ``torch.load`` of the same weights alone. Goal: ≤ 2×.
- one decoding step of beam search (beam 4, attention rows recorded, as the window's stepper runs it) on
  a 20-token English sentence, and one greedy step. Goal: ≤ 100 ms per step on the development CPU.

    python -m bench.hf_open [--repeats 5] [--threads 2] [--quick]

Needs ``transformers`` (the ``test`` extra) to write the folder.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from bench.common import interleaved_medians, report


@dataclass(frozen=True)
class MarianSizes:
    """The sizes of a Marian model; its ``config.json`` gives layers, heads and feed-forward width for the
    encoder and the decoder apart (``encoder_layers``, ``decoder_layers``, …), equal here."""

    vocab_size: int  # shared by source and target, the padding id last
    d_model: int
    layers: int  # in the encoder and in the decoder
    attention_heads: int
    ffn_dim: int
    max_position_embeddings: int


OPUS_MT = MarianSizes(
    vocab_size=65001, d_model=512, layers=6, attention_heads=8, ffn_dim=2048, max_position_embeddings=512
)
QUICK = MarianSizes(vocab_size=5001, d_model=64, layers=2, attention_heads=4, ffn_dim=128, max_position_embeddings=128)
SENTENCE = "Yesterday my younger sister bought three new books at the bookshop near our school."


def _train_spm(lines: list[str], size: int) -> bytes:
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=size,
        character_coverage=0.9995,
        model_type="unigram",
        minloglevel=2,
        hard_vocab_limit=False,
    )
    return model.getvalue()


def write_marian_folder(folder: Path, sizes: MarianSizes) -> None:
    """A Marian folder of ``sizes`` with random weights (both formats) and HSK-trained tokenizers."""
    import transformers

    from model.data.hsk import load_hsk_pairs

    pairs = [pair for split in load_hsk_pairs() for pair in split]
    pieces = min(4000, sizes.vocab_size // 2 - 2)
    source = _train_spm([en for en, _ in pairs], pieces)
    target = _train_spm([zh for _, zh in pairs], pieces)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "source.spm").write_bytes(source)
    (folder / "target.spm").write_bytes(target)
    vocab = {"</s>": 0, "<unk>": 1}
    for blob in (source, target):
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_proto=blob)
        for i in range(sp.get_piece_size()):
            vocab.setdefault(sp.id_to_piece(i), len(vocab))
    while len(vocab) < sizes.vocab_size - 1:  # the real vocabulary is larger than these two samples
        vocab[f"▁filler{len(vocab)}"] = len(vocab)
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    pad = sizes.vocab_size - 1
    config = transformers.MarianConfig(
        vocab_size=sizes.vocab_size,
        d_model=sizes.d_model,
        encoder_layers=sizes.layers,
        decoder_layers=sizes.layers,
        encoder_attention_heads=sizes.attention_heads,
        decoder_attention_heads=sizes.attention_heads,
        encoder_ffn_dim=sizes.ffn_dim,
        decoder_ffn_dim=sizes.ffn_dim,
        max_position_embeddings=sizes.max_position_embeddings,
        activation_function="swish",
        scale_embedding=True,
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        forced_eos_token_id=0,
    )
    model = transformers.MarianMTModel(config).eval()
    model.save_pretrained(folder)  # config.json and model.safetensors
    torch.save(model.state_dict(), folder / "pytorch_model.bin")


def _without(folder: Path, name: str, root: Path) -> Path:
    """A view of ``folder`` without the file ``name`` (links to the others), so that one format is read."""
    view = root / f"{folder.name}-no-{name}"
    view.mkdir(exist_ok=True)
    for f in folder.iterdir():
        if f.name != name and not (view / f.name).exists():
            (view / f.name).symlink_to(f)
    return view


def _step_times(session, beam: int, steps: int) -> float:
    """Median seconds of one decoding step (attention recorded) over ``steps`` steps."""
    stepper = session.stepper(SENTENCE, beam_size=beam).stepper
    times = []
    for _ in range(steps):
        if stepper.at_end:
            break
        t0 = time.perf_counter()
        stepper.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="a small model (for the tests)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    from model.session import Session

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "opus-mt-en-zh"
        write_marian_folder(folder, QUICK if args.quick else OPUS_MT)
        pickled, safe = _without(folder, "model.safetensors", root), _without(folder, "pytorch_model.bin", root)
        weights = folder / "pytorch_model.bin"
        medians = interleaved_medians(
            {
                "torch.load of the weights alone": lambda: torch.load(weights, weights_only=True),
                "open the folder (pytorch_model.bin)": lambda: Session.load(pickled, device="cpu"),
                "open the folder (model.safetensors)": lambda: Session.load(safe, device="cpu"),
            },
            args.repeats,
            warmup=1,
        )
        report("opening a Marian folder", medians, [])
        session = Session.load(safe, device="cpu")
        beam_step, greedy_step = _step_times(session, 4, 12), _step_times(session, 1, 12)
    base = medians["torch.load of the weights alone"]
    params = session.model.num_parameters()
    for name in ("open the folder (pytorch_model.bin)", "open the folder (model.safetensors)"):
        ratio = medians[name] / base
        print(
            f"{name} ({params / 1e6:.1f} M parameters) vs torch.load: {ratio:.2f}× (goal ≤ 2.0×): "
            f"{'holds' if ratio <= 2.0 else 'FAILS'}"
        )
    for name, t in (("beam search step, beam 4", beam_step), ("greedy step", greedy_step)):
        print(f"{name}, attention recorded: {t * 1e3:.1f} ms (goal ≤ 100 ms): {'holds' if t <= 0.1 else 'FAILS'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
