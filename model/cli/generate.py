"""Continue prompts with a trained decoder-only (GPT-style) checkpoint.

    python -m model.generate --checkpoint runs/gpt/model.ckpt "我昨天"
    python -m model.generate --checkpoint runs/gpt/model.ckpt --temperature 0.8 --top-p 0.9 --seed 1 "我昨天"
    echo "The cat" | python -m model.generate --checkpoint en.ckpt --top-k 20 --temperature 1

One continuation per prompt on stdout (the prompt followed by what the model wrote); notes (unknown
characters, a cut prompt, an empty line) on stderr. Temperature 0 (the default) is greedy decoding.
"""

from __future__ import annotations

import argparse
import sys

from model.cli.common import add_checkpoint_flag, add_device_flags, input_lines, open_checkpoint
from model.decoding.search import generate
from model.families.registry import DECODER_ONLY
from model.session import GENERATE_TOKENS, Session


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="transformer-explorer-generate", description=__doc__.split("\n\n")[0])
    add_checkpoint_flag(ap)
    ap.add_argument("--max-new-tokens", type=int, default=GENERATE_TOKENS, help=f"default {GENERATE_TOKENS}")
    ap.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default); > 0 samples")
    ap.add_argument("--top-k", type=int, help="sample only among the k most probable tokens")
    ap.add_argument("--top-p", type=float, help="sample only among the most probable tokens whose mass reaches p")
    ap.add_argument("--seed", type=int, help="makes sampling repeat")
    add_device_flags(ap)
    ap.add_argument("prompt", nargs="*", help="prompts to continue (default: read lines from stdin)")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.temperature < 0:
        ap.error("--temperature must be ≥ 0")
    if args.top_k is not None and args.top_k < 1:
        ap.error("--top-k must be at least 1")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        ap.error("--top-p must be in (0, 1]")
    if args.max_new_tokens < 1:
        ap.error("--max-new-tokens must be at least 1")
    session = open_checkpoint(args, DECODER_ONLY)
    if session is None:
        return 2
    for n, line in input_lines(args.prompt):
        if not line.strip():
            print(f"line {n}: empty, nothing to continue", file=sys.stderr)
            print()
            continue
        print(_continue(session, line, n, args), flush=True)
    return 0


def _continue(session: Session, prompt: str, n: int, args: argparse.Namespace) -> str:
    encoded, ids, cut = session._source(prompt)
    if encoded.unknown:
        unknown = ", ".join(repr(u) for u in dict.fromkeys(encoded.unknown_text))
        print(f"line {n}: not in the model's vocabulary, read as <unk>: {unknown}", file=sys.stderr)
    if cut:
        print(f"line {n}: longer than the model accepts ({len(ids)} tokens); cut", file=sys.stderr)
    new = generate(
        session.model,
        ids,
        args.max_new_tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        seed=args.seed,
    )
    return session.tgt_tok.decode(ids + new)


if __name__ == "__main__":
    sys.exit(main())
