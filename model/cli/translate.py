"""Translate sentences with a trained checkpoint.

    python -m model.translate --checkpoint runs/grammar/model.ckpt "I read a book yesterday."
    echo "他喜欢猫吗？" | python -m model.translate --checkpoint zh-en.ckpt --beam 4

One translation per input line on stdout; notes (unknown characters, a cut
sentence, an empty line) on stderr.
"""

from __future__ import annotations

import argparse
import sys

from model.cli.common import add_checkpoint_flag, add_device_flags, input_lines, open_checkpoint
from model.families.registry import ENCODER_DECODER


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="transformer-explorer-translate", description=__doc__.split("\n\n")[0])
    add_checkpoint_flag(ap)
    ap.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy)")
    ap.add_argument("--max-len", type=int, help="longest translation in tokens (default: from the source)")
    ap.add_argument("--alpha", type=float, default=0.6, help="length penalty α of beam search (default 0.6)")
    ap.add_argument(
        "--int8",
        action="store_true",
        help="the int8 fast mode: the decoder's linear layers with int8 weights (CPU); says how far it differs",
    )
    add_device_flags(ap)
    ap.add_argument("text", nargs="*", help="sentences to translate (default: read lines from stdin)")
    args = ap.parse_args(argv)
    if args.beam < 1:
        ap.error("--beam must be at least 1")
    session = open_checkpoint(args, ENCODER_DECODER)
    if session is None:
        return 2
    if args.max_len is not None and not 1 <= args.max_len <= session.model_cfg.max_len:
        ap.error(f"--max-len must be between 1 and {session.model_cfg.max_len} for this model")
    if args.int8:
        try:
            report = session.set_int8(True)
        except ValueError as exc:
            ap.error(str(exc))
        assert report is not None
        print(
            f"int8 fast mode: {report.same_tokens} of {report.sentences} check sentences decode as in float32; "
            f"a chosen token's log-probability moves by at most {report.max_logprob_change:.3f}",
            file=sys.stderr,
        )
    for n, line in input_lines(args.text):
        if not line.strip():
            print(f"line {n}: empty, nothing to translate", file=sys.stderr)
            print()
            continue
        result = session.translate(line, args.beam, args.max_len, args.alpha, with_reference=False)
        if result.source.unknown:
            unknown = ", ".join(repr(u) for u in dict.fromkeys(result.source.unknown_text))
            print(f"line {n}: not in the model's vocabulary, read as <unk>: {unknown}", file=sys.stderr)
        if result.truncated:
            print(
                f"line {n}: longer than the model accepts ({session.model_cfg.max_len - 1} tokens); cut",
                file=sys.stderr,
            )
        print(result.text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
