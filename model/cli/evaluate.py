"""Measure a checkpoint (or a Hugging Face model folder) on a split of its data: loss and the family's scores.

python -m model.evaluate --checkpoint resources/models/grammar-en-zh-small.ckpt --split test
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from model.cli.common import add_checkpoint_flag, add_device_flags
from model.data import DataError
from model.io.checkpoint import CheckpointError
from model.session import Session


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="transformer-explorer-evaluate", description=__doc__.split("\n\n")[0])
    add_checkpoint_flag(ap)
    ap.add_argument("--split", choices=("train", "valid", "test"), default="test")
    ap.add_argument("--max-sentences", type=int, help="decode only the first N sentences (default: all)")
    add_device_flags(ap)
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.max_sentences is not None and args.max_sentences < 0:
        ap.error("--max-sentences cannot be negative")
    try:
        session = Session.load(args.checkpoint, device=args.device)
        result = session.evaluate(args.split, args.max_sentences)
    except (CheckpointError, DataError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{session.data_spec.name}, {args.split} split ({result['sentences']} sentences), step {session.step}: "
            f"{_scores(result)}, loss {result['loss']:.3f}"
        )
    return 0


def _scores(result: dict) -> str:
    """The family's scores in words: a translator's exact match and BLEU, a GPT's perplexity, a BERT's
    masked-token accuracy."""
    if "perplexity" in result:
        return f"perplexity {result['perplexity']:.1f}"
    if "mlm_accuracy" in result:
        return f"masked-token accuracy {100 * result['mlm_accuracy']:.1f}%"
    return f"exact match {100 * result['exact_match']:.1f}%, BLEU {result['bleu']:.1f}"


if __name__ == "__main__":
    sys.exit(main())
