"""Decoding speed against what a person would use instead: ``transformers``' generate and CTranslate2.

A folder shaped as ``Helsinki-NLP/opus-mt-en-zh`` (Marian: d 512, 6 + 6 layers, 8 heads, FFN 2048, 65,001 pieces;
77.9 M parameters) with random weights of spread 0.05 and the end token made unreachable (its output bias −10⁴),
so that every decoder produces exactly 40 tokens. A 12-word English sentence; greedy and beam 4; 2 threads;
interleaved, medians:

- this engine (``Session.translate`` on the opened folder), float32, and its int8 fast mode;
- ``transformers``' ``MarianMTModel.generate`` (``num_beams`` 1 and 4, ``max_new_tokens`` 40);
- CTranslate2 (``ct2-transformers-converter``), float32 and int8, ``intra_threads`` 2.

Each decoder runs in a fresh process of its own, the processes taking turns (two libraries' thread pools in one
process slow each other down: measured so, this engine's greedy decoding took 1.3 s instead of 0.5–0.9 s).

Goals: greedy ≤ 1.2× and beam 4 ≤ 1.5× CTranslate2 float32.

    pip install -e '.[test,peers]'
    python -m bench.decoding_peers [--rounds 3] [--repeats 3] [--threads 2] [--folder DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from bench.common import figure
from bench.hf_open import OPUS_MT, write_marian_folder

SENTENCE = "My older brother bought a new red bicycle for his daughter last weekend."  # 12 words
TOKENS, BEAM, SPREAD = 40, 4, 0.05


def make_folder(folder: Path) -> Path:
    """The opus-mt-en-zh-sized folder (written once; ``--folder`` keeps it between runs)."""
    if (folder / "config.json").exists():
        return folder
    import transformers
    from safetensors.torch import load_file, save_file

    write_marian_folder(folder, OPUS_MT)
    (folder / "pytorch_model.bin").unlink()  # the safetensors weights are the ones read
    weights = load_file(str(folder / "model.safetensors"))
    torch.manual_seed(0)
    for name, w in weights.items():
        if w.dim() == 2 and "embed_positions" not in name:  # a 0.05 spread; the sinusoids stay
            w.normal_(0.0, SPREAD)
    weights["final_logits_bias"][0, transformers.MarianConfig.from_pretrained(folder).eos_token_id] = -1e4
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


def convert(folder: Path, out: Path, quantization: str | None) -> Path:
    if not (out / "model.bin").exists():
        cmd = ["ct2-transformers-converter", "--model", str(folder), "--output_dir", str(out), "--force"]
        if quantization:
            cmd += ["--quantization", quantization]
        exe = shutil.which(cmd[0]) or str(Path(sys.executable).parent / cmd[0])
        subprocess.run([exe, *cmd[1:]], check=True, capture_output=True)
    return out


CONTENDERS = ("this engine", "this engine int8", "transformers", "CTranslate2 float32", "CTranslate2 int8")


def decoder(who: str, folder: Path, work: Path, threads: int) -> Callable[[int], list]:
    """``who``'s decoding of SENTENCE with beam size b (1: greedy), loading only what ``who`` needs."""
    if who.startswith("this engine"):
        from model.session import Session

        session = Session.load(folder, device="cpu")
        if who.endswith("int8"):
            print(f"int8 fast mode against float32: {session.set_int8(True)}", file=sys.stderr)
        return lambda b: session.translate(SENTENCE, beam_size=b, max_len=TOKENS, with_reference=False).tokens
    if who == "transformers":
        import transformers

        hf = transformers.MarianMTModel.from_pretrained(folder).eval()
        ids = transformers.MarianTokenizer.from_pretrained(folder)([SENTENCE], return_tensors="pt")

        def generate(b: int) -> list:
            with torch.inference_mode():
                out = hf.generate(**ids, num_beams=b, max_new_tokens=TOKENS, do_sample=False, min_new_tokens=0)
            return out[0, 1:].tolist()

        return generate
    import ctranslate2
    import sentencepiece as spm

    q = who.split()[-1]
    path = convert(folder, work / f"ct2-{q}", None if q == "float32" else q)
    translator = ctranslate2.Translator(str(path), device="cpu", compute_type=q, intra_threads=threads)
    pieces = [*spm.SentencePieceProcessor(model_file=str(folder / "source.spm")).encode(SENTENCE, out_type=str)]
    return lambda b: translator.translate_batch(
        [[*pieces, "</s>"]], beam_size=b, max_decoding_length=TOKENS, return_end_token=True
    )[0].hypotheses[0]


def _one(who: str, folder: Path, work: Path, threads: int, repeats: int) -> None:
    """In a process of its own: ``who``'s median seconds for greedy and beam 4, as one JSON line on stdout."""
    torch.set_num_threads(threads)
    run = decoder(who, folder, work, threads)
    times: dict[str, float] = {}
    for b, label in ((1, "greedy"), (BEAM, f"beam {BEAM}")):
        assert len(run(b)) == TOKENS, f"{who}, {label}: not {TOKENS} tokens"
        samples = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run(b)
            samples.append(time.perf_counter() - t0)
        times[label] = statistics.median(samples)
    print(json.dumps(times))


def measure(folder: Path, work: Path, threads: int, rounds: int, repeats: int) -> dict[str, float]:
    """Each decoder in a fresh process of its own (as a person runs one tool at a time: two libraries' thread
    pools in one process slow each other down), taking turns for ``rounds`` rounds; medians over the rounds."""
    got: dict[str, list[float]] = {}
    for _ in range(rounds):
        for who in CONTENDERS:
            cmd = [sys.executable, "-m", "bench.decoding_peers", "--one", who, "--folder", str(work)]
            cmd += ["--threads", str(threads), "--repeats", str(repeats)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
            for label, seconds in json.loads(out).items():
                got.setdefault(f"{who}, {label}", []).append(seconds)
    return {name: statistics.median(v) for name, v in got.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="decodings timed in each process")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--folder", type=Path, help="where the model folder is written once and kept")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a contender's own process
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.folder or Path(tmp)
        folder = make_folder(work / "opus-mt-en-zh-sized")
        if args.one:
            _one(args.one, folder, work, args.threads, args.repeats)
            return 0
        med = measure(folder, work, args.threads, args.rounds, args.repeats)
    print(f"opus-mt-en-zh-sized Marian, random weights (spread {SPREAD}), {TOKENS} tokens, {args.threads} threads")
    print(f"  each decoder in its own process, {args.rounds} rounds taking turns, {args.repeats} decodings a round")
    for name, seconds in sorted(med.items()):
        print(f"  {name:34s} {seconds:6.3f} s")
    for label, goal in (("greedy", 1.2), (f"beam {BEAM}", 1.5)):
        ratio = med[f"this engine, {label}"] / med[f"CTranslate2 float32, {label}"]
        print(figure(f"this engine / CTranslate2 float32, {label}", ratio, f"<= {goal}", ratio <= goal))
    for who in ("this engine", "this engine int8", "CTranslate2 float32", "transformers"):
        print(f"  {who}: beam {BEAM} / greedy {med[f'{who}, beam {BEAM}'] / med[f'{who}, greedy']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
