"""Fill in masked words with a trained encoder-only (BERT-style) checkpoint.

    python -m model.fill_mask --checkpoint runs/bert/model.ckpt "我昨天在<mask>看书。"
    echo "The <mask> sat on the mat." | python -m model.fill_mask --checkpoint en.ckpt --top-k 3

For each input line, one line per ``<mask>`` on stdout: its position and the most probable fillers with
their probabilities, tab-separated; notes on stderr.
"""

from __future__ import annotations

import argparse
import sys

from model.cli.common import add_checkpoint_flag, add_device_flags, input_lines, open_checkpoint
from model.families.registry import ENCODER_ONLY


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="transformer-explorer-fill-mask", description=__doc__.split("\n\n")[0])
    add_checkpoint_flag(ap)
    ap.add_argument("--top-k", type=int, default=5, help="fillers shown per mask (default 5)")
    add_device_flags(ap)
    ap.add_argument("text", nargs="*", help="sentences with <mask> (default: read lines from stdin)")
    args = ap.parse_args(argv)
    if args.top_k < 1:
        ap.error("--top-k must be at least 1")
    session = open_checkpoint(args, ENCODER_ONLY)
    if session is None:
        return 2
    status = 0
    for n, line in input_lines(args.text):
        try:
            view = session.fill_mask(line, top_k=args.top_k)
        except ValueError as exc:
            print(f"line {n}: {exc}", file=sys.stderr)
            status = 1
            continue
        for p in view.predictions:
            guesses = "\t".join(f"{t} {prob:.3f}" for t, prob in zip(p.tokens, p.probs))
            print(f"{n}:{p.position}\t{guesses}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
