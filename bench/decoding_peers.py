"""Decoding speed against what a person would use instead: ``transformers``' generate and CTranslate2.

A folder shaped as ``Helsinki-NLP/opus-mt-en-zh`` (Marian: d 512, 6 + 6 layers, 8 heads, FFN 2048, 65,001 pieces;
77.9 M parameters) with random weights of spread 0.05 and the end token made unreachable (its output bias −10⁴),
so that every decoder produces exactly 40 tokens. A 12-word English sentence; greedy and beam 4; 2 threads;
interleaved, medians:

- this engine (``Session.translate`` on the opened folder), float32, and its int8 fast mode;
- ``transformers``' ``MarianMTModel.generate`` (``num_beams`` 1 and 4, ``max_new_tokens`` 40);
- CTranslate2 (``ct2-transformers-converter``), float32 and int8, ``intra_threads`` 2.

Goals: greedy ≤ 1.2× and beam 4 ≤ 1.5× CTranslate2 float32.

    pip install -e '.[test,peers]'
    python -m bench.decoding_peers [--repeats 7] [--threads 2] [--folder DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from bench.common import figure, interleaved_medians
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


def engines(folder: Path, work: Path, threads: int) -> dict[str, object]:
    """Each decoder as a callable that decodes SENTENCE (greedy, or beam 4), checked to produce TOKENS tokens."""
    import ctranslate2
    import sentencepiece as spm
    import transformers

    from model.session import Session

    session = Session.load(folder, device="cpu")
    fast = Session.load(folder, device="cpu")
    print(f"int8 fast mode against float32: {fast.set_int8(True)}")
    hf = transformers.MarianMTModel.from_pretrained(folder).eval()
    hf_tok = transformers.MarianTokenizer.from_pretrained(folder)
    hf_ids = hf_tok([SENTENCE], return_tensors="pt")
    pieces = spm.SentencePieceProcessor(model_file=str(folder / "source.spm")).encode(SENTENCE, out_type=str)
    ct2 = {
        q: ctranslate2.Translator(
            str(convert(folder, work / f"ct2-{q}", None if q == "float32" else q)),
            device="cpu",
            compute_type=q,
            intra_threads=threads,
        )
        for q in ("float32", "int8")
    }

    def ours(s: Session, beam: int):
        return lambda: s.translate(SENTENCE, beam_size=beam, max_len=TOKENS, with_reference=False).tokens

    def theirs(beam: int):
        def run():
            with torch.inference_mode():
                out = hf.generate(**hf_ids, num_beams=beam, max_new_tokens=TOKENS, do_sample=False, min_new_tokens=0)
            return out[0, 1:].tolist()

        return run

    def ct(q: str, beam: int):
        return lambda: (
            ct2[q]
            .translate_batch([[*pieces, "</s>"]], beam_size=beam, max_decoding_length=TOKENS, return_end_token=True)[0]
            .hypotheses[0]
        )

    runs: dict[str, object] = {}
    for beam, label in ((1, "greedy"), (BEAM, f"beam {BEAM}")):
        runs[f"this engine, {label}"] = ours(session, beam)
        runs[f"this engine int8, {label}"] = ours(fast, beam)
        runs[f"transformers, {label}"] = theirs(beam)
        runs[f"CTranslate2 float32, {label}"] = ct("float32", beam)
        runs[f"CTranslate2 int8, {label}"] = ct("int8", beam)
    for name, run in runs.items():
        n = len(run())  # type: ignore[operator]
        assert n == TOKENS, f"{name}: {n} tokens, not {TOKENS}"
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--folder", type=Path, help="where the model folder is written once and kept")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.folder or Path(tmp)
        folder = make_folder(work / "opus-mt-en-zh-sized")
        runs = engines(folder, work, args.threads)
        med = interleaved_medians(runs, repeats=args.repeats, warmup=1)  # type: ignore[arg-type]
    print(f"opus-mt-en-zh-sized Marian, random weights (spread {SPREAD}), {TOKENS} tokens, {args.threads} threads")
    for name, seconds in med.items():
        print(f"  {name:34s} {seconds:6.3f} s")
    for label, goal in (("greedy", 1.2), (f"beam {BEAM}", 1.5)):
        ratio = med[f"this engine, {label}"] / med[f"CTranslate2 float32, {label}"]
        print(figure(f"this engine / CTranslate2 float32, {label}", ratio, f"<= {goal}", ratio <= goal))
    for who in ("this engine", "CTranslate2 float32", "transformers"):
        print(f"  {who}: beam {BEAM} / greedy {med[f'{who}, beam {BEAM}'] / med[f'{who}, greedy']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
